// Package toolcall reads the function calls a model writes into its answer.
//
// SmolLM3 (and Hermes-style models in general) calls a tool by writing a
// JSON object between tags:
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// In SmolLM3's vocabulary <tool_call> and </tool_call> are single tokens
// (128015 and 128016), but a model can also spell them out in pieces
// ("<tool", "_call>"), and what comes between them is whatever the model
// wrote: usually a call, sometimes broken JSON. A Parser takes the generated
// tokens one by one and splits the stream into answer text and calls: it
// holds back text that could be the start of a tag until the next token
// decides, never lets a tag leak into the text, and turns a call it cannot
// read into an error event (with the raw text) instead of failing the
// generation.
//
//	p := toolcall.NewParser(128015, 128016)
//	for id, text := range generated {
//		for _, ev := range p.Push(id, text) {
//			switch ev.Kind {
//			case toolcall.KindText:  // ev.Text: answer text, ready to stream
//			case toolcall.KindCall:  // ev.Call.Name, ev.Call.Arguments
//			case toolcall.KindError: // ev.Err, ev.Raw
//			}
//		}
//	}
//	events := p.Flush() // at the end of the turn
//
// Parse does the same for a whole answer at once.
package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The tags around a call.
const (
	OpenTag  = "<tool_call>"
	CloseTag = "</tool_call>"
)

// MaxCallBytes bounds the text of one call; a longer one is an error event
// and its text is dropped.
const MaxCallBytes = 1 << 20

// ErrMalformed is wrapped by the errors of calls that cannot be read.
var ErrMalformed = errors.New("malformed tool call")

// Call is one function call.
type Call struct {
	Name string `json:"name"`
	// Arguments is a JSON object ({} when the model gave none).
	Arguments json.RawMessage `json:"arguments"`
}

// Text writes a call the way SmolLM3 (and Hermes-style models) write one,
// as the tool instructions of its chat template show:
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// Arguments are written as given ({} when empty).
func Text(c Call) string {
	name, _ := json.Marshal(c.Name)
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return OpenTag + "\n{\"name\": " + string(name) + ", \"arguments\": " + string(args) + "}\n" + CloseTag
}

// Kind says what an Event holds.
type Kind int

const (
	KindText  Kind = iota // answer text outside the tags
	KindCall              // a call that was read
	KindError             // a call that could not be read
)

// Event is a piece of the parsed stream.
type Event struct {
	Kind Kind
	Text string // KindText
	Call Call   // KindCall
	Err  error  // KindError: wraps ErrMalformed and says what is wrong
	Raw  string // KindError: the text between the tags (cut at MaxCallBytes)
}

// Parser splits a stream of generated tokens into text and calls. It is
// for one generated turn and not safe for concurrent use.
type Parser struct {
	open, close     string // the tags
	openID, closeID int32
	inCall          bool
	held            string // text that may be the start of a tag
	body            strings.Builder
	overflow        bool
}

// NewParser returns a parser that knows the ids of the tags as single tokens
// (SmolLM3: 128015 and 128016); pass -1 for a tag that is not one token.
// Tags written as text are recognized either way.
func NewParser(openID, closeID int32) *Parser {
	return NewTagParser(OpenTag, CloseTag, openID, closeID)
}

// NewTagParser returns a parser for calls between other tags than
// <tool_call> and </tool_call>, with the same rules: Phi-4-mini writes
// <|tool_call|>[{"name": …, "arguments": …}]<|/tool_call|>, for example.
// openID and closeID are the tags' ids as single tokens, or -1. The tags
// must be non-empty and neither may contain the other.
func NewTagParser(open, close string, openID, closeID int32) *Parser {
	if open == "" || close == "" || strings.Contains(open, close) || strings.Contains(close, open) {
		panic("toolcall: NewTagParser: the tags must be non-empty and neither may contain the other")
	}
	return &Parser{open: open, close: close, openID: openID, closeID: closeID}
}

// Push takes one generated token, its id and its text, and returns the
// events it completes (often none: text that might start a tag is held
// back, and a call is only returned once it is closed).
func (p *Parser) Push(id int32, text string) []Event {
	var out []Event
	switch {
	case id >= 0 && id == p.openID:
		out = p.flushHeld(out)
		if p.inCall { // a new call before the last one was closed
			out = p.endCall(out, false)
		}
		p.inCall = true
		return out
	case id >= 0 && id == p.closeID:
		out = p.flushHeld(out)
		if p.inCall {
			out = p.endCall(out, true)
		} // a close tag outside a call is dropped
		return out
	}
	return p.text(text, out)
}

// Flush ends the stream: held-back text is returned as text, and a call
// that was never closed is read if it is complete JSON (models sometimes
// stop right after the object) or else returned as an error.
func (p *Parser) Flush() []Event {
	out := p.flushHeld(nil)
	if p.inCall {
		out = p.endCall(out, false)
	}
	return out
}

// InCall reports whether the parser is inside an unclosed call.
func (p *Parser) InCall() bool { return p.inCall }

// flushHeld releases held-back text as what it is.
func (p *Parser) flushHeld(out []Event) []Event {
	h := p.held
	p.held = ""
	if h == "" {
		return out
	}
	if p.inCall {
		p.addBody(h)
		return out
	}
	return appendText(out, h)
}

// text consumes s (after what was held back). Both tags are looked for
// in and out of a call: an open tag inside a call ends the unclosed call and
// starts a new one, a close tag outside a call is dropped, as with the tags
// as single tokens.
func (p *Parser) text(s string, out []Event) []Event {
	s = p.held + s
	p.held = ""
	for s != "" {
		i, tag := p.firstTag(s)
		if i < 0 {
			keep := p.partialTag(s)
			out = p.emit(out, s[:len(s)-keep])
			p.held = s[len(s)-keep:]
			break
		}
		out = p.emit(out, s[:i])
		switch {
		case tag == p.open && p.inCall:
			out = p.endCall(out, false)
			p.inCall = true
		case tag == p.open:
			p.inCall = true
		case p.inCall:
			out = p.endCall(out, true)
		}
		s = s[i+len(tag):]
	}
	return out
}

// emit adds s to the call body or the text.
func (p *Parser) emit(out []Event, s string) []Event {
	if p.inCall {
		p.addBody(s)
		return out
	}
	return appendText(out, s)
}

// firstTag finds the first tag in s.
func (p *Parser) firstTag(s string) (int, string) {
	i, j := strings.Index(s, p.open), strings.Index(s, p.close)
	switch {
	case i >= 0 && (j < 0 || i < j):
		return i, p.open
	case j >= 0:
		return j, p.close
	}
	return -1, ""
}

// partialTag returns the length of the longest suffix of s that starts a
// tag (and must be held back).
func (p *Parser) partialTag(s string) int {
	for n := min(max(len(p.open), len(p.close))-1, len(s)); n > 0; n-- {
		suffix := s[len(s)-n:]
		if strings.HasPrefix(p.open, suffix) || strings.HasPrefix(p.close, suffix) {
			return n
		}
	}
	return 0
}

func appendText(out []Event, s string) []Event {
	if s == "" {
		return out
	}
	if n := len(out); n > 0 && out[n-1].Kind == KindText {
		out[n-1].Text += s
		return out
	}
	return append(out, Event{Kind: KindText, Text: s})
}

func (p *Parser) addBody(s string) {
	if p.overflow {
		return
	}
	if p.body.Len()+len(s) > MaxCallBytes {
		p.body.WriteString(s[:MaxCallBytes-p.body.Len()])
		p.overflow = true
		return
	}
	p.body.WriteString(s)
}

// endCall reads the body of the call that just ended.
func (p *Parser) endCall(out []Event, closed bool) []Event {
	raw := p.body.String()
	overflow := p.overflow
	p.body.Reset()
	p.inCall, p.overflow = false, false
	if overflow {
		return append(out, Event{Kind: KindError, Raw: raw, Err: fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxCallBytes)})
	}
	calls, err := parseBody(raw)
	if err != nil {
		if closed {
			err = fmt.Errorf("%w: %v", ErrMalformed, err)
		} else {
			err = fmt.Errorf("%w: %s never came and the text is not a complete call (%v)", ErrMalformed, p.close, err)
		}
		return append(out, Event{Kind: KindError, Raw: raw, Err: err})
	}
	for _, c := range calls {
		out = append(out, Event{Kind: KindCall, Call: c})
	}
	return out
}

// parseBody reads the JSON between the tags: one call object, or an array
// of them.
func parseBody(raw string) ([]Call, error) {
	body := bytes.TrimSpace([]byte(raw))
	if len(body) == 0 {
		return nil, errors.New("empty")
	}
	if !json.Valid(body) {
		var x any
		err := json.Unmarshal(body, &x)
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	var objs []json.RawMessage
	if body[0] == '[' {
		if err := json.Unmarshal(body, &objs); err != nil || len(objs) == 0 {
			return nil, errors.New("an array of calls must hold at least one call object")
		}
	} else {
		objs = []json.RawMessage{body}
	}
	calls := make([]Call, 0, len(objs))
	for _, o := range objs {
		c, err := parseCall(o)
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	return calls, nil
}

func parseCall(o json.RawMessage) (Call, error) {
	var f struct {
		Name       *string         `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(o, &f); err != nil {
		return Call{}, errors.New("a call must be a JSON object with a name and arguments")
	}
	if f.Name == nil || *f.Name == "" {
		return Call{}, errors.New(`the call has no "name"`)
	}
	args := bytes.TrimSpace(f.Arguments)
	if len(args) == 0 {
		args = bytes.TrimSpace(f.Parameters) // some models say "parameters"
	}
	switch {
	case len(args) == 0 || string(args) == "null":
		args = []byte("{}")
	case args[0] == '"':
		// OpenAI's wire format: the arguments as a string of JSON.
		var s string
		_ = json.Unmarshal(args, &s)
		inner := bytes.TrimSpace([]byte(s))
		if len(inner) == 0 || inner[0] != '{' || !json.Valid(inner) {
			return Call{}, fmt.Errorf("the arguments of %q are a string that is not a JSON object", *f.Name)
		}
		args = inner
	case args[0] != '{':
		return Call{}, fmt.Errorf("the arguments of %q are not a JSON object", *f.Name)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return Call{}, err
	}
	return Call{Name: *f.Name, Arguments: compact.Bytes()}, nil
}

// Parse splits a whole answer into its text (outside the tags, joined) and
// calls. Calls that cannot be read are returned joined in err, which wraps
// ErrMalformed; the readable calls and the text are returned regardless.
func Parse(answer string) (text string, calls []Call, err error) {
	p := NewParser(-1, -1)
	var sb strings.Builder
	var errs []error
	for _, ev := range append(p.Push(-1, answer), p.Flush()...) {
		switch ev.Kind {
		case KindText:
			sb.WriteString(ev.Text)
		case KindCall:
			calls = append(calls, ev.Call)
		case KindError:
			errs = append(errs, ev.Err)
		}
	}
	return sb.String(), calls, errors.Join(errs...)
}
