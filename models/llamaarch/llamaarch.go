// Package llamaarch is the family of GGUF files of architecture "llama": Llama
// 3.x (1B and 3B are the sizes people run on a CPU), and any other model
// stored as a plain llama block. Importing it registers the architecture
// with package family, so that engine.Open opens such files.
//
// The block is llama.Plain (NORM RoPE pairs, SwiGLU, tied embeddings when
// output.weight is absent), with Llama 3's per-frequency RoPE factors when
// the file has rope_freqs.weight (every Llama 3.1/3.2 file does), YaRN or
// linear scaling where the rope.scaling keys ask for it, and q/k/v biases
// where the file has them.
//
// SmolLM2 (HuggingFaceTB/SmolLM2-135M, -360M and -1.7B, and their
// Instruct versions) is such a model: the plain llama block with tied
// embeddings, a GPT-2 style vocabulary of 49,152 tokens (pre-tokenizer
// "smollm") and a ChatML chat template.
//
// The format follows from the file's tokenizer.chat_template:
//
//   - a Llama-3 header template (<|start_header_id|>) gets Llama 3's format
//     (package chat);
//   - a file without a template gets what llama-server renders for it,
//     llama.cpp's built-in ChatML (DefaultSpec): no default system turn,
//     <|im_end|> ending a turn, tools in llama.cpp's generic JSON format.
//     That is right for the files that have none: llama2.c's converter
//     (the TinyStories models), Llama 2 and other SentencePiece llama
//     files, base models. The one exception is a Llama 3 vocabulary (its
//     <|begin_of_text|> or <|start_header_id|> is a token): it gets Llama
//     3's format, which its markers were made for, where llama.cpp would
//     spell ChatML's markers in pieces;
//   - SmolLM2-Instruct's template, or a fine-tune's copy of it with another
//     default system text, gets SmolLM2's ChatML format (package chatml):
//     <|im_end|> ends a turn, and tools use llama.cpp's generic JSON format
//     (family.GenericJSON), since the template has none;
//   - a file whose template this package does not know gets a format that
//     fails with a clear error when asked for a prompt (Forward still
//     runs).
package llamaarch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/models/llamaarch/chat"
	"github.com/smolgo/smolgo/models/llamaarch/chatml"
	"github.com/smolgo/smolgo/tokenizer"
)

// Arch is the architecture name of the files this package loads.
const Arch = "llama"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
	family.ProvideToolSyntax("llama3-json", FormatSpec.Tools)
}

// TemplateSHA256 is the SHA-256 of the chat template FormatSpec renders
// byte for byte (Llama 3.2's, chat/testdata/meta-llama-Llama-3.2-3B-Instruct.jinja).
const TemplateSHA256 = "5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4"

// Describe is the llama block for a file: RoPE factors and biases where the
// file has them, and a mixture of experts in every layer where it has
// expert_count (Mixtral's layout, as llama.cpp's llama graph runs it:
// softmax gating, the chosen experts' weights renormalized, SwiGLU
// experts).
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	var ffn llama.FFN = &llama.GLU{}
	moe, err := llama.MoEFromGGUF(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	if moe != nil {
		// The experts' width is feed_forward_length (llama.cpp's llama
		// loader), whatever expert_feed_forward_length says.
		moe.Width, moe.Gating, moe.NormWeights, moe.SharedWidth = cfg.FFN, llama.SoftmaxTopK, true, 0
		ffn = moe
	}
	r := cfg.Rope
	factors, err := llama.RopeFactors(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	r.Factors = factors
	_, bias := f.Tensor("blk.0.attn_q.bias")
	_, outBias := f.Tensor("blk.0.attn_output.bias")
	return llama.Uniform(Arch, cfg.Layers, llama.Layer{Mixer: &llama.Attention{Rope: &r, QKVBias: bias, OutBias: outBias}, FFN: ffn}), nil
}

// Format returns the format the file's chat template asks for: Llama 3's
// for a Llama-3 header template, SmolLM2's ChatML for SmolLM2's template
// (ChatMLSpec), else one whose prompts fail with an error naming the
// template's start. A file without a template gets llama.cpp's built-in
// ChatML (DefaultSpec), or Llama 3's format when its vocabulary is Llama
// 3's (see the package documentation).
func Format(f *gguf.File) (engine.Format, error) {
	tmpl, _ := f.String("tokenizer.chat_template")
	if tmpl == "" {
		if llama3Vocab(f) {
			return family.NewFormat(f, FormatSpec), nil
		}
		return family.NewFormat(f, DefaultSpec), nil
	}
	if family.KnownTemplate(f, TemplateSHA256) {
		return family.NewFormat(f, FormatSpec), nil
	}
	if system, ok := chatml.Recognize(tmpl); ok {
		return family.NewFormat(f, ChatMLSpec(system)), nil
	}
	// Any other template (Llama 3.1's, 3.3's, a fine-tune's: Hermes 3,
	// DeepSeek-R1-Distill-Llama) renders through the Jinja engine; the
	// spec below is for a template the engine cannot parse.
	head := tmpl[:min(len(tmpl), 60)]
	if strings.Contains(tmpl, "<|start_header_id|>") {
		return family.FileFormat(f, FormatSpec), nil
	}
	return family.FileFormat(f, family.FormatSpec{
		Render: func(*gguf.File, []engine.Message, engine.PromptOptions) (string, [][2]int, error) {
			return "", nil, fmt.Errorf("llamaarch: the file's chat template (%q...) is not one this package renders (Llama 3's, SmolLM2's), and the Jinja engine cannot parse it", head)
		},
	}), nil
}

// ChatMLSpec is SmolLM2's chat format, with the default system text of the
// file's template (chatml.Recognize; "" for SmolLM2's): the template of
// package chatml, <|im_end|> ending a turn, and tools in llama.cpp's
// generic JSON format.
func ChatMLSpec(defaultSystem string) family.FormatSpec {
	return family.FormatSpec{
		Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
			return chatml.RenderSpans(msgs, chatml.Options{DefaultSystem: defaultSystem, Tools: opts.Tools, AddGenerationPrompt: true})
		},
		EndOfTurn: []string{chatml.ImEnd},
		Tools:     family.GenericJSON,
	}
}

// llama3Vocab reports whether the file's vocabulary has Llama 3's
// <|begin_of_text|> or <|start_header_id|> token.
func llama3Vocab(f *gguf.File) bool {
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	return slices.Contains(tokens, "<|begin_of_text|>") || slices.Contains(tokens, "<|start_header_id|>")
}

// DefaultSpec is the format of a file without a chat template, as
// llama-server renders one: llama.cpp's built-in ChatML template (no
// default system turn; chatml.Options.NoSystem), <|im_end|> ending a turn
// where it is a token (else the model's EOS does), and tools in llama.cpp's
// generic JSON format, which it uses for templates without tools.
var DefaultSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chatml.RenderSpans(msgs, chatml.Options{NoSystem: true, Tools: opts.Tools, AddGenerationPrompt: true})
	},
	EndOfTurn: []string{chatml.ImEnd},
	Tools:     family.GenericJSON,
}

// FormatSpec is Llama 3's chat format: the template of package chat (tools
// listed in the system turn, as llama.cpp passes them), <|eot_id|> and
// <|eom_id|> ending a turn, and calls as a bare JSON object.
var FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Tools: opts.Tools, AddGenerationPrompt: true, ToolsInSystem: true})
	},
	EndOfTurn: []string{"<|eot_id|>", "<|eom_id|>"},
	Tools: family.SchemaSyntax{
		Parser: func(tok *tokenizer.Tokenizer) family.ToolParser {
			id := int32(-1)
			if tok != nil {
				if v, ok := tok.ID(chat.PythonTag); ok {
					id = v
				}
			}
			return chat.NewToolParser(id)
		},
		Schema: chat.CallSchema,
	},
}
