package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
)

func TestRenderReference(t *testing.T) {
	reftest.Check(t, reftest.Load(t, 21), func(c reftest.Case) (string, [][2]int, error) {
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
	tool := json.RawMessage(`{"type": "function", "function": {"name": "f¤", "description": "d¤", "parameters": {}}}`)
	msgs := []engine.Message{
		{Role: "system", Content: " s¤ "},
		{Role: "user", Content: "u¤<end_of_turn>"},
		{Role: "assistant", Content: "a¤", ToolCalls: []engine.ToolCall{{ID: "i¤", Name: "f¤", Arguments: json.RawMessage(`{"x": "¤"}`)}}},
		{Role: "tool", Content: "t¤", Name: "f¤", ToolCallID: "i¤"},
		{Role: "assistant", Content: "a2¤"},
	}
	for _, tools := range [][]json.RawMessage{nil, {tool}} {
		text, spans, err := RenderSpans(msgs, Options{Tools: tools, AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(text, "¤"); n != 10+2*len(tools) {
			t.Errorf("%d marks in the render, want %d:\n%s", n, 10+2*len(tools), text)
		}
		reftest.CheckSpans(t, text, spans, "¤", "<start_of_turn>", "<bos>", "Respond in JSON", "Example tool call")
	}
}

func TestRenderErrors(t *testing.T) {
	call := []engine.ToolCall{{Name: "f"}}
	tests := []struct {
		msgs []engine.Message
		opts Options
		want string
	}{
		{nil, Options{}, "no messages"},
		{[]engine.Message{{Role: "user"}, {Role: "model"}}, Options{}, `message 1: role "model"`},
		{[]engine.Message{{Role: "system"}}, Options{}, "message 0: a system message alone"},
		{[]engine.Message{{Role: "user"}, {Role: "user"}}, Options{}, "message 1: Gemma 3's template needs user and assistant turns to alternate"},
		{[]engine.Message{{Role: "system"}, {Role: "assistant"}}, Options{}, "message 1:"},
		{[]engine.Message{{Role: "system"}, {Role: "user"}, {Role: "assistant"}, {Role: "system"}}, Options{}, "message 3: "},
		{[]engine.Message{{Role: "user"}, {Role: "assistant", ToolCalls: call}, {Role: "tool"}, {Role: "tool"}}, Options{}, "message 3: " /* two results */},
		{[]engine.Message{{Role: "user"}, {Role: "assistant"}, {Role: "assistant"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"name": "f"}`)}}, "message 2:"},
		{[]engine.Message{{Role: "tool", ToolCalls: call}}, Options{}, "message 0: a tool message has tool calls"},
		{[]engine.Message{{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: json.RawMessage(`{`)}}}}, Options{}, "message 0: tool call 0"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"function": {}}`)}}, "Tools[0]: the tool has no name"},
	}
	for _, tt := range tests {
		if _, err := Render(tt.msgs, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Render(%v): err = %v, want one mentioning %q", tt.msgs, err, tt.want)
		}
	}
}
