package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
	"github.com/smolgo/smolgo/toolcall"
)

const tagID = 49154 // <|tool_call|> in an example vocabulary

func parseAll(tokens []reftest.Token) string {
	p := NewToolParser(tagID)
	var ev []toolcall.Event
	for _, t := range tokens {
		ev = append(ev, p.Push(t.ID, t.Text)...)
	}
	return reftest.Summary(append(ev, p.Flush()...))
}

func TestToolParser(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Hello there", `text:"Hello there"`},
		// llama.cpp's Granite parser test.
		{`<|tool_call|>[{"name": "special_function", "arguments": {"arg1": 1}}]`, `call:special_function{"arg1":1}`},
		{`<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]`,
			`call:get_weather{"city":"Paris"} call:get_time{}`},
		{"Let me check. <|tool_call|> [\n{\"name\": \"f\", \"arguments\": {\"a\": \"]}[\\\"\"}}\n]", `text:"Let me check. " call:f{"a":"]}[\""}`},
		{`<|tool_call|>[{"name": "f", "arguments": {}}]<|tool_call|>[{"name": "g", "arguments": {"x": 1}}]`, `call:f{} call:g{"x":1}`},
		{"<|tool_call|>[{\"name\": \"f\", \"arguments\": {}}]\n\nDone.", `call:f{} text:"Done."`},
		{`<|tool_call|>{"name": "f", "arguments": {"a": 1}}`, `call:f{"a":1}`},
		{`<|tool_call|>[{"name": "f", "parameters": {"a": 1}, "id": "c1"}]`, `call:f{"a":1}`},
		{`<|tool_call|>[{"name": "f", "arguments": "{\"a\": 1}"}]`, `call:f{"a":1}`},
		{`<|tool_call|>[{"name": "f"}]`, `call:f{}`},
		{`<|tool_call|>[{"name": "f", "arguments": null}]`, `call:f{}`},
		// A bare list of calls opening the answer (a forced call, or the
		// tag decoded away).
		{` [{"name": "f", "arguments": {"a": [1, 2]}}]`, `call:f{"a":[1,2]}`},
		// JSON answers are text.
		{`[1, 2, 3]`, `text:"[1, 2, 3]"`},
		{`[]`, `text:"[]"`},
		{`[{"name": "Bob", "age": 3}]`, `text:"[{\"name\": \"Bob\", \"age\": 3}]"`},
		{`{"answer": 42}`, `text:"{\"answer\": 42}"`},
		{`[see above] and more`, `text:"[see above] and more"`},
		{`[unclosed`, `text:"[unclosed"`},
		{`The list is [{"name": "f", "arguments": {}}]`, `text:"The list is [{\"name\": \"f\", \"arguments\": {}}]"`},
		{"a <|tool_c", `text:"a <|tool_c"`},
		{"<|tool_call|> sorry", `text:" sorry"`}, // the tag alone is dropped
		{" \n ", `text:" \n "`},
		// Calls that cannot be read.
		{`<|tool_call|>[{"name": "f", "arguments": [1]}]`, `error:"{\"name\": \"f\", \"arguments\": [1]}"`},
		{`<|tool_call|>[{"name": "f", "arguments": {"a": 1}}`, `error:"[{\"name\": \"f\", \"arguments\": {\"a\": 1}}"`},
		{`<|tool_call|>[{"name": "f", "arguments": {"a": }}]`, `error:"[{\"name\": \"f\", \"arguments\": {\"a\": }}]"`},
		{`<|tool_call|>[{"name": 3, "arguments": {}}]`, `error:"{\"name\": 3, \"arguments\": {}}"`},
		{`<|tool_call|>[{"name": "f", "arguments": {}}, 7]`, `call:f{} error:"7"`},
		{`<|tool_call|>[{"name": "f", "arguments": {}}]]`, `call:f{} text:"]"`},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 2, 3, 7, len(tt.in)} {
			if got := parseAll(reftest.Split(tt.in, n)); got != tt.want {
				t.Errorf("%q in pieces of %d:\n got %s\nwant %s", tt.in, n, got, tt.want)
			}
		}
	}
}

// The tag as a token: its text decoded away, its id tells.
func TestToolParserTagToken(t *testing.T) {
	got := parseAll([]reftest.Token{{ID: -1, Text: "Sure."}, {ID: tagID}, {ID: -1, Text: `[{"name": "f",`}, {ID: -1, Text: ` "arguments": {}}]`}})
	if want := `text:"Sure." call:f{}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	p := NewToolParser(tagID)
	p.Push(tagID, "")
	p.Push(-1, `[{"name": "f", "argu`)
	if !p.InCall() {
		t.Error("InCall false inside a list")
	}
}

// No input makes the parser panic, whatever the pieces.
func TestToolParserNoPanic(t *testing.T) {
	inputs := []string{`<|tool_call|>`, `<|tool_call|>[`, `[{`, `]]]}}}`, `<|tool_call|><|tool_call|>[{"name": "f"}`,
		`[{"name": "f", "arguments": {}}], ; {"name": "g"} tail`, "\x00[\"\\", `<|tool_call|>"str"`, `<|tool_call|>[null, {}, []]`}
	for _, in := range inputs {
		for n := 1; n <= len(in); n++ {
			parseAll(reftest.Split(in, n))
		}
	}
}

func TestCallSchema(t *testing.T) {
	weather := json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`)
	now := json.RawMessage(`{"name": "get_time"}`)
	tests := []struct {
		call     string
		one, all bool // accepted with parallel false, true
	}{
		{`[{"name": "get_weather", "arguments": {"city": "Paris"}}]`, true, true},
		{`[{"name": "get_time", "arguments": {}}]`, true, true},
		{`[{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Rome"}}]`, false, true},
		{`[]`, false, false},
		{`[{"name": "get_weather", "arguments": {}}]`, false, false},
		{`[{"name": "nope", "arguments": {}}]`, false, false},
		{`{"name": "get_time", "arguments": {}}`, false, false},
		{`<|tool_call|>[{"name": "get_time", "arguments": {}}]`, false, false},
	}
	for _, parallel := range []bool{false, true} {
		schema, err := CallSchema([]json.RawMessage{weather, now}, parallel)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			want := tt.one
			if parallel {
				want = tt.all
			}
			if got := reftest.Accepts(t, schema, tt.call); got != want {
				t.Errorf("parallel %v: schema accepts %s: %v, want %v", parallel, tt.call, got, want)
			}
			if want { // what the constraint lets through, the parser reads
				if got := parseAll(reftest.Split(tt.call, 2)); !strings.HasPrefix(got, "call:") || strings.Contains(got, "text:") || strings.Contains(got, "error:") {
					t.Errorf("parser on %s: %s", tt.call, got)
				}
			}
		}
	}
	if _, err := CallSchema(nil, true); err == nil {
		t.Error("CallSchema(nil): no error")
	}
	if _, err := CallSchema([]json.RawMessage{json.RawMessage(`{"type": "function", "function": {}}`)}, true); err == nil {
		t.Error("CallSchema of a nameless tool: no error")
	}
}

// What FormatCalls writes (Render's Granite 3.3 history), the parser reads
// back.
func TestFormatCalls(t *testing.T) {
	calls := []engine.ToolCall{
		{Name: "f", Arguments: json.RawMessage(`{"a":[1,2.50,"é\n"]}`)},
		{Name: `g"`},
		{Name: "h", Arguments: json.RawMessage(`"{\"x\": 1}"`)},
	}
	got, err := FormatCalls(calls)
	if want := `[{"name": "f", "arguments": {"a": [1, 2.5, "é\n"]}}, {"name": "g\"", "arguments": {}}, {"name": "h", "arguments": "{\"x\": 1}"}]`; err != nil || got != want {
		t.Fatalf("FormatCalls = %s, %v; want %s", got, err, want)
	}
	if back, want := parseAll(reftest.Split(ToolCallTag+got, 5)), `call:f{"a":[1,2.5,"é\n"]} call:g"{} call:h{"x":1}`; back != want {
		t.Errorf("read back: %s, want %s", back, want)
	}
	if _, err := FormatCalls([]engine.ToolCall{{Name: "f", Arguments: json.RawMessage(`{`)}}); err == nil {
		t.Error("broken arguments: no error")
	}
}

func TestResponseFilter(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<response>Hello, world!\nWhat's up?</response>", "Hello, world!\nWhat's up?"},
		{"a < b <resp and <b>", "a < b <resp and <b>"},
		{"x</respons", "x</respons"},
		{"<<response>>", "<>"},
		{"<response></response><response>", ""},
	}
	for _, tt := range tests {
		for n := 1; n <= len(tt.in); n++ {
			var f ResponseFilter
			got := ""
			for _, tok := range reftest.Split(tt.in, n) {
				got += f.Push(tok.Text)
			}
			if got += f.Flush(); got != tt.want {
				t.Errorf("%q in pieces of %d: %q, want %q", tt.in, n, got, tt.want)
			}
		}
	}
}
