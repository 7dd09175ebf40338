package smollm3

import (
	"sync"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/smollm3/chat"
	"github.com/smolgo/smolgo/tokenizer"
	"github.com/smolgo/smolgo/toolcall"
)

// Format is SmolLM3's language side, the engine.Format of its models: the
// chat template (package chat), the tokenizer stored in the GGUF file, the
// <think> block and <tool_call> calls. The tokenizer is read from the file
// on first use, so a file without one still loads (for Forward); its
// conversations then fail with the tokenizer's error.
type Format struct {
	file *gguf.File
	now  func() time.Time // the template's date; nil means time.Now

	once sync.Once
	tok  *tokenizer.Tokenizer
	err  error

	// Token ids of the markers, or -1 when the vocabulary lacks them.
	imEnd, thinkOpen, thinkClose int32
}

// NewFormat returns SmolLM3's format over the tokenizer of file f, for
// architectures that speak SmolLM3's chat format (Load uses it; a variant
// architecture registered elsewhere can too).
func NewFormat(f *gguf.File) *Format { return &Format{file: f} }

// tokenizer reads the tokenizer from the file once.
func (f *Format) tokenizer() (*tokenizer.Tokenizer, error) {
	f.once.Do(func() {
		f.tok, f.err = tokenizer.FromGGUF(f.file)
		if f.err != nil {
			return
		}
		f.imEnd = idOf(f.tok, "<|im_end|>")
		f.thinkOpen = idOf(f.tok, chat.OpenTag)
		f.thinkClose = idOf(f.tok, chat.CloseTag)
	})
	return f.tok, f.err
}

func idOf(t *tokenizer.Tokenizer, s string) int32 {
	if id, ok := t.ID(s); ok {
		return id
	}
	return -1
}

// Tokenizer returns the model's tokenizer (engine.Format).
func (f *Format) Tokenizer() (engine.Tokenizer, error) {
	t, err := f.tokenizer()
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Prompt renders msgs with SmolLM3's chat template, ending with the
// assistant's header, and tokenizes the text (engine.Format). Message
// contents are plain text unless opts.ParseSpecial: a user who types
// "<|im_end|>" gets those characters, not the marker, so they cannot forge
// a turn. The template's own markers are always special tokens. A BOS
// token is prepended when the tokenizer asks for one.
func (f *Format) Prompt(msgs []engine.Message, opts engine.PromptOptions) ([]int32, error) {
	tok, err := f.tokenizer()
	if err != nil {
		return nil, err
	}
	text, literal, err := chat.RenderSpans(msgs, chat.Options{EnableThinking: opts.Thinking, Tools: opts.Tools, AddGenerationPrompt: true, Now: f.now})
	if err != nil {
		return nil, err
	}
	var ids []int32
	if opts.ParseSpecial {
		ids = tok.Encode(text, true)
	} else {
		ids = tok.EncodeMarked(text, literal)
	}
	if bos, ok := tok.BOS(); ok && tok.AddBOS() && (len(ids) == 0 || ids[0] != bos) {
		ids = append([]int32{bos}, ids...)
	}
	return ids, nil
}

// NewDecoder returns a streaming detokenizer that leaves special tokens out
// (engine.Format).
func (f *Format) NewDecoder() engine.Decoder {
	tok, err := f.tokenizer()
	if err != nil {
		return brokenDecoder{err}
	}
	return tok.NewStreamDecoder(true)
}

// brokenDecoder is the decoder of a format without a tokenizer; the engine
// never gets that far, since Prompt fails first.
type brokenDecoder struct{ err error }

func (d brokenDecoder) Push(int32) (string, error) { return "", d.err }
func (brokenDecoder) Flush() string                { return "" }

// EndOfTurn reports whether id ends the model's answer: an end-of-generation
// token of the vocabulary, or <|im_end|> (engine.Format).
func (f *Format) EndOfTurn(id int32) bool {
	tok, err := f.tokenizer()
	if err != nil {
		return false
	}
	return tok.IsEndOfGeneration(id) || id == f.imEnd
}

// NewParser returns a parser that splits an answer into reasoning (the
// <think> block, white space around the tags trimmed), content and, with
// opts.Tools, the <tool_call> calls read out of the content
// (engine.Format).
func (f *Format) NewParser(opts engine.ParserOptions) engine.Parser {
	f.tokenizer() // the marker ids; -1 (text matching only) without a tokenizer
	p := &parser{think: chat.NewParser(f.thinkOpen, f.thinkClose, chat.ParserOptions{TrimSpace: true})}
	if opts.Tools {
		// SmolLM3's <tool_call> tokens are not special: they decode to
		// their text, so the tool parser works on text alone.
		p.tools = toolcall.NewParser(-1, -1)
	}
	return p
}

// parser chains the think-block parser and, with tools, the tool-call parser
// over the content it finds.
type parser struct {
	think *chat.Parser
	tools *toolcall.Parser
	out   []engine.Event // the events of the current call (a new slice each call: callers keep them)
}

func (p *parser) Push(id int32, text string) []engine.Event {
	p.out = nil
	p.segments(p.think.Push(id, text))
	return p.out
}

func (p *parser) Flush() []engine.Event {
	p.out = nil
	p.segments(p.think.Flush())
	if p.tools != nil {
		p.toolEvents(p.tools.Flush())
	}
	return p.out
}

func (p *parser) segments(segs []chat.Segment) {
	for _, s := range segs {
		switch {
		case s.Text == "":
		case s.Kind == chat.Reasoning:
			p.out = append(p.out, engine.Event{Kind: engine.EventReasoning, Text: s.Text})
		case p.tools != nil:
			p.toolEvents(p.tools.Push(-1, s.Text))
		default:
			p.out = append(p.out, engine.Event{Kind: engine.EventContent, Text: s.Text})
		}
	}
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
