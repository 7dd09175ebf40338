package chat

import (
	"encoding/json"
	"testing"

	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
	"github.com/smolgo/smolgo/toolcall"
)

func parseAll(tokens []reftest.Token) string {
	p := NewToolParser()
	var ev []toolcall.Event
	for _, t := range tokens {
		ev = append(ev, p.Push(t.ID, t.Text)...)
	}
	return reftest.Summary(append(ev, p.Flush()...))
}

func TestToolParser(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}`, `call:get_weather{"city":"Paris"}`},
		{"\n {\"tool_calls\": [{\"name\": \"f\", \"arguments\": {}, \"id\": \"c1\"}, {\"name\": \"g\", \"arguments\": {\"a\": [1]}}]}\n", `call:f{} call:g{"a":[1]}`},
		{`{"response": "It is {sunny}.\n"}`, `text:"It is {sunny}.\n"`},
		{`{"response": {"temp": 21, "sky": []}}`, "text:\"{\\n  \\\"temp\\\": 21,\\n  \\\"sky\\\": []\\n}\""},
		{`{"tool_call": {"name": "f", "arguments": {}}, "response": "x"}`, `call:f{}`},
		{`Plain text {"tool_call": 1}`, `text:"Plain text {\"tool_call\": 1}"`},
		{`{"answer": 42}`, `text:"{\"answer\": 42}"`},
		{`{"response": "unfinished`, `text:"{\"response\": \"unfinished"`},
		{`{"tool_call": {"name": "f", "arguments": {}}} trailing`, `call:f{} text:"trailing"`},
		{`{"tool_call": {"name": "f", "arguments": {}}} {"tool_call": {"name": "g", "arguments": {}}}`, `call:f{} text:"{\"tool_call\": {\"name\": \"g\", \"arguments\": {}}}"`},
		// Calls that cannot be read.
		{`{"tool_call": {"name": "f", "arguments": [1]}}`, `error:"{\"name\": \"f\", \"arguments\": [1]}"`},
		{`{"tool_call": {"arguments": {}}}`, `error:"{\"arguments\": {}}"`},
		{`{"tool_calls": []}`, `error:"{\"tool_calls\": []}"`},
		{`{"tool_call": {"name": "f", "arguments": {`, `error:"{\"tool_call\": {\"name\": \"f\", \"arguments\": {"`},
		{`{"tool_call": {"name": "f",, }}`, `error:"{\"tool_call\": {\"name\": \"f\",, }}"`},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 4, len(tt.in)} {
			if got := parseAll(reftest.Split(tt.in, n)); got != tt.want {
				t.Errorf("%q in pieces of %d:\n got %s\nwant %s", tt.in, n, got, tt.want)
			}
		}
	}
}

func TestResponseSchema(t *testing.T) {
	weather := json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`)
	now := json.RawMessage(`{"type": "function", "function": {"name": "get_time"}}`)
	tests := []struct {
		answer       string
		auto, forced bool
	}{
		{`{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}`, true, true},
		{`{"tool_call": {"name": "get_time", "arguments": {}}}`, true, true},
		{`{"response": "Hello."}`, true, false},
		{`{"tool_call": {"name": "get_weather", "arguments": {}}}`, false, false},
		{`{"tool_call": {"name": "nope", "arguments": {}}}`, false, false},
		{`Hello.`, false, false},
	}
	for _, required := range []bool{false, true} {
		schema, err := ResponseSchema([]json.RawMessage{weather, now}, required)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			want := tt.auto
			if required {
				want = tt.forced
			}
			if got := reftest.Accepts(t, schema, tt.answer); got != want {
				t.Errorf("required=%v: schema accepts %s: %v, want %v", required, tt.answer, got, want)
			}
		}
	}
	// One tool: no anyOf around it.
	if _, err := ResponseSchema([]json.RawMessage{now}, true); err != nil {
		t.Error(err)
	}
	if _, err := ResponseSchema(nil, false); err == nil {
		t.Error("ResponseSchema(nil): no error")
	}
}
