package chatfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/toolcall"
)

// MarkedCalls describes a tool-call syntax whose calls sit between markers
// (DeepSeek's, Kimi K2's, Mistral's, functionary v3.1's, GLM's): each call
// opens with Begin and ends with End, or, with End "", at the next Begin or
// the end of the answer; section markers around a run of calls (Skip) are
// dropped; Body reads one call's text between its markers.
type MarkedCalls struct {
	Begin, End string
	Skip       []string
	Body       func(body string) ([]toolcall.Call, error)
	// JSONBody says a call's body is a JSON value (after any text before
	// its first "[" or "{"): End is looked for only past the value's end,
	// so that it may appear inside it or before it (Command R+'s
	// Action:\n```json\n[…]```); with End "", the call ends with the value.
	JSONBody bool
}

// MarkedParser splits a streamed answer into text and the calls a
// MarkedCalls syntax describes, holding back text that could be the start
// of a marker. The markers must reach it as text (the format's parser gets
// each token's text, special tokens included). A call it cannot read is a
// KindError event with its raw text. It is for one answer.
type MarkedParser struct {
	syn       MarkedCalls
	inCall    bool
	afterCall bool // the last thing read was a call: white space before the next is dropped
	buf       string
	out       []toolcall.Event
	// With syn.JSONBody: how far into buf the call's JSON value has been
	// scanned, and where it ended (0: not yet).
	valueAt, valueEnd int
	value             scanner
}

// NewMarkedParser returns a parser for one answer.
func NewMarkedParser(syn MarkedCalls) *MarkedParser { return &MarkedParser{syn: syn} }

// Push takes a token's text (the id is not needed).
func (p *MarkedParser) Push(_ int32, text string) []toolcall.Event {
	p.out = nil
	p.buf += text
	p.scan(false)
	return p.out
}

// Flush ends the answer.
func (p *MarkedParser) Flush() []toolcall.Event {
	p.out = nil
	p.scan(true)
	return p.out
}

// dropSkips removes the section markers from s.
func (p *MarkedParser) dropSkips(s string) string {
	for _, k := range p.syn.Skip {
		s = strings.ReplaceAll(s, k, "")
	}
	return s
}

// held returns how many bytes at the end of s could start a marker.
func (p *MarkedParser) held(s string) int {
	n := partialSuffix(s, p.syn.Begin)
	for _, k := range p.syn.Skip {
		n = max(n, partialSuffix(s, k))
	}
	if p.inCall && p.syn.End != "" {
		n = max(n, partialSuffix(s, p.syn.End))
	}
	return n
}

func (p *MarkedParser) scan(final bool) {
	for {
		if !p.inCall {
			i := strings.Index(p.buf, p.syn.Begin)
			if i < 0 {
				keep := 0
				if !final {
					keep = p.held(p.buf)
					if p.afterCall && strings.TrimSpace(p.dropSkips(p.buf[:len(p.buf)-keep])) == "" {
						return // white space after a call: dropped if another call follows
					}
				}
				p.text(p.dropSkips(p.buf[:len(p.buf)-keep]))
				p.buf = p.buf[len(p.buf)-keep:]
				return
			}
			if between := p.dropSkips(p.buf[:i]); !p.afterCall || strings.TrimSpace(between) != "" {
				p.text(between)
			}
			p.buf = p.buf[i+len(p.syn.Begin):]
			p.inCall = true
		}
		end, next := -1, 0
		from := 0
		if p.syn.JSONBody {
			from = p.scanValue()
		}
		switch {
		case p.syn.JSONBody && from < 0: // the value goes on
		case p.syn.End != "":
			if end = strings.Index(p.buf[from:], p.syn.End); end >= 0 {
				end += from
				next = end + len(p.syn.End)
			}
		case p.syn.JSONBody:
			end, next = from, from
		default:
			if end = strings.Index(p.buf, p.syn.Begin); end >= 0 {
				next = end // the next call's Begin is read by the next round
			}
		}
		if end < 0 {
			if !final {
				return
			}
			if p.syn.End != "" || p.syn.JSONBody {
				p.out = append(p.out, Malformed(p.syn.Begin+p.buf, errors.New("the answer ended inside a call")))
				p.buf, p.inCall = "", false
				p.valueAt, p.valueEnd, p.value = 0, 0, scanner{}
				return
			}
			end, next = len(p.buf), len(p.buf)
		}
		body := p.dropSkips(p.buf[:end])
		raw := p.syn.Begin + p.buf[:next]
		p.buf, p.inCall, p.afterCall = p.buf[next:], false, true
		p.valueAt, p.valueEnd, p.value = 0, 0, scanner{}
		calls, err := p.syn.Body(body)
		if err != nil {
			p.out = append(p.out, Malformed(raw, err))
			continue
		}
		for _, c := range calls {
			p.out = append(p.out, toolcall.Event{Kind: toolcall.KindCall, Call: c})
		}
	}
}

// scanValue reads the call's JSON value in buf as far as it goes and
// returns where it ends, or -1 while it goes on.
func (p *MarkedParser) scanValue() int {
	if p.valueEnd > 0 {
		return p.valueEnd
	}
	if !p.value.started {
		i := strings.IndexAny(p.buf[p.valueAt:], "[{")
		if i < 0 {
			p.valueAt = len(p.buf)
			return -1
		}
		p.valueAt += i
	}
	n, done := p.value.feed(p.buf[p.valueAt:])
	p.valueAt += n
	if !done {
		return -1
	}
	p.valueEnd = p.valueAt
	return p.valueEnd
}

func (p *MarkedParser) text(s string) {
	if strings.TrimSpace(s) != "" {
		p.afterCall = false
	}
	if s != "" {
		p.out = append(p.out, toolcall.Event{Kind: toolcall.KindText, Text: s})
	}
}

// objectArgs checks that s is a JSON object (empty: {}) and returns it.
func objectArgs(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return nil, fmt.Errorf("the arguments are not a JSON object: %v", err)
	}
	return json.RawMessage(s), nil
}

// DeepSeek's tool-call markers (special tokens of its vocabulary).
const (
	DeepSeekCallsBegin = "<｜tool▁calls▁begin｜>"
	DeepSeekCallsEnd   = "<｜tool▁calls▁end｜>"
	DeepSeekCallBegin  = "<｜tool▁call▁begin｜>"
	DeepSeekCallEnd    = "<｜tool▁call▁end｜>"
	DeepSeekSep        = "<｜tool▁sep｜>"
)

// DeepSeekCalls is DeepSeek R1's (and its distills') syntax,
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//	```json
//	{"city": "Paris"}
//	```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
// and V3.1's <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>.
var DeepSeekCalls = MarkedCalls{Begin: DeepSeekCallBegin, End: DeepSeekCallEnd, Skip: []string{DeepSeekCallsBegin, DeepSeekCallsEnd},
	Body: func(body string) ([]toolcall.Call, error) {
		typ, rest, ok := strings.Cut(body, DeepSeekSep)
		if !ok {
			return nil, fmt.Errorf("no %s in the call", DeepSeekSep)
		}
		name, args := typ, rest // V3.1: name<sep>{…}
		if typ == "function" {  // R1: function<sep>name\n```json\n{…}\n```
			name, args, _ = strings.Cut(rest, "\n")
		}
		args = strings.TrimSpace(args)
		args = strings.TrimSuffix(strings.TrimPrefix(args, "```json"), "```")
		a, err := objectArgs(args)
		if err != nil {
			return nil, err
		}
		return []toolcall.Call{{Name: strings.TrimSpace(name), Arguments: a}}, nil
	}}

// KimiCalls is Kimi K2's syntax:
// <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>.
var KimiCalls = MarkedCalls{Begin: "<|tool_call_begin|>", End: "<|tool_call_end|>",
	Skip: []string{"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"},
	Body: func(body string) ([]toolcall.Call, error) {
		id, args, ok := strings.Cut(body, "<|tool_call_argument_begin|>")
		if !ok {
			return nil, errors.New("no <|tool_call_argument_begin|> in the call")
		}
		name := strings.TrimPrefix(strings.TrimSpace(id), "functions.")
		if i := strings.LastIndexByte(name, ':'); i >= 0 {
			name = name[:i]
		}
		a, err := objectArgs(args)
		if err != nil {
			return nil, err
		}
		return []toolcall.Call{{Name: name, Arguments: a}}, nil
	}}

// MistralCalls is Mistral's syntax in its three forms: Nemo's
// [TOOL_CALLS][{"name": …, "arguments": …}, …], and Small 3.2's,
// Devstral's and Ministral 3's [TOOL_CALLS]get_weather[CALL_ID]…[ARGS]{…}
// (the call id optional), one [TOOL_CALLS] per call.
var MistralCalls = MarkedCalls{Begin: "[TOOL_CALLS]",
	Body: func(body string) ([]toolcall.Call, error) {
		body = strings.TrimSpace(body)
		if strings.HasPrefix(body, "[") {
			var list []struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				return nil, fmt.Errorf("the calls are not a JSON list: %v", err)
			}
			out := make([]toolcall.Call, len(list))
			for i, c := range list {
				a, err := objectArgs(string(c.Arguments))
				if err != nil || c.Name == "" {
					return nil, fmt.Errorf("call %d: a name and an arguments object are needed", i)
				}
				out[i] = toolcall.Call{Name: c.Name, Arguments: a}
			}
			return out, nil
		}
		name, args, ok := strings.Cut(body, "[ARGS]")
		if !ok {
			return nil, errors.New("no [ARGS] in the call")
		}
		name, _, _ = strings.Cut(name, "[CALL_ID]")
		a, err := objectArgs(args)
		if err != nil {
			return nil, err
		}
		return []toolcall.Call{{Name: strings.TrimSpace(name), Arguments: a}}, nil
	}}

// FunctionaryCalls is functionary v3.1's syntax:
// <function=get_weather>{"city": "Paris"}</function>.
var FunctionaryCalls = MarkedCalls{Begin: "<function=", End: "</function>",
	Body: func(body string) ([]toolcall.Call, error) {
		name, args, ok := strings.Cut(body, ">")
		if !ok {
			return nil, errors.New("no > after the function's name")
		}
		a, err := objectArgs(args)
		if err != nil {
			return nil, err
		}
		return []toolcall.Call{{Name: strings.TrimSpace(name), Arguments: a}}, nil
	}}

// GLMCalls is GLM 4.5-4.7's syntax:
//
//	<tool_call>get_weather
//	<arg_key>city</arg_key>
//	<arg_value>Paris</arg_value>
//	</tool_call>
//
// a value that reads as JSON is taken as that (numbers, objects; the
// template writes strings bare), any other as a string.
var GLMCalls = MarkedCalls{Begin: "<tool_call>", End: "</tool_call>",
	Body: func(body string) ([]toolcall.Call, error) {
		name, rest, _ := strings.Cut(body, "\n")
		if i := strings.Index(name, "<arg_key>"); i >= 0 {
			name, rest = name[:i], name[i:]+"\n"+rest
		}
		var b bytes.Buffer
		b.WriteByte('{')
		for n := 0; ; n++ {
			i := strings.Index(rest, "<arg_key>")
			if i < 0 {
				break
			}
			rest = rest[i+len("<arg_key>"):]
			key, after, ok := strings.Cut(rest, "</arg_key>")
			if !ok {
				return nil, errors.New("an <arg_key> without </arg_key>")
			}
			j := strings.Index(after, "<arg_value>")
			if j < 0 {
				return nil, fmt.Errorf("the argument %q has no <arg_value>", key)
			}
			val, tail, ok := strings.Cut(after[j+len("<arg_value>"):], "</arg_value>")
			if !ok {
				return nil, errors.New("an <arg_value> without </arg_value>")
			}
			rest = tail
			if n > 0 {
				b.WriteString(", ")
			}
			k, _ := json.Marshal(key)
			b.Write(k)
			b.WriteString(": ")
			if json.Valid([]byte(val)) && strings.TrimSpace(val) != "" {
				b.WriteString(strings.TrimSpace(val))
			} else {
				v, _ := json.Marshal(val)
				b.Write(v)
			}
		}
		b.WriteByte('}')
		return []toolcall.Call{{Name: strings.TrimSpace(name), Arguments: json.RawMessage(b.Bytes())}}, nil
	}}
