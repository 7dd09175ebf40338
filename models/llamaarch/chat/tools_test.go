package chat

import (
	"encoding/json"
	"testing"

	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
	"github.com/smolgo/smolgo/toolcall"
)

func parseAll(tokens []reftest.Token) string {
	p := NewToolParser(128010)
	var ev []toolcall.Event
	for _, t := range tokens {
		ev = append(ev, p.Push(t.ID, t.Text)...)
	}
	return reftest.Summary(append(ev, p.Flush()...))
}

func TestToolParser(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Hello there", `text:"Hello there"`},
		{`{"name": "get_weather", "parameters": {"city": "Paris"}}`, `call:get_weather{"city":"Paris"}`},
		{" \n{\"type\": \"function\", \"name\": \"f\", \"parameters\": {}}", `call:f{}`},
		{`{"name": "f", "arguments": "{\"a\": 1}"}`, `call:f{"a":1}`},
		{`{"name": "f", "parameters": null}`, `call:f{}`},
		{`{"name": "f", "parameters": {"a": "}{\"]"}}`, `call:f{"a":"}{\"]"}`},
		{`{"name": "f", "parameters": {}}; {"name": "g", "parameters": {"x": 1}}`, `call:f{} call:g{"x":1}`},
		{"{\"name\": \"f\", \"parameters\": {}}\n\nDone.", `call:f{} text:"Done."`},
		{`Sure. <|python_tag|>{"name": "f", "parameters": {}}`, `text:"Sure. " call:f{}`},
		{`<|python_tag|> {"name": "f", "parameters": {}}`, `call:f{}`},
		// Not calls: text, as llama.cpp has it.
		{`{"answer": 42}`, `text:"{\"answer\": 42}"`},
		{`{"name": "Bob", "age": 3}`, `text:"{\"name\": \"Bob\", \"age\": 3}"`},
		{`{"type": "person", "name": "f", "parameters": {}}`, `text:"{\"type\": \"person\", \"name\": \"f\", \"parameters\": {}}"`},
		{`The call is {"name": "f", "parameters": {}}`, `text:"The call is {\"name\": \"f\", \"parameters\": {}}"`},
		{"a <|pyth", `text:"a <|pyth"`},
		{" \n ", `text:" \n "`},
		{`{"broken": `, `text:"{\"broken\": "`},
		// Calls that cannot be read.
		{`{"name": "f", "parameters": [1]}`, `error:"{\"name\": \"f\", \"parameters\": [1]}"`},
		{`{"name": "f", "parameters": {"a": 1}`, `error:"{\"name\": \"f\", \"parameters\": {\"a\": 1}"`},
		{`{"name": "f", "parameters": {"a": 1}}}`, `call:f{"a":1} text:"}"`},
		{`{"name": 3, "parameters": {}}`, `error:"{\"name\": 3, \"parameters\": {}}"`},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 3, len(tt.in)} {
			if got := parseAll(reftest.Split(tt.in, n)); got != tt.want {
				t.Errorf("%q in pieces of %d:\n got %s\nwant %s", tt.in, n, got, tt.want)
			}
		}
	}
}

// The tag as a token (its text decoded away as a special token).
func TestToolParserTagToken(t *testing.T) {
	got := parseAll([]reftest.Token{{ID: -1, Text: "Let me check."}, {ID: 128010}, {ID: -1, Text: `{"name": "f",`}, {ID: -1, Text: ` "parameters": {}}`}})
	if want := `text:"Let me check." call:f{}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	p := NewToolParser(128010)
	p.Push(-1, `{"name": "f", "para`)
	if !p.InCall() {
		t.Error("InCall false inside an object")
	}
}

func TestCallSchema(t *testing.T) {
	weather := json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`)
	now := json.RawMessage(`{"name": "get_time"}`)
	schema, err := CallSchema([]json.RawMessage{weather, now})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		call string
		ok   bool
	}{
		{`{"name": "get_weather", "parameters": {"city": "Paris"}}`, true},
		{`{"name": "get_time", "parameters": {}}`, true},
		{`{"name": "get_weather", "parameters": {}}`, false},
		{`{"name": "nope", "parameters": {}}`, false},
		{`{"parameters": {}, "name": "get_time"}`, false},
		{`Sure: {"name": "get_time", "parameters": {}}`, false},
	}
	for _, tt := range tests {
		if got := reftest.Accepts(t, schema, tt.call); got != tt.ok {
			t.Errorf("schema accepts %s: %v, want %v", tt.call, got, tt.ok)
		}
		if tt.ok { // what the constraint lets through, the parser reads
			if got := parseAll(reftest.Split(tt.call, 2)); got[:5] != "call:" {
				t.Errorf("parser on %s: %s", tt.call, got)
			}
		}
	}
	if _, err := CallSchema(nil); err == nil {
		t.Error("CallSchema(nil): no error")
	}
	if _, err := CallSchema([]json.RawMessage{json.RawMessage(`{"type": "function", "function": {}}`)}); err == nil {
		t.Error("CallSchema of a nameless tool: no error")
	}
}

func TestFormatCall(t *testing.T) {
	got, err := FormatCall("f", json.RawMessage(`{"a":[1,2.50,"é"]}`))
	if want := `{"name": "f", "parameters": {"a": [1, 2.5, "é"]}}`; err != nil || got != want {
		t.Errorf("FormatCall = %s, %v; want %s", got, err, want)
	}
	if got, _ := FormatCall("f", nil); got != `{"name": "f", "parameters": {}}` {
		t.Errorf("FormatCall without arguments = %s", got)
	}
}
