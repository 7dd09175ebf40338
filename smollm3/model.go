package smollm3

import (
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
			a.Layers[i].Attention().Rope = nil
		}
	}
	return a, nil
}
