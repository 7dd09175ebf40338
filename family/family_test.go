package family_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	_ "github.com/smolgo/smolgo/models"
)

// A file of an architecture no family registered is refused with an error
// naming what it has and what is supported.
func TestUnsupportedArchitecture(t *testing.T) {
	src, err := gguf.Open("../testdata/smollm3-tinyq-Q4_K_M.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var kv []gguf.KV
	for _, e := range src.KV {
		if e.Key == "general.architecture" {
			e.Value = "mamba"
		}
		kv = append(kv, e)
	}
	path := filepath.Join(t.TempDir(), "mamba.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(out, kv, nil); err != nil {
		t.Fatal(err)
	}
	out.Close()
	_, err = engine.Open(path)
	if err == nil || !strings.Contains(err.Error(), `"mamba"`) || !strings.Contains(err.Error(), "qwen3") || !strings.Contains(err.Error(), "gemma3") {
		t.Errorf("unsupported architecture: %v", err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := family.Describe(f); err == nil || !strings.Contains(err.Error(), `"mamba"`) || !strings.Contains(err.Error(), "qwen3") {
		t.Errorf("Describe: %v", err)
	}
}

// Of gives the parts of a family's model, made with the options engine.Open
// took (the KV type and context reach the caches unchanged), and nothing
// for a model made otherwise.
func TestOf(t *testing.T) {
	m, err := engine.Open("../testdata/smollm3-tinyq-Q4_K_M.gguf", engine.WithThreads(1), engine.WithKVType("q8_0"), engine.WithContext(40))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, ok := family.Of(m)
	if !ok || p.CPU() == nil || p.File() == nil || p.Weights().Arch.Name != "smollm3" {
		t.Fatalf("Of: %v, %+v", ok, p)
	}
	if p.KVType() != llama.KVQ8_0 || p.CPU().Threads() != 1 {
		t.Errorf("KV type %v, %d threads; want q8_0 and 1", p.KVType(), p.CPU().Threads())
	}
	c, err := p.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	if c.Type() != llama.KVQ8_0 || c.MaxLen() != 40 || m.ContextLength() != 40 {
		t.Errorf("cache %v of %d, model context %d; want q8_0 of 40", c.Type(), c.MaxLen(), m.ContextLength())
	}
	if _, err := p.Forward(context.Background(), c, []int32{1, 2, 3}, 0, false); err != nil {
		t.Error(err)
	}
	if tok, err := p.Tokenizer(); err != nil || tok.Len() != m.Backend().Vocab() {
		t.Errorf("tokenizer: %v", err)
	}
	other, err := engine.New(m.Backend(), m.Format(), m.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, ok := family.Of(other); ok {
		t.Error("Of gives parts for a model engine.New made")
	}
}

// Every family is registered once with both registries, and Describe
// gives a file's description.
func TestFamilies(t *testing.T) {
	for _, arch := range []string{"gemma3", "llama", "qwen2", "qwen3", "smollm3"} {
		if _, ok := family.Lookup(arch); !ok {
			t.Errorf("family %s not registered", arch)
		}
	}
	f, err := gguf.Open("../testdata/smollm3-tinyq-Q4_K_M.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, a, err := family.Describe(f)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Layers != len(a.Layers) || a.Layers[3].Attention().Rope != nil || a.Layers[2].Attention().Rope == nil {
		t.Errorf("smollm3's description: %d layers, NoPE at 3: %v", len(a.Layers), a.Layers[3].Attention().Rope == nil)
	}
	for _, bad := range []family.Family{{}, {Arch: "x"}, {Arch: "smollm3", Describe: describePlain, Format: nil},
		{Arch: "smollm3", Describe: describePlain, Format: formatNone}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", bad.Arch)
				}
			}()
			family.Register(bad)
		}()
	}
}

func describePlain(_ *gguf.File, cfg llama.Config) (llama.Arch, error) {
	return llama.Plain("x", cfg), nil
}

func formatNone(*gguf.File) (engine.Format, error) { return nil, nil }
