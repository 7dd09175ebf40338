package chatfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/toolcall"
)

// Decide reads a JSON value that an answer started with. raw is the text
// of the object, from its "{" to its "}" (complete) or to the end of the
// answer (not complete). It returns the events the object stands for, or
// nil when it is no call at all: then the object is answer text.
type Decide func(raw string, complete bool) []toolcall.Event

// LeadParser splits a streamed answer in which the model calls tools by
// writing a bare JSON object first (Llama 3's {"name": …, "parameters": …},
// the {"tool_call": …} of llama.cpp's generic format). White space at the
// start is held until the first other character decides: a "{" starts a
// JSON value, read to its end (strings and escapes respected) and handed to
// Decide; anything else makes the whole answer text, streamed as it comes.
// An optional marker (Llama's <|python_tag|>, as a token id or as text)
// announces a call anywhere: the JSON after it is read the same way.
//
// It emits the event kinds of toolcall.Parser: text, calls, and calls that
// cannot be read. A LeadParser is for one answer and not safe for concurrent
// use.
type LeadParser struct {
	decide   Decide
	markerID int32
	marker   string
	repeat   bool
	arrays   bool

	state   int
	lead    string // white space held before a decision
	held    string // text that may be the start of the marker
	body    strings.Builder
	scan    scanner
	overrun bool
	out     []toolcall.Event
}

const (
	stStart = iota // nothing but white space yet: a "{" starts a value
	stJSON         // inside a value
	stAfter        // after a call: white space, "," or ";" may lead to another
	stText         // answer text
)

// NewLeadParser returns a parser. markerID (-1: none) and marker ("": none)
// are the marker announcing a call; with repeat, more calls may follow a
// call (separated by white space, "," or ";"), otherwise what follows is
// text.
func NewLeadParser(decide Decide, markerID int32, marker string, repeat bool) *LeadParser {
	return &LeadParser{decide: decide, markerID: markerID, marker: marker, repeat: repeat}
}

// Push takes one generated token and its text and returns the events it
// completes.
func (p *LeadParser) Push(id int32, text string) []toolcall.Event {
	p.out = nil
	if id >= 0 && id == p.markerID {
		p.onMarker()
		return p.out
	}
	p.feed(text)
	return p.out
}

// Flush ends the answer: held text is text, an unfinished value is handed
// to Decide as incomplete.
func (p *LeadParser) Flush() []toolcall.Event {
	p.out = nil
	switch p.state {
	case stStart:
		p.text(p.lead)
	case stJSON:
		p.endValue(false)
	case stText:
		p.text(p.held)
	}
	p.lead, p.held = "", ""
	p.state = stText
	return p.out
}

// AcceptArrays makes a "[" start a JSON value as a "{" does, for models
// that write their calls as a JSON list (Granite 3's
// <|tool_call|>[{…}, …]). It returns p.
func (p *LeadParser) AcceptArrays() *LeadParser {
	p.arrays = true
	return p
}

// InCall reports whether the parser is inside a JSON value.
func (p *LeadParser) InCall() bool { return p.state == stJSON }

func (p *LeadParser) onMarker() {
	switch p.state {
	case stJSON:
		p.endValue(false)
	case stText:
		p.text(p.held)
		p.held = ""
	}
	p.lead = ""
	p.state = stStart
}

func (p *LeadParser) feed(s string) {
	for s != "" {
		switch p.state {
		case stStart, stAfter:
			i := 0
			for i < len(s) && (isJSONSpace(s[i]) || p.state == stAfter && p.repeat && (s[i] == ',' || s[i] == ';')) {
				i++
			}
			p.lead += s[:i]
			s = s[i:]
			if s == "" {
				return
			}
			if (s[0] == '{' || p.arrays && s[0] == '[') && (p.state == stStart || p.repeat) {
				p.state = stJSON
				p.body.Reset()
				p.scan = scanner{}
				p.overrun = false
				continue
			}
			if p.state == stStart {
				p.text(p.lead)
			} // after a call, the white space before the text is dropped
			p.lead = ""
			p.state = stText
		case stJSON:
			n, done := p.scan.feed(s)
			if !p.overrun {
				if p.body.Len()+n > toolcall.MaxCallBytes {
					p.body.WriteString(s[:max(0, toolcall.MaxCallBytes-p.body.Len())])
					p.overrun = true
				} else {
					p.body.WriteString(s[:n])
				}
			}
			s = s[n:]
			if done {
				p.endValue(true)
			}
		case stText:
			s = p.held + s
			p.held = ""
			if p.marker == "" {
				p.text(s)
				return
			}
			if i := strings.Index(s, p.marker); i >= 0 {
				p.text(s[:i])
				p.onMarker()
				s = s[i+len(p.marker):]
				continue
			}
			k := partialSuffix(s, p.marker)
			p.text(s[:len(s)-k])
			p.held = s[len(s)-k:]
			return
		}
	}
}

// endValue hands the value read to Decide.
func (p *LeadParser) endValue(complete bool) {
	raw := p.body.String()
	lead := p.lead
	p.lead = ""
	if p.overrun {
		p.out = append(p.out, toolcall.Event{Kind: toolcall.KindError, Raw: raw,
			Err: fmt.Errorf("%w: longer than %d bytes", toolcall.ErrMalformed, toolcall.MaxCallBytes)})
		p.afterCall()
		return
	}
	ev := p.decide(raw, complete)
	if ev == nil {
		p.text(lead + raw)
		p.state = stText
		return
	}
	for _, e := range ev {
		if e.Kind == toolcall.KindText {
			p.text(e.Text)
		} else {
			p.out = append(p.out, e)
		}
	}
	p.afterCall()
}

// afterCall drops the white space after a call; with repeat another call
// may follow, otherwise the rest is text.
func (p *LeadParser) afterCall() {
	p.lead = ""
	p.state = stAfter
}

func (p *LeadParser) text(s string) {
	if s == "" {
		return
	}
	if n := len(p.out); n > 0 && p.out[n-1].Kind == toolcall.KindText {
		p.out[n-1].Text += s
		return
	}
	p.out = append(p.out, toolcall.Event{Kind: toolcall.KindText, Text: s})
}

// partialSuffix returns the length of the longest suffix of s that is a
// proper prefix of marker.
func partialSuffix(s, marker string) int {
	for n := min(len(marker)-1, len(s)); n > 0; n-- {
		if strings.HasPrefix(marker, s[len(s)-n:]) {
			return n
		}
	}
	return 0
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// scanner finds where a JSON value that starts with "{" ends, text piece by
// text piece, counting brackets outside strings. It does not validate: the
// value is parsed once it is complete.
type scanner struct {
	depth      int
	inStr, esc bool
	started    bool
}

// feed consumes s up to the end of the value and reports whether the value
// ended there.
func (sc *scanner) feed(s string) (int, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case sc.inStr:
			switch {
			case sc.esc:
				sc.esc = false
			case c == '\\':
				sc.esc = true
			case c == '"':
				sc.inStr = false
			}
		case c == '"':
			sc.inStr = true
		case c == '{' || c == '[':
			sc.depth++
			sc.started = true
		case c == '}' || c == ']':
			sc.depth--
			if sc.started && sc.depth <= 0 {
				return i + 1, true
			}
		}
	}
	return len(s), false
}

// ParseCall reads a call object: a "name" and its arguments under
// argsKey (or the other of "arguments" and "parameters", which models mix
// up), as an object or as a string of JSON (OpenAI's wire form). The
// arguments are returned compacted ({} when absent or null).
func ParseCall(obj []byte, argsKey string) (toolcall.Call, error) {
	return ParseCallKeys(obj, "name", argsKey)
}

// ParseCallKeys is ParseCall for call objects that name the function
// under nameKey ("tool_name" in Command-R's).
func ParseCallKeys(obj []byte, nameKey, argsKey string) (toolcall.Call, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(obj, &f); err != nil {
		return toolcall.Call{}, errors.New("a call must be a JSON object with a " + nameKey + " and " + argsKey)
	}
	var name string
	if err := json.Unmarshal(f[nameKey], &name); err != nil || name == "" {
		return toolcall.Call{}, fmt.Errorf("the call has no %q", nameKey)
	}
	args := bytes.TrimSpace(f[argsKey])
	if len(args) == 0 {
		other := "arguments"
		if argsKey == "arguments" {
			other = "parameters"
		}
		args = bytes.TrimSpace(f[other])
	}
	switch {
	case len(args) == 0 || string(args) == "null":
		args = []byte("{}")
	case args[0] == '"':
		var s string
		_ = json.Unmarshal(args, &s)
		inner := bytes.TrimSpace([]byte(s))
		if len(inner) == 0 || inner[0] != '{' || !json.Valid(inner) {
			return toolcall.Call{}, fmt.Errorf("the %s of %q are a string that is not a JSON object", argsKey, name)
		}
		args = inner
	case args[0] != '{':
		return toolcall.Call{}, fmt.Errorf("the %s of %q are not a JSON object", argsKey, name)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return toolcall.Call{}, err
	}
	return toolcall.Call{Name: name, Arguments: compact.Bytes()}, nil
}

// Malformed is the error event of a call that cannot be read.
func Malformed(raw string, err error) toolcall.Event {
	return toolcall.Event{Kind: toolcall.KindError, Raw: raw, Err: fmt.Errorf("%w: %v", toolcall.ErrMalformed, err)}
}

// ToolFunction returns the name and the parameters schema of a tool in the
// OpenAI form or a bare function object ({"type": "object"} when it has no
// parameters).
func ToolFunction(tool json.RawMessage) (string, json.RawMessage, error) {
	var t struct {
		Function   json.RawMessage `json:"function"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(tool, &t); err != nil {
		return "", nil, fmt.Errorf("not a tool object: %w", err)
	}
	if len(t.Function) > 0 {
		t.Name, t.Parameters = "", nil
		if err := json.Unmarshal(t.Function, &t); err != nil {
			return "", nil, fmt.Errorf("function: %w", err)
		}
	}
	if t.Name == "" {
		return "", nil, errors.New("the tool has no name")
	}
	if p := bytes.TrimSpace(t.Parameters); len(p) == 0 || string(p) == "null" {
		t.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	return t.Name, t.Parameters, nil
}

// CallSchema returns the JSON schema that only a call of one of the
// functions matches: an object {"name": N, argsKey: A}, N one function's name
// and A valid under its parameters schema (any object when it has none),
// anyOf the functions when there are several. With list it is an array of
// such calls instead: exactly one, or with parallel one or more. Each
// family's syntax spells the call its way: Llama 3's one object with
// "parameters", Granite 3's and Phi-4-mini's lists with "arguments".
// names and params are parallel; a name must not be empty.
func CallSchema(names []string, params []json.RawMessage, argsKey string, list, parallel bool) (json.RawMessage, error) {
	if len(names) == 0 || len(names) != len(params) {
		return nil, errors.New("chat: a call schema needs at least one function")
	}
	// Structs and hand-built properties keep the keys in this order: a
	// grammar built from the schema writes "name" first.
	type object struct {
		Type                 string          `json:"type"`
		Properties           json.RawMessage `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties bool            `json:"additionalProperties"`
	}
	key, err := json.Marshal(argsKey)
	if err != nil {
		return nil, err
	}
	alts := make([]object, len(names))
	for i, name := range names {
		if name == "" {
			return nil, fmt.Errorf("chat: function %d has no name", i)
		}
		p := bytes.TrimSpace(params[i])
		if len(p) == 0 || string(p) == "null" {
			p = []byte(`{"type":"object"}`)
		}
		n, err := json.Marshal(name)
		if err != nil {
			return nil, err
		}
		props := `{"name":{"const":` + string(n) + `},` + string(key) + `:` + string(p) + `}`
		alts[i] = object{Type: "object", Properties: json.RawMessage(props), Required: []string{"name", argsKey}}
	}
	var call any = alts[0]
	if len(alts) > 1 {
		call = struct {
			AnyOf []object `json:"anyOf"`
		}{alts}
	}
	if !list {
		return json.Marshal(call)
	}
	schema := struct {
		Type     string `json:"type"`
		Items    any    `json:"items"`
		MinItems int    `json:"minItems"`
		MaxItems int    `json:"maxItems,omitempty"`
	}{"array", call, 1, 0}
	if !parallel {
		schema.MaxItems = 1
	}
	return json.Marshal(schema)
}

// ToolFunctions returns the names and parameters schemas of tools
// (ToolFunction of each); an error names the tool.
func ToolFunctions(tools []json.RawMessage) ([]string, []json.RawMessage, error) {
	names, params := make([]string, len(tools)), make([]json.RawMessage, len(tools))
	for i, t := range tools {
		var err error
		if names[i], params[i], err = ToolFunction(t); err != nil {
			return nil, nil, fmt.Errorf("chat: tools[%d]: %w", i, err)
		}
	}
	return names, params, nil
}
