package chat

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/smolgo/smolgo/grammar"
)

// The forced-call grammar accepts exactly the calls of the given functions
// in harmony's syntax, and what it accepts the parser reads as that call.
func TestCallGrammar(t *testing.T) {
	funcs := []grammar.Function{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "get_time"},
	}
	g, err := CallGrammar(context.Background(), funcs, grammar.ToolCallOptions{Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text     string
		complete bool
		prefix   bool
		call     string
	}{
		{CallHeader("get_weather") + `{"city":"Paris"}`, true, true, `call:get_weather{"city":"Paris"}`},
		{CallHeader("get_time") + `{}`, true, true, `call:get_time{}`},
		{CallHeader("get_weather") + `{}`, false, false, ""},
		{CallHeader("get_weather") + `{"city":"Paris"`, false, true, ""},
		{CallHeader("other") + `{}`, false, false, ""},
		{"<|channel|>final<|message|>Hi", false, false, ""},
		{CallHeader("get_time") + `{} `, false, false, ""},
	}
	for _, tt := range tests {
		prefix, complete := g.Match([]byte(tt.text))
		if prefix != tt.prefix || complete != tt.complete {
			t.Errorf("Match(%q) = %v, %v; want %v, %v", tt.text, prefix, complete, tt.prefix, tt.complete)
		}
		if tt.call == "" {
			continue
		}
		p := NewParser(nil, ParserOptions{Tools: true})
		evs := append(p.Push(-1, tt.text), p.Flush()...)
		if got := summary(evs); got != tt.call {
			t.Errorf("parsing %q: %s, want %s", tt.text, got, tt.call)
		}
	}
	if _, err := CallGrammar(context.Background(), nil, grammar.ToolCallOptions{}); err == nil {
		t.Error("no error for no functions")
	}
	if _, err := CallGrammar(context.Background(), []grammar.Function{{Name: "f", Parameters: json.RawMessage(`{"type":"nope"}`)}}, grammar.ToolCallOptions{}); err == nil {
		t.Error("no error for a bad schema")
	}
}
