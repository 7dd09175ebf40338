package family_test

import (
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	_ "github.com/smolgo/smolgo/models"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/smollm3"
)

// Any registered family's file opens with engine.Open; its parts say what
// its block uses beyond the plain llama block.
func ExampleOf() {
	m, err := engine.Open("../testdata/smollm3-tinyq-Q4_K_M.gguf", engine.WithThreads(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	p, ok := family.Of(m)
	if !ok {
		fmt.Println("not a llama family's model")
		return
	}
	a := p.Arch()
	fmt.Println(a.Name, len(a.Layers), "layers, uses", a.Features())
	// Output: smollm3 8 layers, uses [nope]
}

// A family is a description and a format. This one is Qwen2's block (NEOX
// RoPE pairs and q/k/v biases) speaking SmolLM3's chat format; registering
// it under a new general.architecture name makes engine.Open take such
// files.
func ExampleRegister() {
	describe := func(_ *gguf.File, cfg llama.Config) (llama.Arch, error) {
		r := cfg.Rope
		r.Layout = rope.NeoX
		return llama.Uniform("qwen2-chatml", cfg.Layers, llama.Layer{Mixer: &llama.Attention{Rope: &r, QKVBias: true}, FFN: &llama.GLU{}}), nil
	}
	family.Register(family.Family{
		Arch:     "qwen2-chatml",
		Describe: describe,
		Format: func(f *gguf.File) (engine.Format, error) {
			return family.NewFormat(f, smollm3.FormatSpec(nil)), nil
		},
	})
	_, ok := family.Lookup("qwen2-chatml")
	fmt.Println(ok)
	// Output: true
}
