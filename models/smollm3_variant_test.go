package models_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/smollm3"
)

// A new llama-family architecture is a description and a registration:
// here "tinyvariant", SmolLM3's block with RoPE skipped in every second
// layer instead of every fourth, speaking SmolLM3's chat format. Nothing in
// llama, engine or server names it, yet engine.Open loads its files and
// sessions chat with it.
func TestArchitectureVariant(t *testing.T) {
	registerVariant.Do(func() {
		family.Register(family.Family{Arch: "tinyvariant", Describe: describeVariant,
			Format: func(f *gguf.File) (engine.Format, error) { return smollm3.NewFormat(f), nil }})
	})
	if !slices.Contains(engine.Architectures(), "tinyvariant") || !slices.Contains(family.Families(), "tinyvariant") {
		t.Fatalf("registered architectures: %v", engine.Architectures())
	}
	path := writeVariant(t)
	m, err := engine.Open(path, engine.WithThreads(1), engine.WithContext(512))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if llm := partsOf(t, m).CPU(); llm.Config.Arch != "tinyvariant" || llm.RotatesLayer(1) || !llm.RotatesLayer(2) {
		t.Fatalf("the variant's description was not used (arch %q)", llm.Config.Arch)
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
// happens once.
var registerVariant sync.Once

func describeVariant(_ *gguf.File, cfg llama.Config) (llama.Arch, error) {
	a := llama.Plain("tinyvariant", cfg)
	for i := range a.Layers {
		if (i+1)%2 == 0 {
			a.Layers[i].Attention().Rope = nil
		}
	}
	return a, nil
}

// tinyModel is the repository's small random-weight SmolLM3 (8 layers,
// Q4_K_M, 2 MB).
const tinyModel = "../testdata/smollm3-tinyq-Q4_K_M.gguf"

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
