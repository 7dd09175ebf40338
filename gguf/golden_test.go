package gguf_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// manifestModel is the part of golden/manifest.json these tests check.
type manifestModel struct {
	Model       string         `json:"model"`
	StoredAs    string         `json:"stored_as"`
	Bytes       int64          `json:"gguf_bytes"`
	Arch        string         `json:"arch"`
	Hparams     map[string]any `json:"hparams"`
	FileType    int            `json:"file_type"`
	NTensors    int            `json:"n_tensors"`
	TensorTypes map[string]int `json:"tensor_types"`
	NVocab      int            `json:"n_vocab"`
	Tied        bool           `json:"tied_embeddings"`
}

func loadManifest(t *testing.T) []manifestModel {
	t.Helper()
	b, err := os.ReadFile(sharedtest.Path(t, "golden/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Models []manifestModel `json:"models"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Models) == 0 {
		t.Fatal("manifest lists no models")
	}
	return m.Models
}

// modelPath returns a golden model's path, unpacking it if it is stored gzipped.
func modelPath(t *testing.T, m manifestModel) string {
	t.Helper()
	rel := "golden/" + m.StoredAs
	if strings.HasSuffix(rel, ".gz") {
		return sharedtest.Gunzip(t, rel)
	}
	return sharedtest.Path(t, rel)
}

func TestGoldenModelsMatchManifest(t *testing.T) {
	for _, m := range loadManifest(t) {
		t.Run(m.Model, func(t *testing.T) {
			path := modelPath(t, m)
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			checkAgainstManifest(t, f, m)
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() != m.Bytes {
				t.Errorf("size %d, manifest %d", st.Size(), m.Bytes)
			}
		})
	}
}

func checkAgainstManifest(t *testing.T, f *gguf.File, m manifestModel) {
	t.Helper()
	arch, err := f.Architecture()
	if err != nil || arch != m.Arch {
		t.Fatalf("architecture %q, %v; manifest %q", arch, err, m.Arch)
	}
	if len(f.Tensors) != m.NTensors {
		t.Errorf("%d tensors, manifest %d", len(f.Tensors), m.NTensors)
	}
	counts := map[string]int{}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		counts[ti.Type.String()]++
		if got := uint64(len(f.TensorData(ti))); got != ti.Size() {
			t.Errorf("%s: TensorData has %d bytes, Size %d", ti.Name, got, ti.Size())
		}
	}
	if len(counts) != len(m.TensorTypes) {
		t.Errorf("tensor types %v, manifest %v", counts, m.TensorTypes)
	}
	for typ, n := range m.TensorTypes {
		if counts[typ] != n {
			t.Errorf("%d tensors of type %s, manifest %d", counts[typ], typ, n)
		}
	}
	for k, want := range m.Hparams {
		key := arch + "." + k
		switch want := want.(type) {
		case string:
			if got, err := f.String(key); err != nil || got != want {
				t.Errorf("%s = %q, %v; manifest %q", key, got, err, want)
			}
		case float64:
			if v, _ := f.Get(key); isFloat(v) {
				got, err := f.Float32(key)
				if err != nil || got != float32(want) {
					t.Errorf("%s = %v, %v; manifest %v", key, got, err, want)
				}
				continue
			}
			got, err := f.Int64(key)
			if err != nil || got != int64(want) {
				t.Errorf("%s = %v, %v; manifest %v", key, got, err, want)
			}
		}
	}
	if ft, err := f.Uint32("general.file_type"); err == nil && int(ft) != m.FileType {
		t.Errorf("general.file_type %d, manifest %d", ft, m.FileType)
	}
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != m.NVocab {
		t.Errorf("tokenizer.ggml.tokens: %d tokens, %v; manifest %d", len(toks), err, m.NVocab)
	}
	_, hasOutput := f.Tensor("output.weight")
	if hasOutput == m.Tied {
		t.Errorf("output.weight present = %v, manifest tied = %v", hasOutput, m.Tied)
	}
}

func TestOpenQ4KM(t *testing.T) {
	f, err := gguf.Open(sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
		t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("no token_embd.weight")
	}
	if emb.Type != gguf.TypeQ6_K || len(emb.Dims) != 2 || emb.Dims[0] != 256 || emb.Dims[1] != 337 {
		t.Errorf("token_embd.weight: %s %v", emb.Type, emb.Dims)
	}
	if got, want := emb.Size(), uint64(337*210); got != want {
		t.Errorf("token_embd.weight size %d, want %d", got, want)
	}
	n, err := f.Uint32("smollm3.block_count")
	if err != nil || n != 8 {
		t.Errorf("block_count %d, %v", n, err)
	}
	if _, err := f.Uint32("smollm3.no_such_key"); err == nil || !strings.Contains(err.Error(), "smollm3.no_such_key") {
		t.Errorf("missing key error %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if f.TensorData(emb) != nil {
		t.Error("TensorData after Close is not nil")
	}
}

func TestOpenRealVocab(t *testing.T) {
	for _, rel := range []string{"golden/realvocab/smollm3-realvocab-F16.gguf", "tokenizer/smollm3-vocab.gguf"} {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			f, err := gguf.Open(sharedtest.Path(t, rel))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			toks, err := f.Strings("tokenizer.ggml.tokens")
			if err != nil || len(toks) != 128256 {
				t.Fatalf("tokens: %d, %v", len(toks), err)
			}
			merges, err := f.Strings("tokenizer.ggml.merges")
			if err != nil || len(merges) == 0 {
				t.Fatalf("merges: %d, %v", len(merges), err)
			}
			if _, err := f.Int32s("tokenizer.ggml.token_type"); err != nil {
				t.Error(err)
			}
		})
	}
}

func isFloat(v any) bool {
	switch v.(type) {
	case float32, float64:
		return true
	}
	return false
}

// TestTruncatedGolden cuts a real file at many lengths: every cut must give a
// *FormatError, never a panic or a File.
func TestTruncatedGolden(t *testing.T) {
	data, err := os.ReadFile(sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	cuts := []int{0, 3, 4, 7, 8, 23, 24, 25, 100, 1000, int(full.DataOffset) - 1, int(full.DataOffset), len(data) - 1}
	for n := 26; n < int(full.DataOffset); n += 997 {
		cuts = append(cuts, n)
	}
	for _, n := range cuts {
		_, err := gguf.Parse(data[:n])
		var fe *gguf.FormatError
		if !errors.As(err, &fe) {
			t.Errorf("cut at %d: error %v, want a *FormatError", n, err)
		}
	}
}

// TestGoldenRoundTrip reads every golden model, writes it back with Write
// and checks that the result reads back identically and is byte for byte the
// file llama.cpp wrote.
func TestGoldenRoundTrip(t *testing.T) {
	paths := map[string]string{}
	for _, m := range loadManifest(t) {
		paths[m.Model] = "golden/" + m.StoredAs
	}
	paths["smollm3-realvocab-F16.gguf"] = "golden/realvocab/smollm3-realvocab-F16.gguf"
	paths["smollm3-vocab.gguf"] = "tokenizer/smollm3-vocab.gguf"
	for name, rel := range paths {
		t.Run(name, func(t *testing.T) {
			var orig []byte
			if strings.HasSuffix(rel, ".gz") {
				orig = sharedtest.ReadGzip(t, rel)
			} else {
				var err error
				if orig, err = os.ReadFile(sharedtest.Path(t, rel)); err != nil {
					t.Fatal(err)
				}
			}
			f, err := gguf.Parse(orig)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := gguf.Write(&buf, f.KV, writerTensors(f)); err != nil {
				t.Fatal(err)
			}
			g, err := gguf.Parse(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			assertSameFile(t, f, g)
			if !bytes.Equal(buf.Bytes(), orig) {
				t.Errorf("written file (%d bytes) differs from the original (%d bytes)", buf.Len(), len(orig))
			}
		})
	}
}

// writerTensors turns a file's tensors into WriterTensors that stream their data.
func writerTensors(f *gguf.File) []gguf.WriterTensor {
	out := make([]gguf.WriterTensor, len(f.Tensors))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		out[i] = gguf.WriterTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type}
		if i%2 == 0 {
			out[i].Data = f.TensorData(ti)
		} else {
			out[i].Write = func(w io.Writer) error { _, err := w.Write(f.TensorData(ti)); return err }
		}
	}
	return out
}

func assertSameFile(t *testing.T, f, g *gguf.File) {
	t.Helper()
	if !reflect.DeepEqual(f.KV, g.KV) {
		t.Error("metadata differs after the round trip")
	}
	if len(f.Tensors) != len(g.Tensors) {
		t.Fatalf("%d tensors, then %d", len(f.Tensors), len(g.Tensors))
	}
	for i := range f.Tensors {
		a, b := &f.Tensors[i], &g.Tensors[i]
		if a.Name != b.Name || a.Type != b.Type || !slices.Equal(a.Dims, b.Dims) {
			t.Errorf("tensor %d: %s %s %v, then %s %s %v", i, a.Name, a.Type, a.Dims, b.Name, b.Type, b.Dims)
		}
		if !bytes.Equal(f.TensorData(a), g.TensorData(b)) {
			t.Errorf("tensor %s: data differs", a.Name)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	path := sharedtest.Path(b, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	for b.Loop() {
		f, err := gguf.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func BenchmarkOpenRealVocab(b *testing.B) {
	path := sharedtest.Path(b, "tokenizer/smollm3-vocab.gguf")
	for b.Loop() {
		f, err := gguf.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// TestDemoModel opens the repository's own demo model (no ../shared needed),
// checks its tensor types and writes it back byte for byte.
func TestDemoModel(t *testing.T) {
	const path = "../testdata/smollm3-tinyq-Q4_K_M.gguf"
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[gguf.Type]int{}
	for _, ti := range f.Tensors {
		counts[ti.Type]++
	}
	if len(f.Tensors) != 74 || counts[gguf.TypeQ4_K] != 48 || counts[gguf.TypeQ6_K] != 9 || counts[gguf.TypeF32] != 17 {
		t.Errorf("%d tensors: %v", len(f.Tensors), counts)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, f.KV, writerTensors(f)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), orig) {
		t.Error("written back, the demo model differs from the original")
	}
}
