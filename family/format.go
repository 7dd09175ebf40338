package family

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/chatfmt/think"
	"github.com/smolgo/smolgo/internal/embedtok"
	"github.com/smolgo/smolgo/tokenizer"
	"github.com/smolgo/smolgo/toolcall"
)

// FormatSpec is a family's language side, what NewFormat turns into an
// engine.Format over a file's tokenizer.
type FormatSpec struct {
	// Render renders a conversation with the family's chat template,
	// ending with the assistant's header, and returns the byte ranges
	// ([start, end)) that came from the caller (message contents, tool
	// definitions): those are tokenized as plain text unless
	// PromptOptions.ParseSpecial, so a user cannot forge the template's
	// markers. f is the model's file, for templates that read its
	// metadata.
	Render func(f *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (text string, literal [][2]int, err error)
	// EndOfTurn lists the tokens, by text, that end an answer besides the
	// vocabulary's end-of-generation tokens (<|im_end|>, <|eot_id|>,
	// <end_of_turn>). Those the vocabulary lacks are ignored.
	EndOfTurn []string
	// Reasoning says the model writes its reasoning in <think>…</think>
	// (SmolLM3, Qwen3), which the parser separates from the answer.
	Reasoning bool
	// ReasoningTags are the reasoning block's open and close tags when
	// they are not <think> and </think> (a template's [THINK] [/THINK],
	// <seed:think> </seed:think>); zero for <think>.
	ReasoningTags [2]string
	// ReasoningStarted reports whether the prompt rendered with this
	// thinking setting already opened the reasoning block (a generation
	// prompt that ends with <think>), so that the answer starts inside
	// it; nil for never.
	ReasoningStarted func(thinking *bool) bool
	// Template is, for a format rendered by the Jinja engine from a chat
	// template (TemplateSpec), what was read from the template; nil for a
	// hand-written format.
	Template *Markers
	// Tools is the syntax of the model's tool calls; nil for a model
	// without them (a prompt with tools is then an error naming the
	// architecture).
	Tools ToolSyntax
	// Parser, if set, reads the answers instead of the parsers Reasoning
	// and Tools describe, for a model whose answers are not reasoning tags
	// followed by text with calls in it: gpt-oss's harmony messages, each
	// on a channel (reasoning, answer, call). It returns the parser of one
	// answer; tok is the model's vocabulary (nil without one). Tools still
	// says that the model takes tools and gives the forced-call grammar.
	Parser func(tok *tokenizer.Tokenizer, opts engine.ParserOptions) engine.Parser
}

// ToolSyntax is how a model writes tool calls: a parser that reads them out
// of the answer's text as it streams, and a grammar that forces an answer
// to be calls (tool_choice "required" or a named function).
type ToolSyntax interface {
	// NewParser returns a parser for one answer; tok is the model's
	// vocabulary, for marker tokens (nil without one).
	NewParser(tok *tokenizer.Tokenizer) ToolParser
	Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error)
}

// ToolParser reads one answer's text (after reasoning is taken out) into
// text, calls and malformed calls, holding back what could start a call.
// Push takes a token's id (-1 when the text is not one whole token) and
// its text. toolcall.Parser is one.
type ToolParser interface {
	Push(id int32, text string) []toolcall.Event
	Flush() []toolcall.Event
}

// SpecialMarkers is implemented by a ToolSyntax whose markers are special
// tokens of the model's vocabulary, which decoding leaves out of the text
// (LFM2's <|tool_call_start|> and <|tool_call_end|>). When an answer is
// read for tool calls, the format's parser gives those tokens their text
// back, so that the reasoning parser in front passes them on and the tool
// parser sees a marker the same whether the model wrote it as its token
// or a grammar spelled it with ordinary ones.
type SpecialMarkers interface {
	MarkerTexts() []string
}

// FramedSyntax is implemented by a ToolSyntax whose answers carry its
// markup even when the request has no tools: functionary v3.2 opens its
// text to the user with the recipient line "all". The format reads such
// answers with NewTextParser, which takes the markup out and reads no
// calls.
type FramedSyntax interface {
	ToolSyntax
	NewTextParser() ToolParser
}

// TypedToolSyntax is a ToolSyntax whose parser reads calls by the
// request's tool definitions (engine.ParserOptions.ToolDefinitions):
// Qwen3-Coder writes each argument as raw text, which becomes a JSON value
// by the type its schema gives it. Format uses NewTypedParser instead of
// NewParser for it.
type TypedToolSyntax interface {
	ToolSyntax
	NewTypedParser(tok *tokenizer.Tokenizer, tools []json.RawMessage) ToolParser
}

// Hermes is the tool-call syntax of SmolLM3, Qwen2.5 and Qwen3 (and of the
// Hermes models it is named after): each call a JSON object with "name"
// and "arguments" between <tool_call> and </tool_call> lines.
var Hermes ToolSyntax = hermes{}

type hermes struct{}

func (hermes) NewParser(*tokenizer.Tokenizer) ToolParser {
	return hermesParser{toolcall.NewParser(-1, -1)}
}

func (hermes) Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	return grammar.ToolCallsContext(ctx, funcs, opts)
}

// hermesParser reads the tags as text: where they are tokens they decode to
// their text too.
type hermesParser struct{ p *toolcall.Parser }

func (h hermesParser) Push(_ int32, text string) []toolcall.Event {
	return withTags(h.p.Push(-1, text))
}
func (h hermesParser) Flush() []toolcall.Event { return withTags(h.p.Flush()) }

// withTags gives malformed calls their tags back in Raw, so that the text
// shown for them is what the model wrote.
func withTags(evs []toolcall.Event) []toolcall.Event {
	for i := range evs {
		if evs[i].Kind == toolcall.KindError {
			evs[i].Raw = toolcall.OpenTag + evs[i].Raw + toolcall.CloseTag
		}
	}
	return evs
}

// Format is an engine.Format made from a FormatSpec and a file's tokenizer,
// read on first use (so a file without one still loads, for Forward; its
// conversations then fail with the tokenizer's error). It is safe for
// concurrent use.
type Format struct {
	spec FormatSpec
	file *gguf.File

	once sync.Once
	tok  *tokenizer.Tokenizer
	err  error
	eot  []int32 // ids of spec.EndOfTurn in the vocabulary
	// ids of the reasoning tags, or -1 when they are not single tokens
	thinkOpen, thinkClose int32
	// the tool syntax's special markers by id (SpecialMarkers)
	markers map[int32]string

	embOnce sync.Once // the special tokens around embedding inputs (embed.go)
	emb     embedtok.Special
	embErr  error
}

// NewFormat returns the format spec describes over file f's tokenizer.
func NewFormat(f *gguf.File, spec FormatSpec) *Format {
	return &Format{spec: spec, file: f, thinkOpen: -1, thinkClose: -1}
}

// Spec returns the format's description.
func (f *Format) Spec() FormatSpec { return f.spec }

func (f *Format) tokenizer() (*tokenizer.Tokenizer, error) {
	f.once.Do(func() {
		f.tok, f.err = tokenizer.FromGGUF(f.file)
		if f.err != nil {
			return
		}
		for _, w := range f.tok.Warnings() {
			slog.Warn("tokenizer: " + w) // llama.cpp warns the same at load
		}
		for _, s := range f.spec.EndOfTurn {
			if id, ok := f.tok.ID(s); ok {
				f.eot = append(f.eot, id)
			}
		}
		open, close := f.reasoningTags()
		if id, ok := f.tok.ID(open); ok {
			f.thinkOpen = id
		}
		if id, ok := f.tok.ID(close); ok {
			f.thinkClose = id
		}
		if sm, ok := f.spec.Tools.(SpecialMarkers); ok {
			for _, m := range sm.MarkerTexts() {
				if id, ok := f.tok.ID(m); ok {
					if f.markers == nil {
						f.markers = map[int32]string{}
					}
					f.markers[id] = m
				}
			}
		}
	})
	return f.tok, f.err
}

// reasoningTags returns the tags of the reasoning block.
func (f *Format) reasoningTags() (open, close string) {
	if t := f.spec.ReasoningTags; t[0] != "" && t[1] != "" {
		return t[0], t[1]
	}
	return think.OpenTag, think.CloseTag
}

// PromptText renders msgs as Prompt does and returns the text itself,
// special tokens written out (llama-server's /apply-template).
func (f *Format) PromptText(msgs []engine.Message, opts engine.PromptOptions) (string, error) {
	if len(opts.Tools) > 0 && f.spec.Tools == nil {
		return "", errNoTools(f.file)
	}
	text, _, err := f.spec.Render(f.file, msgs, opts)
	return text, err
}

// Tokenizer returns the model's tokenizer (engine.Format).
func (f *Format) Tokenizer() (engine.Tokenizer, error) {
	t, err := f.tokenizer()
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Prompt renders msgs with the family's template, ending with the
// assistant's header, and tokenizes the text (engine.Format). Message
// contents are plain text unless opts.ParseSpecial. A BOS token is
// prepended when the tokenizer asks for one and the template did not write
// it.
func (f *Format) Prompt(msgs []engine.Message, opts engine.PromptOptions) ([]int32, error) {
	tok, err := f.tokenizer()
	if err != nil {
		return nil, err
	}
	if len(opts.Tools) > 0 && f.spec.Tools == nil {
		return nil, errNoTools(f.file)
	}
	text, literal, err := f.spec.Render(f.file, msgs, opts)
	if err != nil {
		return nil, err
	}
	ids := encodeWithImages(tok, text, literal, opts.ParseSpecial, imageCount(msgs))
	if bos, ok := tok.BOS(); ok && tok.AddBOS() && (len(ids) == 0 || ids[0] != bos) {
		ids = append([]int32{bos}, ids...)
	}
	return ids, nil
}

// imageCount is the number of images the messages carry.
func imageCount(msgs []engine.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Images)
	}
	return n
}

// encodeWithImages tokenizes a rendered prompt (literal: the byte ranges
// from the caller, plain text unless parseSpecial) and, when the messages
// carry images, puts engine.ImageHole(k) where the k-th image marker
// written by a message (inside a literal range) stands, tokenizing the
// text around them apart, as mtmd does.
func encodeWithImages(tok *tokenizer.Tokenizer, text string, literal [][2]int, parseSpecial bool, images int) []int32 {
	encode := func(a, b int) []int32 {
		if parseSpecial {
			return tok.Encode(text[a:b], true)
		}
		var lit [][2]int
		for _, r := range literal {
			if lo, hi := max(r[0], a), min(r[1], b); lo < hi {
				lit = append(lit, [2]int{lo - a, hi - a})
			}
		}
		return tok.EncodeMarked(text[a:b], lit)
	}
	if images == 0 {
		return encode(0, len(text))
	}
	var ids []int32
	from, k := 0, 0
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], engine.ImageMarker)
		if j < 0 {
			break
		}
		at := i + j
		i = at + len(engine.ImageMarker)
		inside := false
		for _, r := range literal {
			inside = inside || (r[0] <= at && at+len(engine.ImageMarker) <= r[1])
		}
		if !inside {
			continue // the template's own text, not a message's marker
		}
		ids = append(ids, encode(from, at)...)
		ids = append(ids, engine.ImageHole(k))
		k++
		from = i
	}
	return append(ids, encode(from, len(text))...)
}

func errNoTools(f *gguf.File) error {
	arch, _ := f.Architecture()
	return fmt.Errorf("family: the %s chat format has no tool calls (its template defines none)", arch)
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

// EndOfTurn reports whether id ends the model's answer (engine.Format).
func (f *Format) EndOfTurn(id int32) bool {
	tok, err := f.tokenizer()
	if err != nil {
		return false
	}
	if tok.IsEndOfGeneration(id) {
		return true
	}
	for _, e := range f.eot {
		if id == e {
			return true
		}
	}
	return false
}

// ToolCallGrammar returns the grammar that forces calls of funcs in the
// model's own syntax (engine.ToolCaller).
func (f *Format) ToolCallGrammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	if f.spec.Tools == nil {
		return nil, errNoTools(f.file)
	}
	return f.spec.Tools.Grammar(ctx, funcs, opts)
}

// NewParser returns a parser that splits an answer into reasoning (the
// <think> block, white space around the tags trimmed, where the family
// reasons), content and, with opts.Tools, the calls read out of the content
// in the family's syntax (engine.Format); or the spec's own Parser.
func (f *Format) NewParser(opts engine.ParserOptions) engine.Parser {
	f.tokenizer() // the marker ids; -1 (text matching only) without a tokenizer
	if f.spec.Parser != nil {
		return f.spec.Parser(f.tok, opts)
	}
	p := &parser{}
	if f.spec.Reasoning {
		open, close := f.reasoningTags()
		started := f.spec.ReasoningStarted != nil && f.spec.ReasoningStarted(opts.Thinking)
		p.think = think.NewParser(f.thinkOpen, f.thinkClose, think.ParserOptions{TrimSpace: true, Open: open, Close: close,
			StartInReasoning: started})
	}
	if opts.Tools && f.spec.Tools != nil {
		if ts, ok := f.spec.Tools.(TypedToolSyntax); ok {
			p.tools = ts.NewTypedParser(f.tok, opts.ToolDefinitions)
		} else {
			p.tools = f.spec.Tools.NewParser(f.tok)
		}
		p.markers = f.markers
	} else if fs, ok := f.spec.Tools.(FramedSyntax); ok {
		p.tools = fs.NewTextParser()
	}
	return p
}

// parser chains the reasoning parser and, with tools, the tool-call parser
// over the content it finds.
type parser struct {
	think *think.Parser // nil: no reasoning
	tools ToolParser    // nil: no tools
	// markers are the tool syntax's special tokens, given their text back
	markers map[int32]string
	out     []engine.Event
}

func (p *parser) Push(id int32, text string) []engine.Event {
	p.out = nil
	if m, ok := p.markers[id]; ok && text == "" {
		text = m
	}
	if p.think == nil {
		p.content(id, text)
		return p.out
	}
	p.segments(p.think.Push(id, text))
	return p.out
}

func (p *parser) Flush() []engine.Event {
	p.out = nil
	if p.think != nil {
		p.segments(p.think.Flush())
	}
	if p.tools != nil {
		p.toolEvents(p.tools.Flush())
	}
	return p.out
}

func (p *parser) segments(segs []think.Segment) {
	for _, s := range segs {
		switch {
		case s.Text == "":
		case s.Kind == think.Reasoning:
			p.out = append(p.out, engine.Event{Kind: engine.EventReasoning, Text: s.Text})
		default:
			p.content(-1, s.Text)
		}
	}
}

func (p *parser) content(id int32, text string) {
	switch {
	case text == "" && id < 0:
	case p.tools != nil:
		p.toolEvents(p.tools.Push(id, text))
	case text != "":
		p.out = append(p.out, engine.Event{Kind: engine.EventContent, Text: text})
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
			p.out = append(p.out, engine.Event{Kind: engine.EventToolError, Text: ev.Raw, Err: ev.Err})
		}
	}
}
