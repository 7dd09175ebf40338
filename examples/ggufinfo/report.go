package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/smolgo/smolgo/gguf"
)

// arrayPreview is how many elements of a long array the report shows.
const arrayPreview = 6

// report is everything ggufinfo prints, in a form that also encodes as JSON.
type report struct {
	File       string       `json:"file"`
	FileBytes  int64        `json:"file_bytes"`
	Version    uint32       `json:"version"`
	Alignment  uint64       `json:"alignment"`
	DataOffset uint64       `json:"data_offset"`
	Arch       *archSummary `json:"architecture,omitempty"`
	Load       *loadCheck   `json:"load"`
	Metadata   []metaEntry  `json:"metadata"`
	Types      []typeCount  `json:"tensor_types"`
	NTensors   int          `json:"n_tensors"`
	Tensors    []tensorRow  `json:"tensors,omitempty"`
}

type metaEntry struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Len   int    `json:"len,omitempty"` // elements, for arrays
	Value any    `json:"value"`         // the value; the first elements of a long array
}

type tensorRow struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Shape  []uint64 `json:"shape"`
	Bytes  uint64   `json:"bytes"`
	Offset uint64   `json:"offset"`
}

type typeCount struct {
	Type   string `json:"type"`
	Count  int    `json:"count"`
	Bytes  uint64 `json:"bytes"`
	Params uint64 `json:"elements"`
}

// archSummary is the model shape read from the <arch>.* keys; fields whose
// key is missing stay zero.
type archSummary struct {
	Name           string      `json:"name"`
	Layers         int64       `json:"layers"`
	Embedding      int64       `json:"embedding_length"`
	FFN            int64       `json:"feed_forward_length"`
	Heads          int64       `json:"heads"`
	KVHeads        int64       `json:"kv_heads"`
	HeadDim        int64       `json:"head_dim"`
	Context        int64       `json:"context_length"`
	Vocab          int64       `json:"vocab_size"`
	RopeBase       float32JSON `json:"rope_freq_base,omitempty"`
	RopeScaling    string      `json:"rope_scaling,omitempty"`
	NoPELayers     []int       `json:"nope_layers"`               // null: unknown (see Warnings)
	TiedEmbeddings *bool       `json:"tied_embeddings,omitempty"` // nil: no token_embd.weight
	Params         uint64      `json:"parameters"`
	// Warnings says which of the values above the file cannot back, such as
	// a block count its tensors cannot hold.
	Warnings []string `json:"warnings,omitempty"`
}

func newReport(path string, f *gguf.File) *report {
	r := &report{File: path, Version: f.Version, Alignment: f.Alignment, DataOffset: f.DataOffset, NTensors: len(f.Tensors)}
	if st, err := os.Stat(path); err == nil {
		r.FileBytes = st.Size()
	}
	for _, kv := range f.KV {
		r.Metadata = append(r.Metadata, summarize(kv))
	}
	byType := map[gguf.Type]*typeCount{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		r.Tensors = append(r.Tensors, tensorRow{t.Name, t.Type.String(), t.Dims, t.Size(), t.Offset})
		c := byType[t.Type]
		if c == nil {
			c = &typeCount{Type: t.Type.String()}
			byType[t.Type] = c
		}
		c.Count++
		c.Bytes += t.Size()
		c.Params += t.NumElements()
	}
	for _, c := range byType {
		r.Types = append(r.Types, *c)
	}
	slices.SortFunc(r.Types, func(a, b typeCount) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Type, b.Type))
	})
	r.Arch = summarizeArch(f)
	r.Load = checkLoad(f)
	return r
}

// summarize describes a metadata entry, cutting long arrays to a preview.
func summarize(kv gguf.KV) metaEntry {
	typ, elem, err := gguf.ValueTypeOf(kv.Value)
	e := metaEntry{Key: kv.Key, Type: typ.String(), Value: kv.Value}
	if err != nil {
		e.Type = fmt.Sprintf("%T", kv.Value)
		return e
	}
	if typ == gguf.ValueArray {
		e.Type = "[]" + elem.String()
		e.Len = lenOf(kv.Value)
		if e.Len > arrayPreview {
			e.Value = head(kv.Value, arrayPreview)
		}
	}
	e.Value = jsonFloats(e.Value)
	return e
}

func lenOf(v any) int {
	switch x := v.(type) {
	case []uint8:
		return len(x)
	case []int8:
		return len(x)
	case []uint16:
		return len(x)
	case []int16:
		return len(x)
	case []uint32:
		return len(x)
	case []int32:
		return len(x)
	case []float32:
		return len(x)
	case []bool:
		return len(x)
	case []string:
		return len(x)
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	case []any:
		return len(x)
	}
	return 0
}

// head returns the first n elements of an array value.
func head(v any, n int) any {
	switch x := v.(type) {
	case []uint8:
		return slices.Clone(x[:n]) // a []uint8 would encode as base64 in JSON
	case []int8:
		return x[:n]
	case []uint16:
		return x[:n]
	case []int16:
		return x[:n]
	case []uint32:
		return x[:n]
	case []int32:
		return x[:n]
	case []float32:
		return x[:n]
	case []bool:
		return x[:n]
	case []string:
		return x[:n]
	case []uint64:
		return x[:n]
	case []int64:
		return x[:n]
	case []float64:
		return x[:n]
	case []any:
		return x[:n]
	}
	return v
}

func summarizeArch(f *gguf.File) *archSummary {
	arch, err := f.Architecture()
	if err != nil {
		return nil
	}
	a := &archSummary{Name: arch, NoPELayers: []int{}}
	geti := func(key string) int64 {
		n, _ := f.Int64(arch + "." + key)
		return n
	}
	a.Layers = geti("block_count")
	a.Embedding = geti("embedding_length")
	a.FFN = geti("feed_forward_length")
	a.Heads = geti("attention.head_count")
	a.KVHeads = geti("attention.head_count_kv")
	if a.KVHeads == 0 {
		// Hybrids (LFM2, Granite 4.0-H, Qwen3.5) write one count per
		// layer, 0 for the recurrent ones: the attention layers' count.
		if per, err := f.Int32s(arch + ".attention.head_count_kv"); err == nil {
			for _, n := range per {
				a.KVHeads = max(a.KVHeads, int64(n))
			}
		}
	}
	if a.KVHeads == 0 {
		a.KVHeads = a.Heads
	}
	a.HeadDim = geti("attention.key_length")
	if a.HeadDim == 0 && a.Heads > 0 {
		a.HeadDim = a.Embedding / a.Heads
	}
	a.Context = geti("context_length")
	a.Vocab = geti("vocab_size")
	if a.Vocab == 0 {
		if toks, err := f.Strings("tokenizer.ggml.tokens"); err == nil {
			a.Vocab = int64(len(toks))
		}
	}
	base, _ := f.Float32(arch + ".rope.freq_base")
	a.RopeBase = float32JSON(base)
	a.RopeScaling, _ = f.String(arch + ".rope.scaling.type")
	// Every block has tensors, so a file cannot hold more blocks than
	// tensors: a larger count is a broken or hostile header, and listing
	// its NoPE layers would take memory in proportion to the lie.
	plausible := a.Layers <= int64(len(f.Tensors))
	if !plausible {
		a.Warnings = append(a.Warnings, fmt.Sprintf("%s.block_count %d is more than the file's %d tensors can hold", arch, a.Layers, len(f.Tensors)))
		a.NoPELayers = nil // unknown
	}
	if arch == "smollm3" && plausible {
		// llama.cpp hard-codes SmolLM3's NoPE pattern: every fourth layer
		// skips RoPE.
		for i := range int(a.Layers) {
			if (i+1)%4 == 0 {
				a.NoPELayers = append(a.NoPELayers, i)
			}
		}
	}
	if _, ok := f.Tensor("token_embd.weight"); ok {
		_, hasOutput := f.Tensor("output.weight")
		tied := !hasOutput
		a.TiedEmbeddings = &tied
	}
	for i := range f.Tensors {
		a.Params += f.Tensors[i].NumElements()
	}
	return a
}

func (r *report) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("file\t%s\n", printable(r.File))
	p("size\t%s (%d bytes)\n", human(uint64(r.FileBytes)), r.FileBytes)
	p("GGUF\tversion %d, alignment %d, data at byte %d\n", r.Version, r.Alignment, r.DataOffset)
	if a := r.Arch; a != nil {
		p("\nARCHITECTURE\n")
		p("arch\t%s\n", printable(a.Name))
		p("layers\t%d\n", a.Layers)
		p("hidden / ffn\t%d / %d\n", a.Embedding, a.FFN)
		p("heads / kv heads\t%d / %d (head dim %d)\n", a.Heads, a.KVHeads, a.HeadDim)
		p("context\t%d\n", a.Context)
		p("vocab\t%d\n", a.Vocab)
		if a.RopeBase != 0 {
			p("rope base\t%g\n", a.RopeBase)
		}
		if a.RopeScaling != "" {
			p("rope scaling\t%s\n", printable(a.RopeScaling))
		}
		nope := "none"
		if a.NoPELayers == nil {
			nope = "unknown"
		} else if len(a.NoPELayers) > 0 {
			nope = strings.Trim(fmt.Sprint(a.NoPELayers), "[]")
		}
		p("NoPE layers\t%s\n", nope)
		p("tied embeddings\t%s\n", yesNo(a.TiedEmbeddings))
		p("parameters\t%s\n", count(a.Params))
		for _, w := range a.Warnings {
			p("warning\t%s\n", printable(w))
		}
	}
	if l := r.Load; l != nil {
		p("\nLOADS\n")
		if l.Loads {
			p("loads	yes, family %s\n", printable(l.Family))
			feats := "none (the plain llama block)"
			if len(l.Features) > 0 {
				feats = strings.Join(l.Features, ", ")
			}
			p("block features\t%s\n", feats)
		} else {
			p("loads\tno: %s\n", printable(l.Error))
			if len(l.Families) > 0 {
				p("supported\t%s\n", strings.Join(l.Families, ", "))
			}
		}
		if l.Loads && l.Chat {
			p("chat\tyes (the tokenizer reads)\n")
			for _, w := range l.Warnings {
				p("tokenizer warning\t%s\n", printable(w))
			}
		} else if l.Loads {
			p("chat\tno: %s\n", printable(l.ChatError))
		}
		if l.CUDAError != "" {
			p("cuda\tno: %s\n", printable(l.CUDAError))
		}
		if len(l.Memory) > 0 {
			p("\nMEMORY PER SEQUENCE (cache, besides the weights)\n")
			p("context\tkv f16\tkv q8_0\trecurrent state\tits checkpoints (at most)\n")
			for _, m := range l.Memory {
				p("%d\t%s\t%s\t%s\t%s\n", m.Context, human(uint64(m.KVF16)), human(uint64(m.KVQ8)), human(uint64(m.State)), human(uint64(m.Checkpoints)))
			}
		}
	}
	p("\nMETADATA (%d keys)\n", len(r.Metadata))
	for _, m := range r.Metadata {
		p("%s\t%s\t%s\n", printable(m.Key), m.Type, formatValue(m))
	}
	p("\nTENSOR TYPES (%d tensors)\n", r.NTensors)
	for _, c := range r.Types {
		p("%s\t%d tensors\t%s\t%s elements\n", c.Type, c.Count, human(c.Bytes), count(c.Params))
	}
	if len(r.Tensors) > 0 {
		p("\nTENSORS\n")
		p("name\ttype\tshape\tbytes\toffset\n")
		for _, t := range r.Tensors {
			p("%s\t%s\t%v\t%d\t%d\n", printable(t.Name), t.Type, t.Shape, t.Bytes, t.Offset)
		}
	}
	return tw.Flush()
}

func formatValue(m metaEntry) string {
	s := fmt.Sprint(m.Value)
	if str, ok := m.Value.(string); ok {
		s = fmt.Sprintf("%q", str)
		if r := []rune(s); len(r) > 80 {
			s = fmt.Sprintf("%s... (%d bytes)", string(r[:72]), len(str))
		}
	}
	if m.Len > arrayPreview {
		s = fmt.Sprintf("%s ... (%d elements)", strings.TrimSuffix(fmt.Sprintf("%q", m.Value), "]"), m.Len)
		if _, ok := m.Value.([]string); !ok {
			s = fmt.Sprintf("%s ... (%d elements)", strings.TrimSuffix(fmt.Sprint(m.Value), "]"), m.Len)
		}
	}
	return printable(s)
}

// printable returns s as it is when every rune of it prints, and quoted Go
// style otherwise, so that a key, value or tensor name holding control
// characters (a terminal escape, a tab that would break the columns, a
// bidirectional override) is shown escaped rather than acted on.
func printable(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// float32JSON and float64JSON are floats that encode as JSON numbers when
// finite and as the strings "NaN", "+Inf" and "-Inf" otherwise: JSON has no
// such numbers, and a corrupt file must still be described.
type (
	float32JSON float32
	float64JSON float64
)

func (x float32JSON) MarshalJSON() ([]byte, error) { return floatJSON(float64(x), float32(x)) }
func (x float64JSON) MarshalJSON() ([]byte, error) { return floatJSON(float64(x), float64(x)) }

// floatJSON encodes v (x widened) the way encoding/json does, or x's name
// when it is not finite.
func floatJSON(x float64, v any) ([]byte, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return json.Marshal(fmt.Sprint(x))
	}
	return json.Marshal(v)
}

// jsonFloats returns v with its floats (alone, in arrays, in nested arrays)
// made float32JSON or float64JSON, so that the report encodes whatever
// numbers the file holds. Other values are returned as they are.
func jsonFloats(v any) any {
	switch x := v.(type) {
	case float32:
		return float32JSON(x)
	case float64:
		return float64JSON(x)
	case []float32:
		out := make([]float32JSON, len(x))
		for i, y := range x {
			out[i] = float32JSON(y)
		}
		return out
	case []float64:
		out := make([]float64JSON, len(x))
		for i, y := range x {
			out[i] = float64JSON(y)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = jsonFloats(y)
		}
		return out
	}
	return v
}

func yesNo(b *bool) string {
	if b == nil {
		return "unknown (no token_embd.weight)"
	}
	if *b {
		return "yes (no output.weight: the output projection is token_embd.weight)"
	}
	return "no (output.weight)"
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func count(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
