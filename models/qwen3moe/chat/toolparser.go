package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/toolcall"
)

// The tags of Qwen3-Coder's tool calls.
const (
	OpenTag      = "<tool_call>"
	CloseTag     = "</tool_call>"
	FunctionTag  = "<function="
	EndFunction  = "</function>"
	ParameterTag = "<parameter="
	EndParameter = "</parameter>"
)

// ToolParser reads Qwen3-Coder's tool calls out of an answer as its tokens
// arrive:
//
//	<tool_call>
//	<function=get_weather>
//	<parameter=city>
//	Paris
//	</parameter>
//	<parameter=days>
//	3
//	</parameter>
//	</function>
//	</tool_call>
//
// A parameter's value is the raw text between its tags (one line break
// after the opening tag and one before the closing tag are the format's);
// it becomes a JSON value by the types the function's schema gives the
// parameter, as llama.cpp reads it: a parameter that cannot be a string
// is read as JSON (Python's True, False and None as JSON's), one that can
// only be a string is that string, and one that can be either is JSON if
// the text is JSON of an allowed type and a string otherwise; a parameter
// the schema does not declare may be anything. Qwen3-Coder sometimes
// leaves out the opening <tool_call>: <function=NAME> of a known function
// opens a call too. Text outside calls is passed on, a possible start of
// a tag held back; a call that cannot be read is an error event with its
// text. It is for one answer and not safe for concurrent use.
type ToolParser struct {
	wrap    Tags
	funcs   map[string]*function
	openers []string // <tool_call>, and <function=NAME> for each known NAME

	inCall   bool
	tagged   bool // the call opened with <tool_call>
	held     string
	body     strings.Builder
	scanned  int // bytes of body already searched for the close tag
	overflow bool
}

// NewToolParser returns a parser for calls of tools (function definitions
// in the OpenAI form, whose parameters schemas type the values; an
// unreadable one is skipped).
func NewToolParser(tools []json.RawMessage) *ToolParser {
	return NewToolParserIn(Qwen3Coder, tools)
}

// Tags are the tags of a syntax of XML-like calls: Qwen3-Coder's; Seed-OSS's,
// which writes the same calls between <seed:tool_call> and
// </seed:tool_call>; MiniMax-M2's, a block of invokes,
//
//	<minimax:tool_call>
//	<invoke name="get_weather">
//	<parameter name="city">Paris</parameter>
//	</invoke>
//	</minimax:tool_call>
type Tags struct {
	// Open and Close wrap a block of calls.
	Open, Close string
	// Function opens a call and NameEnd ends its function's name (and a
	// parameter's); EndFunction closes the call; Parameter opens a
	// parameter, which EndParameter closes.
	Function, NameEnd, EndFunction, Parameter string
	// Several says a block may hold several calls (MiniMax-M2's); with
	// Qwen3-Coder's, a block is one call.
	Several bool
}

// The tags of the models that write these calls.
var (
	Qwen3Coder = Tags{Open: OpenTag, Close: CloseTag, Function: FunctionTag, NameEnd: ">", EndFunction: EndFunction, Parameter: ParameterTag}
	SeedOSS    = Tags{Open: "<seed:tool_call>", Close: "</seed:tool_call>", Function: FunctionTag, NameEnd: ">", EndFunction: EndFunction, Parameter: ParameterTag}
	MiniMaxM2  = Tags{Open: "<minimax:tool_call>", Close: "</minimax:tool_call>", Function: `<invoke name="`, NameEnd: `">`, EndFunction: "</invoke>",
		Parameter: `<parameter name="`, Several: true}
)

// NewToolParserIn is NewToolParser for calls written with tags w.
func NewToolParserIn(w Tags, tools []json.RawMessage) *ToolParser {
	p := &ToolParser{wrap: w, funcs: map[string]*function{}, openers: []string{w.Open}}
	for _, t := range tools {
		if f, ok := readFunction(t); ok {
			p.funcs[f.name] = &f
			p.openers = append(p.openers, w.Function+f.name+w.NameEnd)
		}
	}
	return p
}

// Push takes one generated token's id (unused: the tags are matched as
// text, which they decode to as tokens too) and text, and returns the
// events it completes.
func (p *ToolParser) Push(_ int32, text string) []toolcall.Event {
	return p.feed(text, nil)
}

// Flush ends the answer: held-back text is text, and an unclosed call is
// read if it is complete up to </function>, else an error.
func (p *ToolParser) Flush() []toolcall.Event {
	var out []toolcall.Event
	if h := p.held; h != "" {
		p.held = ""
		out = appendText(out, h)
	}
	if p.inCall {
		out = p.endCall(out, false)
	}
	return out
}

func (p *ToolParser) feed(s string, out []toolcall.Event) []toolcall.Event {
	for s != "" {
		if p.inCall {
			start := max(0, p.scanned-len(p.wrap.Close)+1)
			p.addBody(s)
			s = ""
			b := p.body.String()
			i, j := strings.Index(b[start:], p.wrap.Close), strings.Index(b[start:], p.wrap.Open)
			switch {
			case j >= 0 && (i < 0 || j < i): // a new call before this one was closed
				rest := b[start+j+len(p.wrap.Open):]
				p.truncate(start + j)
				out = p.endCall(out, false)
				p.inCall, p.tagged = true, true
				s = rest
			case i >= 0:
				rest := b[start+i+len(p.wrap.Close):]
				p.truncate(start + i)
				out = p.endCall(out, true)
				s = rest
			default:
				p.scanned = len(b)
			}
			continue
		}
		s = p.held + s
		p.held = ""
		i, tag := p.firstOpener(s)
		if i < 0 {
			keep := p.partialOpener(s)
			out = appendText(out, s[:len(s)-keep])
			p.held = s[len(s)-keep:]
			return out
		}
		out = appendText(out, s[:i])
		p.inCall, p.tagged = true, tag == p.wrap.Open
		s = s[i+len(tag):]
		if tag != p.wrap.Open {
			p.addBody(tag) // <function=NAME> is part of the call
		}
	}
	return out
}

func (p *ToolParser) firstOpener(s string) (int, string) {
	best, which := -1, ""
	for _, o := range p.openers {
		if i := strings.Index(s, o); i >= 0 && (best < 0 || i < best) {
			best, which = i, o
		}
	}
	return best, which
}

func (p *ToolParser) partialOpener(s string) int {
	keep := 0
	for _, o := range p.openers {
		for n := min(len(o)-1, len(s)); n > keep; n-- {
			if strings.HasPrefix(o, s[len(s)-n:]) {
				keep = n
				break
			}
		}
	}
	return keep
}

func (p *ToolParser) addBody(s string) {
	if p.overflow {
		return
	}
	if p.body.Len()+len(s) > toolcall.MaxCallBytes {
		p.overflow = true
		return
	}
	p.body.WriteString(s)
}

func (p *ToolParser) truncate(n int) {
	b := p.body.String()[:n]
	p.body.Reset()
	p.body.WriteString(b)
}

// endCall reads the body of the call that just ended (closed: with
// </tool_call>). An error event's Raw is the call's text, tags included.
func (p *ToolParser) endCall(out []toolcall.Event, closed bool) []toolcall.Event {
	body := p.body.String()
	raw := body
	if p.tagged {
		raw = p.wrap.Open + raw
	}
	if closed {
		raw += p.wrap.Close
	}
	overflow := p.overflow
	p.body.Reset()
	p.inCall, p.tagged, p.overflow, p.scanned = false, false, false, 0
	if overflow {
		return append(out, toolcall.Event{Kind: toolcall.KindError, Raw: raw, Err: fmt.Errorf("%w: longer than %d bytes", toolcall.ErrMalformed, toolcall.MaxCallBytes)})
	}
	calls, err := p.parseCalls(body)
	if err != nil {
		return append(out, toolcall.Event{Kind: toolcall.KindError, Raw: raw, Err: fmt.Errorf("%w: %v", toolcall.ErrMalformed, err)})
	}
	for _, c := range calls {
		out = append(out, toolcall.Event{Kind: toolcall.KindCall, Call: c})
	}
	return out
}

// parseCalls reads a block: one call, or with Tags.Several one or more.
func (p *ToolParser) parseCalls(raw string) ([]toolcall.Call, error) {
	var calls []toolcall.Call
	rest := raw
	for {
		c, after, err := p.parseCall(rest)
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
		after = strings.TrimSpace(after)
		if after == "" {
			return calls, nil
		}
		if !p.wrap.Several || !strings.HasPrefix(after, p.wrap.Function) {
			return nil, fmt.Errorf("text after %s: %q", p.wrap.EndFunction, after)
		}
		rest = after
	}
}

// parseCall reads <function=NAME> and its parameters, and returns the
// text after its </function>.
func (p *ToolParser) parseCall(raw string) (toolcall.Call, string, error) {
	t := p.wrap
	s := strings.TrimSpace(raw)
	rest, ok := strings.CutPrefix(s, t.Function)
	if !ok {
		return toolcall.Call{}, "", fmt.Errorf("the call does not start with %sNAME%s", t.Function, t.NameEnd)
	}
	name, rest, ok := strings.Cut(rest, t.NameEnd)
	if !ok || name == "" || strings.ContainsAny(name, "\n<") {
		return toolcall.Call{}, "", fmt.Errorf("the call's %sNAME%s tag is not closed", t.Function, t.NameEnd)
	}
	f := p.funcs[name]
	var args bytes.Buffer
	args.WriteByte('{')
	seen := map[string]bool{}
	var tail string
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if after, ok := strings.CutPrefix(rest, t.EndFunction); ok {
			tail = after
			break
		}
		after, ok := strings.CutPrefix(rest, t.Parameter)
		if !ok {
			if rest == "" {
				return toolcall.Call{}, "", fmt.Errorf("%s never came", t.EndFunction)
			}
			return toolcall.Call{}, "", fmt.Errorf("expected %sNAME%s or %s, found %q", t.Parameter, t.NameEnd, t.EndFunction, rest[:min(len(rest), 20)])
		}
		pname, after, ok := strings.Cut(after, t.NameEnd)
		if !ok || pname == "" || strings.ContainsAny(pname, "\n<") {
			return toolcall.Call{}, "", fmt.Errorf("a %sNAME%s tag is not closed", t.Parameter, t.NameEnd)
		}
		end := strings.Index(after, "\n"+EndParameter)
		if end < 0 {
			end = strings.Index(after, EndParameter)
		}
		if end < 0 {
			return toolcall.Call{}, "", fmt.Errorf("parameter %s: %s never came", pname, EndParameter)
		}
		value := strings.TrimPrefix(after[:end], "\n")
		rest = after[end:]
		rest = strings.TrimPrefix(strings.TrimPrefix(rest, "\n"), EndParameter)
		if seen[pname] {
			return toolcall.Call{}, "", fmt.Errorf("parameter %s is given twice", pname)
		}
		seen[pname] = true
		if len(seen) > 1 {
			args.WriteByte(',')
		}
		key, _ := json.Marshal(pname)
		args.Write(key)
		args.WriteByte(':')
		args.Write(argValue(value, f.typesOf(pname)))
	}
	args.WriteByte('}')
	return toolcall.Call{Name: name, Arguments: args.Bytes()}, tail, nil
}

// argValue is a parameter's raw text as JSON, by the types it may have.
func argValue(text string, t types) []byte {
	if t == tString {
		return stringJSON(text)
	}
	trimmed := strings.TrimSpace(text)
	if lit, ok := pythonLiterals[trimmed]; ok {
		trimmed = lit
	}
	if v, err := chatfmt.Parse([]byte(trimmed)); err == nil {
		k := typeOf(v)
		allowed := t.has(k) || k == tInteger && t.has(tNumber)
		if !t.has(tString) || allowed && k != tString {
			var b bytes.Buffer
			if json.Compact(&b, []byte(trimmed)) == nil {
				return b.Bytes()
			}
		}
	}
	return stringJSON(text)
}

// pythonLiterals are Python's spellings of JSON's literals, which the
// model sometimes writes.
var pythonLiterals = map[string]string{"True": "true", "False": "false", "None": "null"}

func stringJSON(s string) []byte {
	return []byte(chatfmt.JSONString(s))
}

func appendText(out []toolcall.Event, s string) []toolcall.Event {
	if s == "" {
		return out
	}
	if n := len(out); n > 0 && out[n-1].Kind == toolcall.KindText {
		out[n-1].Text += s
		return out
	}
	return append(out, toolcall.Event{Kind: toolcall.KindText, Text: s})
}
