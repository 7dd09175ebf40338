package gptoss

import (
	"context"
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/models/gptoss/chat"
	"github.com/smolgo/smolgo/tokenizer"
	"github.com/smolgo/smolgo/toolcall"
)

// Format is gpt-oss's chat format (FormatSpec).
func Format(f *gguf.File) (engine.Format, error) { return family.NewFormat(f, FormatSpec), nil }

// FormatSpec is gpt-oss's chat format: package chat's template and
// harmony parser, <|return|> and <|call|> ending the answer (they are the
// vocabulary's end-of-generation tokens too), and calls forced with
// chat.CallGrammar.
var FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		effort, err := Effort(opts.ReasoningEffort)
		if err != nil {
			return "", nil, err
		}
		return chat.RenderSpans(msgs, chat.Options{Tools: opts.Tools, AddGenerationPrompt: true, ReasoningEffort: effort})
	},
	EndOfTurn: []string{chat.Return, chat.Call},
	Tools:     Tools,
	Parser: func(tok *tokenizer.Tokenizer, opts engine.ParserOptions) engine.Parser {
		return chat.NewParser(vocab(tok), chat.ParserOptions{Tools: opts.Tools})
	},
}

// vocab is tok as the parser's vocabulary, nil without one.
func vocab(tok *tokenizer.Tokenizer) chat.Vocab {
	if tok == nil {
		return nil
	}
	return tok
}

// Effort maps a requested reasoning effort to a level gpt-oss was trained
// on: "low", "medium" and "high" as they are, "none" and "minimal" to
// "low" (gpt-oss always reasons; this is the least), "xhigh" to "high", ""
// to "" (the template's default, "medium"). Anything else is an error.
func Effort(s string) (string, error) {
	switch s {
	case "", "low", "medium", "high":
		return s, nil
	case "none", "minimal":
		return "low", nil
	case "xhigh":
		return "high", nil
	}
	return "", fmt.Errorf("gptoss: reasoning effort %q is not one of low, medium, high (or none, minimal, xhigh)", s)
}

// Tools is gpt-oss's tool-call syntax for family: the forced-call grammar
// (chat.CallGrammar), and a parser that keeps only the calls and the
// content of an answer (FormatSpec's Parser reads the reasoning too, and
// is the one family uses).
var Tools family.ToolSyntax = harmonyTools{}

type harmonyTools struct{}

func (harmonyTools) NewParser(tok *tokenizer.Tokenizer) family.ToolParser {
	return callsOnly{chat.NewParser(vocab(tok), chat.ParserOptions{Tools: true})}
}

func (harmonyTools) Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	return chat.CallGrammar(ctx, funcs, opts)
}

// callsOnly is the harmony parser as a family.ToolParser: reasoning is
// dropped, content is text, calls and bad calls are what they are.
type callsOnly struct{ p *chat.Parser }

func (c callsOnly) Push(id int32, text string) []toolcall.Event {
	return toToolEvents(c.p.Push(id, text))
}
func (c callsOnly) Flush() []toolcall.Event { return toToolEvents(c.p.Flush()) }

func toToolEvents(evs []engine.Event) []toolcall.Event {
	var out []toolcall.Event
	for _, e := range evs {
		switch e.Kind {
		case engine.EventContent:
			out = append(out, toolcall.Event{Kind: toolcall.KindText, Text: e.Text})
		case engine.EventToolCall:
			out = append(out, toolcall.Event{Kind: toolcall.KindCall, Call: toolcall.Call{Name: e.ToolCall.Name, Arguments: e.ToolCall.Arguments}})
		case engine.EventToolError:
			out = append(out, toolcall.Event{Kind: toolcall.KindError, Raw: e.Text, Err: e.Err})
		}
	}
	return out
}
