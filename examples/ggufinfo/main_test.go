package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

func runInfo(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestQ4KMCounts(t *testing.T) {
	path := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	code, out, errOut := runInfo(t, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`TENSOR TYPES \(74 tensors\)`,
		`\nq4_K +48 tensors`,
		`\nq6_K +9 tensors`,
		`\nf32 +17 tensors`,
		`\narch +smollm3\n`,
		`\nlayers +8\n`,
		`\nheads / kv heads +4 / 2 \(head dim 64\)`,
		`\ncontext +4096\n`,
		`\nNoPE layers +3 7\n`,
		`\ntied embeddings +yes`,
		`\ntokenizer.ggml.tokens +\[\]string +\["!" .* \.\.\. \(337 elements\)`,
		`\ntoken_embd.weight +q6_K +\[256 337\] +70770 +1024\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output does not match %s", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

// reportJSON runs ggufinfo -json on path and decodes its report.
func reportJSON(t *testing.T, path string) report {
	t.Helper()
	code, out, errOut := runInfo(t, "-json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestJSON(t *testing.T) {
	r := reportJSON(t, sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"))
	got := map[string]int{}
	for _, c := range r.Types {
		got[c.Type] = c.Count
	}
	if r.NTensors != 74 || len(r.Tensors) != 74 || got["q4_K"] != 48 || got["q6_K"] != 9 || got["f32"] != 17 || len(got) != 3 {
		t.Errorf("%d tensors (%d listed), types %v", r.NTensors, len(r.Tensors), got)
	}
	if r.Arch == nil || r.Arch.Layers != 8 || r.Arch.TiedEmbeddings == nil || !*r.Arch.TiedEmbeddings || len(r.Arch.NoPELayers) != 2 {
		t.Errorf("architecture %+v", r.Arch)
	}
}

func TestUntiedLlama(t *testing.T) {
	code, out, errOut := runInfo(t, "-tensors=false", sharedtest.Path(t, "golden/models/llama-tiny-F32.gguf"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`\nNoPE layers +none\n`, `\ntied embeddings +no \(output.weight\)\n`, `TENSOR TYPES \(30 tensors\)`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output does not match %s", want)
		}
	}
	if strings.Contains(out, "\nTENSORS\n") {
		t.Error("-tensors=false still lists tensors")
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.gguf")
	if err := os.WriteFile(junk, []byte("this is not a model, just text"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{junk}, 1, "not a GGUF file"},
		{[]string{filepath.Join(dir, "missing.gguf")}, 1, "no such file"},
		{nil, 2, "usage"},
		{[]string{"-nope", junk}, 2, "flag provided but not defined"},
	} {
		code, out, errOut := runInfo(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", tc.args, code, errOut, out, tc.code, tc.want)
		}
	}
}

func TestLongStringCutOnRune(t *testing.T) {
	long := strings.Repeat("─", 100)
	got := formatValue(metaEntry{Key: "k", Type: "string", Value: long})
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "... (300 bytes)") {
		t.Errorf("formatValue = %q", got)
	}
}

// TestDemoModel runs on the repository's own demo model, without ../shared.
func TestDemoModel(t *testing.T) {
	code, out, errOut := runInfo(t, "-tensors=false", "../../testdata/smollm3-tinyq-Q4_K_M.gguf")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`TENSOR TYPES \(74 tensors\)`, `\nq4_K +48 tensors`, `\nq6_K +9 tensors`, `\nf32 +17 tensors`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output does not match %s", want)
		}
	}
}

// writeGGUF writes a GGUF file into the test's folder and returns its path.
func writeGGUF(t *testing.T, kv []gguf.KV, tensors []gguf.WriterTensor) string {
	t.Helper()
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, tensors); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Control characters in keys, values and tensor names are printed escaped:
// a file must not be able to drive the terminal that inspects it.
func TestEscapesControlCharacters(t *testing.T) {
	path := writeGGUF(t, []gguf.KV{
		{Key: "general.architecture", Value: "ll\x1b[2Jama"},
		{Key: "evil\x1b[31m.key", Value: "bell\a and tab\tand \u202eoverride"},
		{Key: "names", Value: []string{"a\x1b]0;title\a", "b", "c", "d", "e", "f", "g"}},
		{Key: "nested", Value: []any{[]string{"x\x1by"}}},
	}, []gguf.WriterTensor{{Name: "t\x1b[0m\r", Dims: []uint64{1}, Type: gguf.TypeF32, Data: make([]byte, 4)}})
	code, out, errOut := runInfo(t, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for i, r := range out {
		if r != '\n' && !strconv.IsPrint(r) {
			t.Fatalf("output holds %U at byte %d: %q", r, i, out[max(0, i-20):min(len(out), i+20)])
		}
	}
	for _, want := range []string{`"evil\x1b[31m.key"`, `\a and tab\tand \u202eoverride`, `"a\x1b]0;title\a"`, `"t\x1b[0m\r"`, `"ll\x1b[2Jama"`, `x\x1by`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

// -json describes a file whose floats are NaN or infinite, writing them as
// strings; before, encoding failed and the report was cut off.
func TestJSONNonFinite(t *testing.T) {
	path := writeGGUF(t, []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "llama.rope.freq_base", Value: float32(math.NaN())},
		{Key: "f64", Value: math.Inf(-1)},
		{Key: "f32s", Value: []float32{1.5, float32(math.Inf(1)), 0.6}},
		{Key: "nested", Value: []any{[]float64{math.NaN()}}},
	}, nil)
	code, out, errOut := runInfo(t, "-json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Arch     map[string]any `json:"architecture"`
		Metadata []metaEntry    `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]any{}
	for _, m := range r.Metadata {
		got[m.Key] = m.Value
	}
	for key, want := range map[string]string{
		"llama.rope.freq_base": "NaN",
		"f64":                  "-Inf",
		"f32s":                 "[1.5 +Inf 0.6]",
		"nested":               "[[NaN]]",
	} {
		if s := fmt.Sprint(got[key]); s != want {
			t.Errorf("%s = %s, want %s", key, s, want)
		}
	}
	if r.Arch["rope_freq_base"] != "NaN" {
		t.Errorf("architecture.rope_freq_base = %v, want \"NaN\"", r.Arch["rope_freq_base"])
	}
}

// A block count far beyond what the file's tensors can hold is reported as
// such, without allocating for it (block_count = 1e9 used to exhaust memory
// listing SmolLM3's NoPE layers).
func TestHugeBlockCount(t *testing.T) {
	path := writeGGUF(t, []gguf.KV{
		{Key: "general.architecture", Value: "smollm3"},
		{Key: "smollm3.block_count", Value: uint32(1e9)},
	}, []gguf.WriterTensor{{Name: "t", Dims: []uint64{1}, Type: gguf.TypeF32, Data: make([]byte, 4)}})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code, out, errOut := runInfo(t, "-json", path)
	runtime.ReadMemStats(&after)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("describing the file allocated %d bytes", n)
	}
	if !strings.Contains(out, "smollm3.block_count 1000000000 is more than the file's 1 tensors can hold") || !strings.Contains(out, `"nope_layers": null`) {
		t.Errorf("no warning about the block count:\n%s", out)
	}
}

func TestHelpExitsZero(t *testing.T) {
	code, out, errOut := runInfo(t, "-h")
	if code != 0 || out != "" || !strings.Contains(errOut, "usage: ggufinfo") || strings.Contains(errOut, "level=") {
		t.Errorf("-h: exit %d, stdout %q, stderr %q; want exit 0 and only the usage", code, out, errOut)
	}
}

// The LOADS section says whether smolgo runs a file and why not.
func TestLoadCheck(t *testing.T) {
	src, err := gguf.Open("../../testdata/smollm3-tinyq-Q4_K_M.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// rewrite writes the demo model with one key's value or one tensor
	// changed (a tensor of the new name "" is dropped).
	rewrite := func(key string, val any, drop string) string {
		var kv []gguf.KV
		for _, e := range src.KV {
			if e.Key == key {
				e.Value = val
			}
			kv = append(kv, e)
		}
		var ts []gguf.WriterTensor
		for i := range src.Tensors {
			ti := &src.Tensors[i]
			if ti.Name != drop {
				ts = append(ts, gguf.WriterTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: src.TensorData(ti)})
			}
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if err := gguf.Write(out, kv, ts); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, c := range []struct {
		name, path string
		loads      bool
		has        string
	}{
		{"demo", "../../testdata/smollm3-tinyq-Q4_K_M.gguf", true, "nope"},
		{"unknown architecture", rewrite("general.architecture", "mamba", ""), false, `unsupported architecture "mamba"`},
		{"missing tensor", rewrite("", nil, "blk.1.ffn_up.weight"), false, "blk.1.ffn_up.weight is missing"},
		{"unknown tokenizer", rewrite("tokenizer.ggml.model", "unigram-ish", ""), true, "unigram-ish"},
	} {
		f, err := gguf.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		l := checkLoad(f)
		f.Close()
		text := fmt.Sprintf("%+v", *l)
		if l.Loads != c.loads || !strings.Contains(text, c.has) {
			t.Errorf("%s: %s; want loads=%v and a mention of %q", c.name, text, c.loads, c.has)
		}
	}
}

// TestHybridMemory: a hybrid's per-layer head_count_kv gives the attention
// layers' count, and its memory row counts the keys and values of that
// layer alone and the short convolution's state.
func TestHybridMemory(t *testing.T) {
	r := reportJSON(t, sharedtest.Path(t, "golden-next/models/lfm2-tiny-F32.gguf"))
	if r.Arch == nil || r.Arch.KVHeads != 2 {
		t.Fatalf("architecture %+v: want 2 KV heads (the attention layer's)", r.Arch)
	}
	rows := r.Load.Memory
	if len(rows) != 1 || rows[0].Context != 4096 {
		t.Fatalf("memory rows %+v: want one, at the file's context of 4,096", rows)
	}
	a := rows[0]
	// lfm2-tiny: one attention layer of 2 KV heads of 32, one short
	// convolution of kernel 3 over 256 channels.
	if a.KVF16 != int64(2*a.Context*2*32*2) || a.State != 2*256*4 || a.Checkpoints != 8*a.State {
		t.Errorf("at %d: %+v", a.Context, a)
	}
	if a.KVQ8 != int64(2*a.Context*2*34) {
		t.Errorf("q8_0 keys and values at %d: %d bytes", a.Context, a.KVQ8)
	}
}
