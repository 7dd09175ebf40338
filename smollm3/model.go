package smollm3

import (
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
)

// NoPEPeriod is SmolLM3's RoPE rule: layer i applies RoPE iff
// (i+1) % NoPEPeriod != 0, so layers 3, 7, 11, ... have no positional
// encoding. GGUF files have no key for it; llama.cpp hard-codes it too.
const NoPEPeriod = 4

// NoPEMask returns SmolLM3's NoPE mask for a model of the given depth.
func NoPEMask(layers int) rope.NoPE { return rope.EveryNth(layers, NoPEPeriod) }

// Arch is the architecture name of SmolLM3 files.
const Arch = "smollm3"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe,
		Format: func(f *gguf.File) (engine.Format, error) {
			return family.FileFormat(f, FormatSpec(nil), TemplateSHA256), nil
		}})
}

// TemplateSHA256 is the SHA-256 of the chat template FormatSpec renders
// byte for byte (Hugging Face's SmolLM3-3B, ../shared/tokenizer/chat_template.jinja):
// a file carrying it (or none) gets FormatSpec, a file carrying another
// (Unsloth's edit, which most GGUF uploads ship; a fine-tune's) its own
// template through the Jinja engine.
const TemplateSHA256 = "3e0e275a527f249670056e0078e474eadbdd007c134b4fdfae5a7b3089702814"

// Describe is SmolLM3's block: the plain llama block (RoPE with NORM pairs,
// YaRN or linear scaling where the file asks for it, SwiGLU, tied
// embeddings when output.weight is absent) without RoPE in every fourth
// layer.
func Describe(_ *gguf.File, cfg llama.Config) (llama.Arch, error) {
	a := llama.Plain(Arch, cfg)
	nope := NoPEMask(cfg.Layers)
	for i := range a.Layers {
		if !nope.Rotates(i) {
			a.Layers[i].Rope = nil
		}
	}
	return a, nil
}

// Model is a loaded model (family.Model): SmolLM3's, or any registered
// family's opened through family.Load.
type Model = family.Model

// Load opens a SmolLM3 GGUF file and builds the model with opts' engine
// settings (threads, device, KV cache type and length, prompt cache,
// batching). Close the model to release the file. Files of other
// architectures are refused with an error naming it: family.Load opens any
// registered family.
func Load(path string, opts ...engine.Option) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	m, err := New(f, opts...)
	if err != nil {
		f.Close()
		return nil, err
	}
	return m, nil
}

// New builds a SmolLM3 model over an already open GGUF file, which the
// model then owns (Model.Close closes it).
func New(f *gguf.File, opts ...engine.Option) (*Model, error) {
	arch, err := f.Architecture()
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	if arch != Arch {
		return nil, fmt.Errorf("smollm3: the file's architecture is %q, not %q (family.Load opens any registered family)", arch, Arch)
	}
	m, err := family.New(f, opts...)
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	return m, nil
}
