package granite

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/models/granite/chat"
	"github.com/smolgo/smolgo/tokenizer"
)

// Format returns the format the file's chat template asks for (chat.Detect
// tells which): Granite 3.3's (FormatSpec), Granite 4.0's (FormatSpec40)
// or Granite 4.1's (FormatSpec41). A file without a template gets 4.1's. A
// file with one this package does not render (Granite 3.0 to 3.2's among
// them) gets a format whose prompts fail with an error naming the
// template's start (Forward still runs).
func Format(f *gguf.File) (engine.Format, error) {
	src, _ := f.String("tokenizer.chat_template")
	t, ok := chat.Detect(src)
	switch {
	case src == "":
		return family.NewFormat(f, FormatSpec41), nil // the newest, as llamaarch takes Llama 3's
	case !ok:
		return family.FileFormat(f, unknown(src)), nil // the file's own template, through the Jinja engine
	case t == chat.Granite33:
		return &format33{Format: family.NewFormat(f, FormatSpec)}, nil
	case t == chat.Granite40:
		return family.NewFormat(f, FormatSpec40), nil
	default:
		return family.NewFormat(f, FormatSpec41), nil
	}
}

// unknown is the format of a file whose template is none of the three.
func unknown(src string) family.FormatSpec {
	err := fmt.Errorf("granite: the file's chat template (%q...) is not one this package renders (Granite 3.3's, 4.0's or 4.1's)", src[:min(len(src), 60)])
	return family.FormatSpec{
		Render: func(*gguf.File, []engine.Message, engine.PromptOptions) (string, [][2]int, error) {
			return "", nil, err
		},
	}
}

// FormatSpec is Granite 3.3's chat format: the template of package chat,
// <|end_of_text|> ending a turn, tool calls as <|tool_call|> and a JSON
// list (Tools3), and reasoning in <think>…</think> when
// PromptOptions.Thinking asks for it (the template's thinking switch,
// off by default). Format wraps it so that the answer's <response> tags
// are taken out and <|tool_call|>, a special token decoding leaves out, is
// seen by the tool-call parser behind the reasoning parser.
var FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Template: chat.Granite33, Tools: opts.Tools,
			Thinking: opts.Thinking != nil && *opts.Thinking, AddGenerationPrompt: true})
	},
	EndOfTurn: []string{chat.EndOfText},
	Reasoning: true,
	Tools:     Tools3,
}

// FormatSpec40 is Granite 4.0's chat format: the template of package chat
// (with its default system prompt), <|end_of_text|> ending a turn, and
// Hermes <tool_call> blocks. Granite 4.0 has no reasoning mode.
var FormatSpec40 = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Template: chat.Granite40, Tools: opts.Tools, AddGenerationPrompt: true})
	},
	EndOfTurn: []string{chat.EndOfText},
	Tools:     family.Hermes,
}

// FormatSpec41 is Granite 4.1's chat format: FormatSpec40 without the
// default system prompt.
var FormatSpec41 = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Template: chat.Granite41, Tools: opts.Tools, AddGenerationPrompt: true})
	},
	EndOfTurn: []string{chat.EndOfText},
	Tools:     family.Hermes,
}

// Tools3 is Granite 3's tool-call syntax: <|tool_call|> and a JSON list of
// {"name", "arguments"} objects, read by chat.ToolParser. Its grammar is
// chat.CallSchema's: the list alone (with opts.Parallel, of one or more
// calls), which the parser reads at the start of an answer.
var Tools3 family.ToolSyntax = tools3{}

type tools3 struct{}

func (tools3) NewParser(tok *tokenizer.Tokenizer) family.ToolParser {
	if tok == nil {
		return chat.NewToolParser(-1)
	}
	return chat.NewToolParser(tagID(tok))
}

func (tools3) Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	tools := make([]json.RawMessage, len(funcs))
	for i, f := range funcs {
		b, err := json.Marshal(struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters,omitempty"`
		}{f.Name, f.Parameters})
		if err != nil {
			return nil, fmt.Errorf("granite: function %q: %w", f.Name, err)
		}
		tools[i] = b
	}
	schema, err := chat.CallSchema(tools, opts.Parallel)
	if err != nil {
		return nil, err
	}
	return grammar.FromJSONSchemaContext(ctx, schema)
}

// tagID is the id of <|tool_call|> in tok, or -1.
func tagID(tok interface{ ID(string) (int32, bool) }) int32 {
	if id, ok := tok.ID(chat.ToolCallTag); ok {
		return id
	}
	return -1
}

// format33 is Granite 3.3's format: family's, with a parser that gives
// <|tool_call|> its text back before the reasoning parser (which passes
// on text, not ids) and takes the <response> tags out of the content.
type format33 struct {
	*family.Format
	once sync.Once
	tag  int32
}

// NewParser implements engine.Format.
func (f *format33) NewParser(opts engine.ParserOptions) engine.Parser {
	f.once.Do(func() {
		f.tag = -1
		if tok, err := f.Tokenizer(); err == nil {
			if t, ok := tok.(interface{ ID(string) (int32, bool) }); ok {
				f.tag = tagID(t)
			}
		}
	})
	return &parser33{inner: f.Format.NewParser(opts), tag: f.tag}
}

type parser33 struct {
	inner engine.Parser
	tag   int32
	resp  chat.ResponseFilter
	out   []engine.Event
}

func (p *parser33) Push(id int32, text string) []engine.Event {
	if id >= 0 && id == p.tag && text == "" {
		text = chat.ToolCallTag
	}
	return p.filter(p.inner.Push(id, text), false)
}

func (p *parser33) Flush() []engine.Event { return p.filter(p.inner.Flush(), true) }

// filter takes the <response> tags out of the content events; text held
// back as a possible tag goes out before the next other event.
func (p *parser33) filter(evs []engine.Event, flush bool) []engine.Event {
	p.out = nil
	for _, e := range evs {
		if e.Kind == engine.EventContent {
			if s := p.resp.Push(e.Text); s != "" {
				e.Text = s
				p.out = append(p.out, e)
			}
			continue
		}
		p.held()
		p.out = append(p.out, e)
	}
	if flush {
		p.held()
	}
	return p.out
}

func (p *parser33) held() {
	if s := p.resp.Flush(); s != "" {
		p.out = append(p.out, engine.Event{Kind: engine.EventContent, Text: s})
	}
}
