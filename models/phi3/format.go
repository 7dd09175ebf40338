package phi3

import (
	"context"
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/models/phi3/chat"
	"github.com/smolgo/smolgo/tokenizer"
)

// Format returns the chat format a file's tokenizer.chat_template asks
// for: Phi-4-mini's for Phi-4-mini-instruct's published template (and for
// a file without a template), Phi-3.5-mini's for Phi-3.5-mini-instruct's.
// Any other template gets a format whose prompts fail with an error naming
// the template's start (Forward still runs): package chat renders only the
// templates it reproduces byte for byte.
func Format(f *gguf.File) (engine.Format, error) {
	tmpl, _ := f.String("tokenizer.chat_template")
	if tmpl == "" {
		return family.NewFormat(f, FormatSpec), nil
	}
	if t, ok := chat.Detect(tmpl); ok {
		if t == chat.Phi35Mini {
			return family.NewFormat(f, Phi35FormatSpec), nil
		}
		return family.NewFormat(f, FormatSpec), nil
	}
	head := tmpl[:min(len(tmpl), 60)]
	return family.FileFormat(f, family.FormatSpec{ // the file's own template, through the Jinja engine
		Render: func(*gguf.File, []engine.Message, engine.PromptOptions) (string, [][2]int, error) {
			return "", nil, fmt.Errorf("phi3: the file's chat template (%q...) is not one this package renders (Phi-4-mini-instruct's or Phi-3.5-mini-instruct's), and the Jinja engine cannot parse it", head)
		},
	}), nil
}

// endOfTurn ends an answer in both formats: <|end|> closes every turn,
// <|endoftext|> is the end-of-sequence token.
var endOfTurn = []string{chat.End, chat.EndOfText}

// FormatSpec is Phi-4-mini's chat format: package chat's Phi-4-mini
// template (tools listed in the system turn), <|end|> and <|endoftext|>
// ending a turn, and calls as a JSON list between <|tool_call|> and
// <|/tool_call|> (Tools).
var FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Template: chat.Phi4Mini, Tools: opts.Tools, AddGenerationPrompt: true})
	},
	EndOfTurn: endOfTurn,
	Tools:     Tools,
}

// Phi35FormatSpec is Phi-3.5-mini's chat format: its template, the same
// end-of-turn tokens, and llama.cpp's generic JSON format for tools.
var Phi35FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Template: chat.Phi35Mini, Tools: opts.Tools, AddGenerationPrompt: true})
	},
	EndOfTurn: endOfTurn,
	Tools:     family.GenericJSON,
}

// Tools is Phi-4-mini's tool-call syntax: chat.NewToolParser with the
// vocabulary's ids of <|tool_call|> and <|/tool_call|>, and chat.CallGrammar
// to force calls.
var Tools family.ToolSyntax = phi4Tools{}

type phi4Tools struct{}

func (phi4Tools) NewParser(tok *tokenizer.Tokenizer) family.ToolParser {
	open, close := int32(-1), int32(-1)
	if tok != nil {
		if id, ok := tok.ID(chat.ToolCall); ok {
			open = id
		}
		if id, ok := tok.ID(chat.EndToolCall); ok {
			close = id
		}
	}
	return chat.NewToolParser(open, close)
}

func (phi4Tools) Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	return chat.CallGrammar(ctx, funcs, opts)
}
