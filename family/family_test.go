package family_test

import (
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
	_, err = family.Load(path)
	if err == nil || !strings.Contains(err.Error(), `"mamba"`) || !strings.Contains(err.Error(), "qwen3") || !strings.Contains(err.Error(), "gemma3") {
		t.Errorf("unsupported architecture: %v", err)
	}
	if _, err := engine.Open(path); err == nil || !strings.Contains(err.Error(), `"mamba"`) {
		t.Errorf("engine.Open: %v", err)
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
