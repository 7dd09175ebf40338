package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
)

func TestRenderReference(t *testing.T) {
	reftest.Check(t, reftest.Load(t, 25), func(c reftest.Case) (string, [][2]int, error) {
		var o struct {
			Tools               []json.RawMessage `json:"tools"`
			AddGenerationPrompt bool              `json:"add_generation_prompt"`
		}
		c.Decode(t, &o)
		return RenderSpans(c.Messages, Options{Tools: o.Tools, AddGenerationPrompt: o.AddGenerationPrompt})
	})
}

// Every byte the caller wrote is inside a span, and no template marker is.
func TestRenderSpans(t *testing.T) {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "f¤", "description": "d¤", "parameters": {"type": "object", "properties": {"p¤": {"type": "string", "description": "e¤", "x¤": "y¤"}}, "z¤": 1}}}`)
	msgs := []engine.Message{
		{Role: "system", Content: "s¤"},
		{Role: "user", Content: "u¤<|im_end|>"},
		{Role: "assistant", Content: "a¤", ToolCalls: []engine.ToolCall{{Name: "f¤", Arguments: json.RawMessage(`{"p¤": "¤", "q": [1, "¤"]}`)}}},
		{Role: "tool", Content: "t¤"},
		{Role: "system", Content: "s2¤"},
	}
	for _, tools := range [][]json.RawMessage{nil, {tool}} {
		text, spans, err := RenderSpans(msgs, Options{Tools: tools, AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		if n, want := strings.Count(text, "¤"), 9+9*len(tools); n != want {
			t.Errorf("%d marks in the render, want %d:\n%s", n, want, text)
		}
		reftest.CheckSpans(t, text, spans, "¤", "<|im_start|>", "<tool_call>", "<tool_response>", "<function=", "<parameter=", "# Tools")
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		msgs []engine.Message
		opts Options
		want string
	}{
		{nil, Options{}, "no messages"},
		{[]engine.Message{{Role: "user"}, {Role: "developer"}}, Options{}, `message 1: role "developer"`},
		{[]engine.Message{{Role: "user", ToolCalls: []engine.ToolCall{{Name: "f"}}}}, Options{}, "message 0: a user message has tool calls"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"a":`)}}, "Tools[0]"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"function":{"description":"x"}}`)}}, "Tools[0]: the function has no name"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"name":"f","description":[1]}`)}}, "description is not a string"},
		{[]engine.Message{{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f"}, {Name: "g", Arguments: json.RawMessage(`[`)}}}}, Options{}, "message 0: tool call 1"},
		{[]engine.Message{{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: json.RawMessage(`[1]`)}}}}, Options{}, "not a JSON object"},
		{[]engine.Message{{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: json.RawMessage(`"{x"`)}}}}, Options{}, "a string that is not JSON"},
	}
	for _, tt := range tests {
		if _, err := Render(tt.msgs, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Render(%v): err = %v, want one mentioning %q", tt.msgs, err, tt.want)
		}
	}
}
