// Package gptoss is OpenAI's gpt-oss family (general.architecture
// "gpt-oss": gpt-oss-20b and gpt-oss-120b, the same code). Importing it
// registers the architecture with package family.
//
// The block (Describe) is a mixture of experts: 32 experts in the 20b model,
// 4 used per token, each a clamped SwiGLU (llama.SwiGLUOAI) with biases,
// weighted by the softmax of the chosen router logits; attention with
// biases, one sink logit per head and a sliding window of 128 on alternate
// layers; YaRN RoPE. The experts' weights ship in MXFP4.
//
// The format is OpenAI's harmony (package chat): the chat template as
// llama.cpp's copy of the published one renders it (a system message with
// the date and the reasoning effort, the caller's system message as the
// developer's instructions, tools declared as TypeScript-like types in a
// functions namespace), and answers read as a sequence of messages on
// channels: analysis is reasoning, final (and a commentary preamble) is
// content, a commentary message to functions.NAME is a tool call.
// GenerateOptions.ReasoningEffort sets the effort ("low", "medium",
// "high"; "none" and "minimal" ask for the least, "low", "xhigh" for the
// most, "high"; "" is the template's "medium"). gpt-oss cannot answer
// without reasoning, so GenerateOptions.Thinking changes nothing. The
// vocabulary is o200k_harmony (tokenizer.ggml.pre "gpt-4o"): <|return|>
// and <|call|> end an answer, <|end|> ends one message of it.
package gptoss

import "github.com/smolgo/smolgo/family"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
	family.ProvideToolSyntax("harmony", Tools) // for other files whose template writes harmony calls
}
