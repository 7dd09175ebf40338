// Package gptoss is OpenAI's gpt-oss family (general.architecture
// "gpt-oss": gpt-oss-20b and gpt-oss-120b, the same code). Importing it
// registers the architecture with package family.
//
// The block (Describe) is a mixture of experts: 32 experts in the 20b model,
// 4 used per token, each a clamped SwiGLU (llama.SwiGLUOAI) with biases,
// weighted by the softmax of the chosen router logits; attention with
// biases, one sink logit per head and a sliding window of 128 on alternate
// layers; YaRN RoPE. The experts' weights ship in MXFP4.
package gptoss

import "github.com/smolgo/smolgo/family"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
}
