package chatfmt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/toolcall"
)

// JSONCalls describes a tool-call syntax whose calls are JSON objects
// between two markers, as a list or one object a line:
//
//	<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {…}}]<|END_ACTION|>   (Command R7B)
//	Action:\n```json\n[{"tool_name": "f", "parameters": {…}}]```                                 (Command R+)
//	<TOOLCALL>[{"name": "f", "arguments": {…}}]</TOOLCALL>                                      (Nemotron Nano v2)
//	<tool_calls>[{"name": "f", "arguments": {…}}]</tool_calls>                                  (Apriel)
//	<tool_calls>\n{"name": "f", "arguments": {…}}\n{…}\n</tool_calls>                           (MiniMax-M1)
//	 functools[{"name": "f", "arguments": {…}}]                                                 (Firefunction v2)
//
// Marked gives its parser's description, Grammar its forced-call grammar.
type JSONCalls struct {
	// Begin and End are the markers around a run of calls; with End "",
	// the run ends at the next Begin or at the end of the answer.
	Begin, End string
	// Lead and Trail are the texts the grammar writes between Begin and
	// the calls and between the calls and End (Command R+'s "\n```json\n");
	// the parser reads them, and any white space there, as optional.
	Lead, Trail string
	// NameKey and ArgsKey are the keys of a call object's function name
	// and arguments ("name" and "arguments", "tool_name" and
	// "parameters").
	NameKey, ArgsKey string
	// IDKey, when set, is a key the model writes each call's id under,
	// before the name: the grammar writes it as a string of digits (the
	// call's index, as Command R7B's template numbers them); the parser
	// ignores it, as it does any other key.
	IDKey string
	// Lines says the calls are objects one a line rather than a JSON list
	// (MiniMax-M1).
	Lines bool
}

// Marked returns the syntax as a MarkedCalls, for NewMarkedParser.
func (j JSONCalls) Marked() MarkedCalls {
	return MarkedCalls{Begin: j.Begin, End: j.End, Body: j.ParseCalls, JSONBody: true}
}

// ParseCalls reads the text between the markers: a JSON list of call
// objects, or call objects one after another (one a line), Lead and
// Trail optional around them.
func (j JSONCalls) ParseCalls(body string) ([]toolcall.Call, error) {
	body = strings.TrimSpace(body)
	lead := strings.TrimSpace(j.Lead)
	body = strings.TrimPrefix(body, lead)
	if strings.HasPrefix(lead, "```") { // a fence without its language
		body = strings.TrimPrefix(body, "```")
	}
	body = strings.TrimSpace(body)
	body = strings.TrimSpace(strings.TrimSuffix(body, strings.TrimSpace(j.Trail)))
	if body == "" {
		return nil, errors.New("no calls between the markers")
	}
	var objs []json.RawMessage
	if body[0] == '[' {
		if err := json.Unmarshal([]byte(body), &objs); err != nil {
			return nil, fmt.Errorf("the calls are not a JSON list: %v", err)
		}
	} else {
		dec := json.NewDecoder(strings.NewReader(body))
		for dec.More() {
			var o json.RawMessage
			if err := dec.Decode(&o); err != nil {
				return nil, fmt.Errorf("the calls are not JSON objects: %v", err)
			}
			objs = append(objs, o)
		}
	}
	if len(objs) == 0 {
		return nil, errors.New("an empty list of calls")
	}
	calls := make([]toolcall.Call, len(objs))
	for i, o := range objs {
		c, err := ParseCallKeys(o, j.NameKey, j.ArgsKey)
		if err != nil {
			return nil, fmt.Errorf("call %d: %w", i, err)
		}
		calls[i] = c
	}
	return calls, nil
}

// Grammar returns the grammar of an answer that is one run of calls of
// the functions (names and params parallel, as CallSchema takes them):
// exactly one call, or with parallel one or more. The markers are spelled
// with ordinary tokens; a format whose markers are special tokens gives
// the parser their text back (family.SpecialMarkers).
func (j JSONCalls) Grammar(ctx context.Context, names []string, params []json.RawMessage, parallel bool) (*grammar.Grammar, error) {
	call, err := j.objectSchema(names, params)
	if err != nil {
		return nil, err
	}
	var schema json.RawMessage = call
	if !j.Lines {
		maxItems := ""
		if !parallel {
			maxItems = `,"maxItems":1`
		}
		schema = json.RawMessage(`{"type":"array","items":` + string(call) + `,"minItems":1` + maxItems + `}`)
	}
	g, err := grammar.FromJSONSchemaContext(ctx, schema)
	if err != nil {
		return nil, err
	}
	calls := "calls"
	if j.Lines && parallel {
		calls = `calls ( "\n" calls )*`
	}
	src := "root ::= " + GBNFLiteral(j.Begin+j.Lead) + " " + calls + " " + GBNFLiteral(j.Trail+j.End) + "\n"
	return grammar.Compose(ctx, src, map[string]*grammar.Grammar{"calls": g})
}

// objectSchema is the JSON schema of one call object of the functions:
// the id (IDKey), the name and the arguments, in that order.
func (j JSONCalls) objectSchema(names []string, params []json.RawMessage) (json.RawMessage, error) {
	if len(names) == 0 || len(names) != len(params) {
		return nil, errors.New("chat: a call grammar needs at least one function")
	}
	nameKey, _ := json.Marshal(j.NameKey)
	argsKey, _ := json.Marshal(j.ArgsKey)
	required := string(nameKey) + "," + string(argsKey)
	id := ""
	if j.IDKey != "" {
		idKey, _ := json.Marshal(j.IDKey)
		id = string(idKey) + `:{"type":"string","pattern":"^[0-9]{1,3}$"},`
		required = string(idKey) + "," + required
	}
	alts := make([]string, len(names))
	for i, name := range names {
		if name == "" {
			return nil, fmt.Errorf("chat: function %d has no name", i)
		}
		p := bytes.TrimSpace(params[i])
		if len(p) == 0 || string(p) == "null" {
			p = []byte(`{"type":"object"}`)
		}
		if !json.Valid(p) {
			return nil, fmt.Errorf("chat: function %q: the parameters are not JSON", name)
		}
		n, _ := json.Marshal(name)
		alts[i] = `{"type":"object","properties":{` + id + string(nameKey) + `:{"const":` + string(n) + `},` + string(argsKey) + `:` + string(p) +
			`},"required":[` + required + `],"additionalProperties":false}`
	}
	if len(alts) == 1 {
		return json.RawMessage(alts[0]), nil
	}
	return json.RawMessage(`{"anyOf":[` + strings.Join(alts, ",") + `]}`), nil
}

// GBNFLiteral is s as a GBNF string literal.
func GBNFLiteral(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Command-R's and the other JSON-list syntaxes of the table.
var (
	// CommandR7BCalls is Command R7B's (and Cohere2 MoE's) syntax; its
	// markers are special tokens.
	CommandR7BCalls = JSONCalls{Begin: "<|START_ACTION|>", End: "<|END_ACTION|>", NameKey: "tool_name", ArgsKey: "parameters", IDKey: "tool_call_id"}
	// CommandRPlusCalls is the syntax of Command R's and R+'s tool-use
	// templates: a list of actions in a fenced JSON block after
	// "Action:".
	CommandRPlusCalls = JSONCalls{Begin: "Action:", End: "```", Lead: "\n```json\n", NameKey: "tool_name", ArgsKey: "parameters"}
	// NemotronCalls is NVIDIA Nemotron Nano v2's syntax.
	NemotronCalls = JSONCalls{Begin: "<TOOLCALL>", End: "</TOOLCALL>", NameKey: "name", ArgsKey: "arguments"}
	// AprielCalls is ServiceNow Apriel's syntax (its template adds an "id"
	// to each call).
	AprielCalls = JSONCalls{Begin: "<tool_calls>", End: "</tool_calls>", NameKey: "name", ArgsKey: "arguments"}
	// MiniMaxM1Calls is MiniMax-M1's syntax: one call object a line.
	MiniMaxM1Calls = JSONCalls{Begin: "<tool_calls>", End: "</tool_calls>", Lead: "\n", Trail: "\n", NameKey: "name", ArgsKey: "arguments", Lines: true}
	// FirefunctionCalls is Firefunction v2's syntax: the list follows the
	// word functools, with no closing marker.
	FirefunctionCalls = JSONCalls{Begin: "functools", NameKey: "name", ArgsKey: "arguments"}
)
