package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/toolcall"
)

// ParserOptions adjust a Parser.
type ParserOptions struct {
	// Tools makes the parser read calls of the functions namespace as tool
	// calls. Without it a call is a tool error event (the request showed no
	// tools), so that what the model wrote still reaches the caller.
	Tools bool
}

// Vocab is what the parser needs of a vocabulary: the ids of the markers,
// for tokens that arrive with their id and no text. *tokenizer.Tokenizer
// is one.
type Vocab interface {
	ID(s string) (int32, bool)
}

// maxHeader bounds a message header (the text before <|message|>); a longer
// one is not a header, and its text is shown as content.
const maxHeader = 256

// Parser splits gpt-oss's answer, a sequence of harmony messages, into
// reasoning, content and tool calls as its tokens arrive. It is for one
// answer and not safe for concurrent use.
//
// The answer follows the prompt's <|start|>assistant, so it opens with the
// first message's header:
//
//	<|channel|>analysis<|message|>REASONING<|end|>
//	<|start|>assistant<|channel|>final<|message|>ANSWER
//	<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}
//
// The analysis channel is reasoning; the final channel, and commentary
// without a recipient (a preamble before calls), are content. A message
// to functions.NAME on the commentary or analysis channel is a call of
// NAME, with the recipient after the channel or before it (" to=functions.NAME<|channel|>commentary json",
// as the template writes earlier calls); a message to any other recipient
// (gpt-oss's built-in browser and python tools) is a tool error. <|end|>
// ends a message and the model goes on with the next; <|return|> and
// <|call|> end the answer, which is where the engine stops (they are the
// vocabulary's end-of-generation tokens), so Flush ends the last message.
// Markers are read as text, whole or split across tokens (a grammar spells
// them with ordinary tokens), and as ids with no text.
type Parser struct {
	tools   bool
	markers map[int32]string // marker token id → its text

	inBody bool
	header strings.Builder // the current header, before <|message|>
	held   string          // body text that may start an end marker
	msg    message
	out    []engine.Event
}

// message is the message being read.
type message struct {
	kind      int    // what its body is
	recipient string // after to= (a call), or ""
	raw       strings.Builder
	overflow  bool
}

// The kinds of message bodies.
const (
	bodyContent = iota
	bodyReasoning
	bodyCall // the arguments of a call, read whole
)

// endMarkers end a message's body.
var endMarkers = []string{End, Start, Return, Call}

// NewParser returns a parser; vocab (nil: markers as text only) gives the
// ids of the markers.
func NewParser(vocab Vocab, opts ParserOptions) *Parser {
	p := &Parser{tools: opts.Tools, markers: map[int32]string{}}
	if vocab != nil {
		for _, m := range []string{Start, End, Message, Channel, Constrain, Return, Call} {
			if id, ok := vocab.ID(m); ok {
				p.markers[id] = m
			}
		}
	}
	return p
}

// Push takes one generated token, its id (-1 for text that is not one
// token) and its text, and returns the events it completes: reasoning and
// content as they stream (a possible start of a marker held back), a call
// when its message ends.
func (p *Parser) Push(id int32, text string) []engine.Event {
	p.out = nil
	if m, ok := p.markers[id]; ok && text == "" {
		text = m
	}
	p.feed(text)
	return p.out
}

// Flush ends the answer: the last message ends (a call's arguments are
// read), held-back text goes out, and a header that never reached
// <|message|> is dropped.
func (p *Parser) Flush() []engine.Event {
	p.out = nil
	if p.inBody {
		h := p.held
		p.held = ""
		p.body(h)
		p.endMessage()
	}
	p.header.Reset()
	return p.out
}

func (p *Parser) feed(s string) {
	for s != "" {
		if !p.inBody {
			s = p.feedHeader(s)
			continue
		}
		s = p.held + s
		p.held = ""
		i, marker := firstMarker(s)
		if i < 0 {
			keep := partialMarker(s)
			p.body(s[:len(s)-keep])
			p.held = s[len(s)-keep:]
			return
		}
		p.body(s[:i])
		p.endMessage()
		s = s[i+len(marker):]
		if marker == Start {
			p.header.WriteString(Start)
		}
	}
}

// feedHeader adds s to the header until <|message|> and returns what
// follows it (the body's start), or "" while the header goes on.
func (p *Parser) feedHeader(s string) string {
	p.header.WriteString(s)
	h := p.header.String()
	if i := strings.Index(h, Message); i >= 0 {
		p.header.Reset()
		p.begin(h[:i])
		return h[i+len(Message):]
	}
	if !plausibleHeader(h) || len(h) > maxHeader {
		// Not harmony: the text is content, the model's plain answer.
		p.header.Reset()
		p.inBody, p.msg = true, message{kind: bodyContent}
		return h
	}
	return ""
}

// plausibleHeader reports whether h may be the start of a header: white
// space, then a marker or a recipient (to=).
func plausibleHeader(h string) bool {
	h = strings.TrimLeft(h, " \t\r\n")
	for _, start := range []string{"<|", "to="} {
		if strings.HasPrefix(h, start) || strings.HasPrefix(start, h) {
			return true
		}
	}
	return false
}

// begin starts the body of the message whose header is h.
func (p *Parser) begin(h string) {
	channel, recipient := parseHeader(h)
	p.inBody = true
	p.msg = message{}
	p.msg.raw.WriteString(h + Message)
	switch {
	case recipient != "":
		p.msg.kind, p.msg.recipient = bodyCall, recipient
	case channel == "analysis":
		p.msg.kind = bodyReasoning
	default: // final, a commentary preamble, or anything else
		p.msg.kind = bodyContent
	}
}

// parseHeader reads a header: an optional <|start|> and role, then, in
// any order, <|channel|>NAME, to=RECIPIENT and the content type. The last
// channel counts (gpt-oss sometimes writes a stray <|channel|>commentary
// first); a recipient "assistant" is no recipient.
func parseHeader(h string) (channel, recipient string) {
	if rest, ok := strings.CutPrefix(h, Start); ok {
		h = rest
		if i := strings.IndexAny(h, " <"); i >= 0 {
			h = h[i:]
		} else {
			h = ""
		}
	}
	for s := h; ; {
		i := strings.Index(s, Channel)
		if i < 0 {
			break
		}
		s = s[i+len(Channel):]
		channel = word(s)
	}
	for s := h; ; {
		i := strings.Index(s, "to=")
		if i < 0 {
			break
		}
		s = s[i+len("to="):]
		if r := word(s); r != "assistant" {
			recipient = r
		}
	}
	return channel, recipient
}

// word is s up to white space or a marker.
func word(s string) string {
	if i := strings.IndexAny(s, " \t\r\n<"); i >= 0 {
		return s[:i]
	}
	return s
}

// body adds text to the current message.
func (p *Parser) body(s string) {
	if s == "" {
		return
	}
	switch p.msg.kind {
	case bodyReasoning:
		p.emit(engine.EventReasoning, s)
	case bodyContent:
		p.emit(engine.EventContent, s)
	default:
		if p.msg.overflow {
			return
		}
		if p.msg.raw.Len()+len(s) > toolcall.MaxCallBytes {
			p.msg.overflow = true
			return
		}
		p.msg.raw.WriteString(s)
	}
}

func (p *Parser) emit(kind engine.EventKind, s string) {
	if n := len(p.out); n > 0 && p.out[n-1].Kind == kind {
		p.out[n-1].Text += s
		return
	}
	p.out = append(p.out, engine.Event{Kind: kind, Text: s})
}

// endMessage ends the current message: a call is read.
func (p *Parser) endMessage() {
	p.inBody = false
	if p.msg.kind != bodyCall {
		return
	}
	raw := p.msg.raw.String()
	_, args, _ := strings.Cut(raw, Message)
	name, isFunc := strings.CutPrefix(p.msg.recipient, "functions.")
	var err error
	switch {
	case p.msg.overflow:
		err = fmt.Errorf("%w: longer than %d bytes", toolcall.ErrMalformed, toolcall.MaxCallBytes)
	case !isFunc || name == "":
		err = fmt.Errorf("%w: a message to %q, which is not a function (functions.NAME)", toolcall.ErrMalformed, p.msg.recipient)
	case !p.tools:
		err = fmt.Errorf("%w: a call of %s, but the request has no tools", toolcall.ErrMalformed, name)
	}
	var compact []byte
	if err == nil {
		compact, err = objectArgs(args)
	}
	if err != nil {
		p.out = append(p.out, engine.Event{Kind: engine.EventToolError, Text: raw, Err: err})
		return
	}
	p.out = append(p.out, engine.Event{Kind: engine.EventToolCall, Text: raw,
		ToolCall: &engine.ToolCall{Name: name, Arguments: compact}})
}

// objectArgs reads a call's arguments: a JSON object ({} when empty),
// compacted.
func objectArgs(s string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("%w: the arguments are not valid JSON: %v", toolcall.ErrMalformed, err)
	}
	if buf.Bytes()[0] != '{' {
		return nil, fmt.Errorf("%w: %w", toolcall.ErrMalformed, errors.New("the arguments are not a JSON object"))
	}
	return buf.Bytes(), nil
}

// firstMarker finds the first marker that ends a body.
func firstMarker(s string) (int, string) {
	best, which := -1, ""
	for _, m := range endMarkers {
		if i := strings.Index(s, m); i >= 0 && (best < 0 || i < best) {
			best, which = i, m
		}
	}
	return best, which
}

// partialMarker is the length of the longest suffix of s that starts an
// end marker.
func partialMarker(s string) int {
	for n := min(len(s), len(Return)-1); n > 0; n-- {
		suffix := s[len(s)-n:]
		for _, m := range endMarkers {
			if strings.HasPrefix(m, suffix) {
				return n
			}
		}
	}
	return 0
}
