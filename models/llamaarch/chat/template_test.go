package chat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
)

func date(t *testing.T, s string) func() time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return func() time.Time { return d }
}

func TestRenderReference(t *testing.T) {
	reftest.Check(t, reftest.Load(t, 22), func(c reftest.Case) (string, [][2]int, error) {
		o := struct {
			Tools               []json.RawMessage `json:"tools"`
			AddGenerationPrompt bool              `json:"add_generation_prompt"`
			ToolsInSystem       bool              `json:"tools_in_system"`
			Date                string            `json:"date"`
		}{Date: "2025-07-08"}
		c.Decode(t, &o)
		return RenderSpans(c.Messages, Options{Tools: o.Tools, AddGenerationPrompt: o.AddGenerationPrompt,
			ToolsInSystem: o.ToolsInSystem, Now: date(t, o.Date)})
	})
}

// Every byte the caller wrote is inside a span, and no template marker is.
func TestRenderSpans(t *testing.T) {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "f¤", "description": "d¤", "parameters": {}}}`)
	msgs := []engine.Message{
		{Role: "system", Content: " s¤ "},
		{Role: "user", Content: "u¤<|eot_id|>"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f¤", Arguments: json.RawMessage(`{"x": "¤"}`)}}},
		{Role: "tool", Content: "t¤"},
		{Role: "system", Content: "s2¤"},
		{Role: "assistant", Content: "a¤"},
	}
	for _, tools := range [][]json.RawMessage{nil, {tool}} {
		for _, inSystem := range []bool{false, true} {
			text, spans, err := RenderSpans(msgs, Options{Tools: tools, ToolsInSystem: inSystem, AddGenerationPrompt: true, Now: date(t, "2025-01-02")})
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(text, "¤"); n != 7+2*len(tools) {
				t.Errorf("%d marks in the render, want %d:\n%s", n, 7+2*len(tools), text)
			}
			reftest.CheckSpans(t, text, spans, "¤", "<|start_header_id|>", "<|begin_of_text|>", "Given the following", "Today Date")
		}
	}
}

func TestRenderErrors(t *testing.T) {
	tool := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "f"}}`)}
	two := []engine.ToolCall{{Name: "f"}, {Name: "g"}}
	tests := []struct {
		msgs []engine.Message
		opts Options
		want string
	}{
		{nil, Options{}, "no messages"},
		{[]engine.Message{{Role: "user"}, {Role: "ipython"}}, Options{}, `message 1: role "ipython"`},
		{[]engine.Message{{Role: "user"}, {Role: "assistant", ToolCalls: two}}, Options{}, "message 1: 2 tool calls"},
		{[]engine.Message{{Role: "tool", ToolCalls: two[:1]}}, Options{}, "message 0: a tool message has tool calls"},
		{[]engine.Message{{Role: "system"}}, Options{Tools: tool}, "no first user message"},
		{[]engine.Message{{Role: "system"}, {Role: "assistant"}}, Options{Tools: tool}, "message 1: the tools go into the first message"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{`)}}, "Tools[0]"},
		{[]engine.Message{{Role: "user"}, {Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: json.RawMessage(`{`)}}}}, Options{}, "message 1: tool call 0"},
	}
	for _, tt := range tests {
		if _, err := Render(tt.msgs, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Render(%v): err = %v, want one mentioning %q", tt.msgs, err, tt.want)
		}
	}
	// With the tools in the system turn, neither of the last two needs a
	// user message.
	for _, msgs := range [][]engine.Message{{{Role: "system"}}, {{Role: "system"}, {Role: "assistant"}}} {
		if _, err := Render(msgs, Options{Tools: tool, ToolsInSystem: true}); err != nil {
			t.Errorf("Render(%v) with ToolsInSystem: %v", msgs, err)
		}
	}
}
