package qwen3moe

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/models/qwen3"
	"github.com/smolgo/smolgo/models/qwen3moe/chat"
	"github.com/smolgo/smolgo/tokenizer"
)

// Format returns the file's format: CoderFormatSpec when its
// tokenizer.chat_template is Qwen3-Coder's (IsCoder), else Qwen3's
// (qwen3.FormatSpec), which is also what a file without a template gets.
func Format(f *gguf.File) (engine.Format, error) {
	tmpl, _ := f.String("tokenizer.chat_template")
	if IsCoder(tmpl) {
		return family.NewFormat(f, CoderFormatSpec), nil
	}
	return family.NewFormat(f, qwen3.FormatSpec), nil
}

// IsCoder reports whether a chat template is Qwen3-Coder's: it writes
// <tool_call> blocks whose function and parameters are XML tags
// (<function=NAME>, <parameter=NAME>), each on its own line, as llama.cpp
// recognises the format (templates that write <tool_call><function=…>
// on one line are another format).
func IsCoder(tmpl string) bool {
	return strings.Contains(tmpl, "<tool_call>") && strings.Contains(tmpl, "<function=") &&
		strings.Contains(tmpl, "<parameter=") && !strings.Contains(tmpl, "'<tool_call><function=' ~ tool_call.name ~ '>'")
}

// CoderFormatSpec is Qwen3-Coder's chat format: package chat's template,
// <|im_end|> ending a turn, no reasoning, and XML tool calls (CoderTools).
var CoderFormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Tools: opts.Tools, AddGenerationPrompt: true})
	},
	EndOfTurn: []string{"<|im_end|>"},
	Tools:     CoderTools,
}

// CoderTools is Qwen3-Coder's tool-call syntax: chat.ToolParser, given the
// request's tools so that it types the arguments, and chat.CallGrammar to
// force calls.
var CoderTools family.TypedToolSyntax = coderTools{chat.Qwen3Coder}

// SeedTools is Seed-OSS's tool-call syntax: Qwen3-Coder's calls between
// <seed:tool_call> and </seed:tool_call>.
var SeedTools family.TypedToolSyntax = coderTools{chat.SeedOSS}

// MiniMaxM2Tools is MiniMax-M2's tool-call syntax: blocks of invokes
// between <minimax:tool_call> and </minimax:tool_call>.
var MiniMaxM2Tools family.TypedToolSyntax = coderTools{chat.MiniMaxM2}

type coderTools struct{ wrap chat.Tags }

func (c coderTools) NewParser(*tokenizer.Tokenizer) family.ToolParser {
	return chat.NewToolParserIn(c.wrap, nil)
}

func (c coderTools) NewTypedParser(_ *tokenizer.Tokenizer, tools []json.RawMessage) family.ToolParser {
	return chat.NewToolParserIn(c.wrap, tools)
}

func (c coderTools) Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	return chat.CallGrammarIn(ctx, c.wrap, funcs, opts)
}
