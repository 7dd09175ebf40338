package chatfmt

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/toolcall"
)

// DeepSeek's tool-call markers (special tokens of its vocabulary).
const (
	DeepSeekCallsBegin = "<｜tool▁calls▁begin｜>"
	DeepSeekCallsEnd   = "<｜tool▁calls▁end｜>"
	DeepSeekCallBegin  = "<｜tool▁call▁begin｜>"
	DeepSeekCallEnd    = "<｜tool▁call▁end｜>"
	DeepSeekSep        = "<｜tool▁sep｜>"
)

// DeepSeekParser reads the tool calls of DeepSeek R1 (and its distills)
// and V3.x out of a streamed answer:
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//	```json
//	{"city": "Paris"}
//	```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
// and V3.1's <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>.
// Text before the calls streams as text; a partial marker is held back.
// The markers must reach it as text: decode special tokens (the format's
// parser gets each token's text). A call it cannot read is a KindError
// event with the raw text.
type DeepSeekParser struct {
	inCalls bool
	buf     string
	out     []toolcall.Event
}

// NewDeepSeekParser returns a parser for one answer.
func NewDeepSeekParser() *DeepSeekParser { return &DeepSeekParser{} }

// Push takes a token's text (the id is not needed).
func (p *DeepSeekParser) Push(_ int32, text string) []toolcall.Event {
	p.out = nil
	p.buf += text
	p.scan(false)
	return p.out
}

// Flush ends the answer.
func (p *DeepSeekParser) Flush() []toolcall.Event {
	p.out = nil
	p.scan(true)
	return p.out
}

func (p *DeepSeekParser) scan(final bool) {
	for {
		if !p.inCalls {
			i := strings.Index(p.buf, DeepSeekCallsBegin)
			j := strings.Index(p.buf, DeepSeekCallBegin)
			if i < 0 || (j >= 0 && j < i) {
				i = j
			}
			if i < 0 {
				keep := 0
				if !final {
					keep = max(partialSuffix(p.buf, DeepSeekCallsBegin), partialSuffix(p.buf, DeepSeekCallBegin))
				}
				p.text(p.buf[:len(p.buf)-keep])
				p.buf = p.buf[len(p.buf)-keep:]
				return
			}
			p.text(p.buf[:i])
			p.buf = strings.TrimPrefix(p.buf[i:], DeepSeekCallsBegin)
			p.inCalls = true
		}
		s := strings.TrimLeft(p.buf, " \n")
		switch {
		case strings.HasPrefix(s, DeepSeekCallsEnd):
			p.buf = s[len(DeepSeekCallsEnd):]
			p.inCalls = false
			continue
		case strings.HasPrefix(s, DeepSeekCallBegin):
			end := strings.Index(s, DeepSeekCallEnd)
			if end < 0 {
				if final {
					p.out = append(p.out, Malformed(s, fmt.Errorf("the answer ended inside a call")))
					p.buf = ""
				}
				return
			}
			p.call(s[len(DeepSeekCallBegin):end], s[:end+len(DeepSeekCallEnd)])
			p.buf = s[end+len(DeepSeekCallEnd):]
			continue
		case s == "" || (!final && (strings.HasPrefix(DeepSeekCallsEnd, s) || strings.HasPrefix(DeepSeekCallBegin, s))):
			if final {
				p.buf = ""
			}
			return
		}
		// text after the calls without the closing marker
		p.inCalls = false
		p.buf = s
	}
}

func (p *DeepSeekParser) text(s string) {
	if s != "" {
		p.out = append(p.out, toolcall.Event{Kind: toolcall.KindText, Text: s})
	}
}

// call reads one call's body: [type<｜tool▁sep｜>]name then arguments.
func (p *DeepSeekParser) call(body, raw string) {
	typ, rest, ok := strings.Cut(body, DeepSeekSep)
	if !ok {
		p.out = append(p.out, Malformed(raw, fmt.Errorf("no %s in the call", DeepSeekSep)))
		return
	}
	var name, args string
	if typ == "function" || typ == "" { // R1: function<sep>name\n```json\n{…}\n```
		name, args, _ = strings.Cut(rest, "\n")
	} else { // V3.1: name<sep>{…}
		name, args = typ, rest
	}
	args = strings.TrimSpace(args)
	args = strings.TrimPrefix(args, "```json")
	args = strings.TrimSuffix(args, "```")
	args = strings.TrimSpace(args)
	if args == "" {
		args = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		p.out = append(p.out, Malformed(raw, fmt.Errorf("the arguments are not a JSON object: %v", err)))
		return
	}
	p.out = append(p.out, toolcall.Event{Kind: toolcall.KindCall, Call: toolcall.Call{Name: strings.TrimSpace(name), Arguments: json.RawMessage(args)}})
}
