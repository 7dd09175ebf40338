package models_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/smollm3"
)

func lastLogits(t *testing.T, m *family.Parts, tokens []int32) []float32 {
	t.Helper()
	c, err := m.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(context.Background(), c, tokens, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), out...)
}

// llamaLogits is lastLogits for a bare llama.Model.
func llamaLogits(t *testing.T, m *llama.CPU, tokens []int32) []float32 {
	t.Helper()
	c, err := m.NewCache(llama.CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(context.Background(), c, tokens, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), out...)
}

func maxAbsDiff(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

var testPrompt = []int32{331, 296, 308, 311, 313, 318, 320, 262}

func TestSmolLM3Wiring(t *testing.T) {
	path := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	_, m := goldentest.Open(t, path, engine.WithThreads(1))
	llm := m.CPU()
	for i := range llm.Config.Layers {
		if want := (i+1)%4 != 0; llm.RotatesLayer(i) != want {
			t.Errorf("layer %d: RoPE %v, want %v", i, llm.RotatesLayer(i), want)
		}
	}
	if w := m.Weights(); !llm.TiedEmbeddings() || w.Output.Name != "token_embd.weight" {
		t.Errorf("tied embeddings: %v, output %s", llm.TiedEmbeddings(), w.Output.Name)
	}
	// The tied output is the file's own bytes, not a copy.
	ti, _ := m.File().Tensor("token_embd.weight")
	if data := m.File().TensorData(ti); &data[0] != &m.Weights().Output.Data[0] {
		t.Error("output projection is a copy of token_embd.weight")
	}

	// Another NoPE rule over the same file changes the logits (layers 3
	// and 7 rotate).
	base := lastLogits(t, m, testPrompt)
	all, err := llama.New(m.File(), llama.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if d := maxAbsDiff(base, llamaLogits(t, all, testPrompt)); d < 0.01 {
		t.Errorf("RoPE in every layer changed the logits by only %g", d)
	}
	// And SmolLM3's description, loaded again over the same file, gives
	// identical logits: two models over one file are independent.
	cfg, err := llama.ConfigFromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	arch, err := smollm3.Describe(m.File(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.LoadWeights(m.File(), cfg, arch)
	if err != nil {
		t.Fatal(err)
	}
	same, err := llama.NewCPU(w, llama.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer same.Close()
	if d := maxAbsDiff(base, llamaLogits(t, same, testPrompt)); d != 0 {
		t.Errorf("SmolLM3's description loaded again differs from the model's by %g", d)
	}
}

// The engine's options reach the caches: the context bounds them, the KV
// type is theirs.
func TestLoadOptions(t *testing.T) {
	path := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q8_0.gguf")
	_, m := goldentest.Open(t, path, engine.WithThreads(1), engine.WithContext(10), engine.WithKVType("f32"))
	c, err := m.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxLen() != 10 || c.Type() != llama.KVF32 {
		t.Errorf("cache: max %d type %v, want 10 f32", c.MaxLen(), c.Type())
	}
	long := make([]int32, 11)
	if _, err := m.Forward(context.Background(), c, long, 0, false); !errors.Is(err, engine.ErrContextFull) {
		t.Errorf("11 tokens in a context of 10: %v", err)
	}
	// The f32 cache agrees with the default f16 one to attention noise.
	_, f16 := goldentest.Open(t, path, engine.WithThreads(1))
	if d := maxAbsDiff(lastLogits(t, m, testPrompt), lastLogits(t, f16, testPrompt)); d > 0.6 || d == 0 {
		t.Errorf("f32 vs f16 cache differ by %g (want a small nonzero noise)", d)
	}
	if _, err := engine.Open(path, engine.WithContext(-1)); err == nil {
		t.Error("negative context: no error")
	}
	if _, err := engine.Open("/nonexistent/model.gguf"); err == nil {
		t.Error("missing file: no error")
	}
	// The KV type is parsed once, by the option: an unknown name fails
	// before the file is read.
	if _, err := engine.Open(path, engine.WithKVType("q4_0")); err == nil || !strings.Contains(err.Error(), `"q4_0"`) {
		t.Errorf("KV type q4_0: %v, want an error naming it", err)
	}
}
