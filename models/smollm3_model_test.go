package models_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/smollm3"
)

func lastLogits(t *testing.T, m *family.Model, tokens []int32) []float32 {
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
	m, err := family.Load(path, engine.WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	llm := m.LLM()
	for i := range m.LLM().Config.Layers {
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
	// And a mask equal to the rule gives identical logits; two models over
	// one file are independent.
	same, err := llama.New(m.File(), llama.Options{Threads: 2}, rope.EveryNth(8, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer same.Close()
	if d := maxAbsDiff(base, llamaLogits(t, same, testPrompt)); d != 0 {
		t.Errorf("explicit SmolLM3 mask differs from the default by %g", d)
	}
}

// smollm3.Load opens SmolLM3 files only; family.Load opens the others.
func TestLoadRefusesOtherArchitectures(t *testing.T) {
	path := sharedtest.Path(t, "golden/models/llama-tiny-F32.gguf")
	if m, err := smollm3.Load(path, engine.WithThreads(1)); err == nil || !strings.Contains(err.Error(), `"llama"`) {
		if m != nil {
			m.Close()
		}
		t.Fatalf("Load of a llama file: %v, want an error naming the architecture", err)
	}
	m, err := family.Load(path, engine.WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}

func TestLoadOptions(t *testing.T) {
	path := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q8_0.gguf")
	m, err := family.Load(path, engine.WithThreads(1), engine.WithContext(10), engine.WithKVType("f32"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
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
	f16, err := family.Load(path, engine.WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	defer f16.Close()
	if d := maxAbsDiff(lastLogits(t, m, testPrompt), lastLogits(t, f16, testPrompt)); d > 0.6 || d == 0 {
		t.Errorf("f32 vs f16 cache differ by %g (want a small nonzero noise)", d)
	}
	if _, err := family.Load(path, engine.WithContext(-1)); err == nil {
		t.Error("negative context: no error")
	}
	if _, err := family.Load("/nonexistent/model.gguf"); err == nil {
		t.Error("missing file: no error")
	}
}
