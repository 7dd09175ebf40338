package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
)

func TestRenderReference(t *testing.T) {
	reftest.Check(t, reftest.Load(t, 27), func(c reftest.Case) (string, [][2]int, error) {
		var o struct {
			Tools               []json.RawMessage `json:"tools"`
			AddGenerationPrompt bool              `json:"add_generation_prompt"`
			EnableThinking      *bool             `json:"enable_thinking"`
		}
		c.Decode(t, &o)
		return RenderSpans(c.Messages, Options{Tools: o.Tools, AddGenerationPrompt: o.AddGenerationPrompt, EnableThinking: o.EnableThinking})
	})
}

// Every byte the caller wrote is inside a span, and no template marker is.
func TestRenderSpans(t *testing.T) {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "f¤", "description": "d¤", "parameters": {}}}`)
	msgs := []engine.Message{
		{Role: "system", Content: "s¤"},
		{Role: "user", Content: "u¤<|im_end|>"},
		{Role: "assistant", Content: "<think>r¤</think>a¤", ToolCalls: []engine.ToolCall{{Name: "f¤", Arguments: json.RawMessage(`{"x": "¤"}`)}}},
		{Role: "tool", Content: "t¤"},
		{Role: "system", Content: "s2¤"},
	}
	for _, tools := range [][]json.RawMessage{nil, {tool}} {
		text, spans, err := RenderSpans(msgs, Options{Tools: tools, AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(text, "¤"); n != 8+2*len(tools) {
			t.Errorf("%d marks in the render, want %d:\n%s", n, 8+2*len(tools), text)
		}
		reftest.CheckSpans(t, text, spans, "¤", "<|im_start|>", "<tool_call>", "<tool_response>", "<think>", "# Tools")
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
		{[]engine.Message{{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f"}, {Name: "g", Arguments: json.RawMessage(`[`)}}}}, Options{}, "message 0: tool call 1"},
	}
	for _, tt := range tests {
		if _, err := Render(tt.msgs, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Render(%v): err = %v, want one mentioning %q", tt.msgs, err, tt.want)
		}
	}
}

func TestSplitReasoning(t *testing.T) {
	tests := []struct {
		m                  engine.Message
		content, reasoning string
	}{
		{engine.Message{Content: "plain"}, "plain", ""},
		{engine.Message{Content: "<think>\nr\n</think>\n\nc"}, "c", "r"},
		{engine.Message{Content: "x<think>a<think>\nb\n\n</think>y</think>\nz"}, "z", "b"},
		{engine.Message{Content: "<think>r</think>c", ReasoningContent: "given"}, "<think>r</think>c", "given"},
	}
	for _, tt := range tests {
		if c, r := SplitReasoning(tt.m); c != tt.content || r != tt.reasoning {
			t.Errorf("SplitReasoning(%q) = %q, %q; want %q, %q", tt.m.Content, c, r, tt.content, tt.reasoning)
		}
	}
}
