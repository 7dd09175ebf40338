package enginetest

import (
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/toolcall"
)

// Format is a fake model's language side, in SmolLM3's manner: ChatML turns
// (<|im_start|>role\n…<|im_end|>\n), reasoning in a <think> block, tools
// listed in a system turn and calls written as Hermes <tool_call> blocks
// (toolcall.Text), which its parser reads back. It implements engine.Format.
//
// The prompt of msgs is
//
//	[<|im_start|>system\nTools:\n<tool>\n…<|im_end|>\n]   with tools
//	<|im_start|>ROLE\nCONTENT[\n<tool_call>…</tool_call>]<|im_end|>\n   per message
//	<|im_start|>assistant\n[<think>\n\n</think>\n]   the empty block when thinking is off
//
// Message contents are plain text unless PromptOptions.ParseSpecial.
type Format struct {
	Tok *Tokenizer
}

// Prompt renders and tokenizes msgs (engine.Format).
func (f *Format) Prompt(msgs []engine.Message, opts engine.PromptOptions) ([]int32, error) {
	var ids []int32
	special := func(id int32) { ids = append(ids, id) }
	text := func(s string) { ids = append(ids, f.Tok.Encode(s, opts.ParseSpecial)...) }
	markup := func(s string) { ids = f.Tok.appendPlain(ids, s) }
	if len(opts.Tools) > 0 {
		special(ImStart)
		markup("system\nTools:\n")
		for _, t := range opts.Tools {
			text(string(t))
			markup("\n")
		}
		special(ImEnd)
		markup("\n")
	}
	for _, m := range msgs {
		special(ImStart)
		markup(m.Role + "\n")
		text(m.Content)
		for i, c := range m.ToolCalls {
			if i > 0 || m.Content != "" {
				markup("\n")
			}
			text(toolcall.Text(toolcall.Call{Name: c.Name, Arguments: c.Arguments}))
		}
		special(ImEnd)
		markup("\n")
	}
	special(ImStart)
	markup("assistant\n")
	if opts.Thinking != nil && !*opts.Thinking {
		special(ThinkOpen)
		markup("\n\n")
		special(ThinkClose)
		markup("\n")
	}
	return ids, nil
}

// NewDecoder returns a streaming detokenizer that leaves special tokens out.
func (f *Format) NewDecoder() engine.Decoder { return &decoder{t: f.Tok} }

// EndOfTurn reports ImEnd.
func (f *Format) EndOfTurn(id int32) bool { return id == ImEnd }

// Tokenizer returns f.Tok.
func (f *Format) Tokenizer() (engine.Tokenizer, error) { return f.Tok, nil }

// NewParser returns a parser that splits an answer into reasoning (the
// <think> block, white space after its tags and at its end trimmed), content
// and, with opts.Tools, the <tool_call> calls read out of the content.
func (f *Format) NewParser(opts engine.ParserOptions) engine.Parser {
	p := &parser{}
	if opts.Tools {
		p.tools = toolcall.NewParser(-1, -1)
	}
	return p
}

type parser struct {
	think    bool
	afterTag bool
	held     string // trailing white space of the reasoning so far
	tools    *toolcall.Parser
	out      []engine.Event
}

func (p *parser) Push(id int32, text string) []engine.Event {
	p.out = nil
	switch id {
	case ThinkOpen:
		p.think, p.afterTag = true, true
		return nil
	case ThinkClose:
		p.think, p.afterTag, p.held = false, true, ""
		return nil
	}
	if p.afterTag {
		if text = strings.TrimLeft(text, " \n"); text == "" {
			return nil
		}
		p.afterTag = false
	}
	if p.think {
		t := p.held + text
		trimmed := strings.TrimRight(t, " \n")
		p.held = t[len(trimmed):]
		if trimmed != "" {
			p.out = append(p.out, engine.Event{Kind: engine.EventReasoning, Text: trimmed})
		}
		return p.out
	}
	p.content(text)
	return p.out
}

func (p *parser) Flush() []engine.Event {
	p.out = nil
	if p.tools != nil {
		p.toolEvents(p.tools.Flush())
	}
	return p.out
}

func (p *parser) content(text string) {
	if text == "" {
		return
	}
	if p.tools == nil {
		p.out = append(p.out, engine.Event{Kind: engine.EventContent, Text: text})
		return
	}
	p.toolEvents(p.tools.Push(-1, text))
}

func (p *parser) toolEvents(evs []toolcall.Event) {
	for _, ev := range evs {
		switch ev.Kind {
		case toolcall.KindText:
			if ev.Text != "" {
				p.out = append(p.out, engine.Event{Kind: engine.EventContent, Text: ev.Text})
			}
		case toolcall.KindCall:
			p.out = append(p.out, engine.Event{Kind: engine.EventToolCall, Text: toolcall.Text(ev.Call),
				ToolCall: &engine.ToolCall{Name: ev.Call.Name, Arguments: ev.Call.Arguments}})
		default:
			p.out = append(p.out, engine.Event{Kind: engine.EventToolError, Text: toolcall.OpenTag + ev.Raw + toolcall.CloseTag, Err: ev.Err})
		}
	}
}

// ParseChatML returns the messages of a prompt that Format rendered
// (decoded with its special tokens), without the final assistant header:
// roles and contents as text (tool calls stay in the content, as written).
// A fake model's answer can be computed from it.
func ParseChatML(prompt string) []engine.Message {
	var out []engine.Message
	for _, turn := range strings.Split(prompt, "<|im_start|>")[1:] {
		body, closed := strings.CutSuffix(strings.TrimSuffix(turn, "\n"), "<|im_end|>")
		if !closed {
			continue // the assistant header the answer follows
		}
		role, content, _ := strings.Cut(body, "\n")
		out = append(out, engine.Message{Role: role, Content: content})
	}
	return out
}

// ThinkingOff reports whether a rendered prompt turned reasoning off (it
// ends with the empty think block): an answer to it has no <think> block.
func ThinkingOff(prompt string) bool { return strings.HasSuffix(prompt, "<think>\n\n</think>\n") }
