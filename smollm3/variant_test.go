package smollm3_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/smollm3"
)

// A new llama-family architecture is a loader and a registration: here
// "tinyvariant", SmolLM3's block with RoPE skipped in every second layer
// instead of every fourth, speaking SmolLM3's chat format. Nothing in
// llama, engine or server names it, yet engine.Open loads its files and
// sessions chat with it.
func TestArchitectureVariant(t *testing.T) {
	registerVariant.Do(func() { engine.Register(engine.Architecture{Name: "tinyvariant", Load: loadVariant}) })
	if !slices.Contains(engine.Architectures(), "tinyvariant") {
		t.Fatalf("registered architectures: %v", engine.Architectures())
	}
	path := writeVariant(t)
	m, err := engine.Open(path, engine.WithThreads(1), engine.WithContext(512))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	loaded := <-variantLoaded
	if loaded.Config.Arch != "tinyvariant" || loaded.RotatesLayer(1) || !loaded.RotatesLayer(2) {
		t.Fatalf("the variant's loader did not build its model (arch %q)", loaded.Config.Arch)
	}
	n := 0
	for ev, err := range m.NewSession().Generate(context.Background(), []engine.Message{{Role: "user", Content: "Hi"}}, engine.GenerateOptions{MaxTokens: 5, Thinking: new(false)}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == engine.EventDone {
			n = ev.Stats.GeneratedTokens
		}
	}
	if n != 5 {
		t.Errorf("generated %d tokens, want 5", n)
	}
}

// The registration is process-wide, like database/sql drivers', so it
// happens once; each load reports its model on variantLoaded.
var (
	registerVariant sync.Once
	variantLoaded   = make(chan *llama.Model, 1)
)

func loadVariant(f *gguf.File, cfg engine.Config) (engine.Loaded, error) {
	c, err := llama.ConfigFromGGUF(f)
	if err != nil {
		return engine.Loaded{}, err
	}
	llm, err := llama.New(f, llama.Options{Threads: cfg.Threads, NoPE: rope.EveryNth(c.Layers, 2)})
	if err != nil {
		return engine.Loaded{}, err
	}
	b, err := llama.NewBackend(llm, llama.BackendOptions{MaxLen: cfg.Context})
	if err != nil {
		llm.Close()
		return engine.Loaded{}, err
	}
	variantLoaded <- llm
	return engine.Loaded{Backend: b, Format: smollm3.NewFormat(f), Close: func() error { llm.Close(); return f.Close() }}, nil
}

// writeVariant writes the demo model with its keys renamed to the new
// architecture.
func writeVariant(t *testing.T) string {
	src, err := gguf.Open(tinyModel)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var kv []gguf.KV
	for _, e := range src.KV {
		switch {
		case e.Key == "general.architecture":
			e.Value = "tinyvariant"
		case strings.HasPrefix(e.Key, "smollm3."):
			e.Key = "tinyvariant." + strings.TrimPrefix(e.Key, "smollm3.")
		}
		kv = append(kv, e)
	}
	var ts []gguf.WriterTensor
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		ts = append(ts, gguf.WriterTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: src.TensorData(ti)})
	}
	path := filepath.Join(t.TempDir(), "tinyvariant.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(out, kv, ts); err != nil {
		t.Fatal(err)
	}
	out.Close()
	return path
}
