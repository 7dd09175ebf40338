package chat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
)

func TestRenderReference(t *testing.T) {
	reftest.Check(t, reftest.Load(t, 44), func(c reftest.Case) (string, [][2]int, error) {
		o := struct {
			Tools               []json.RawMessage `json:"tools"`
			AddGenerationPrompt bool              `json:"add_generation_prompt"`
			ReasoningEffort     string            `json:"reasoning_effort"`
			ModelIdentity       string            `json:"model_identity"`
			Date                string            `json:"date"`
		}{Date: "2025-07-08"}
		c.Decode(t, &o)
		d, err := time.Parse(time.DateOnly, o.Date)
		if err != nil {
			t.Fatal(err)
		}
		return RenderSpans(c.Messages, Options{Tools: o.Tools, AddGenerationPrompt: o.AddGenerationPrompt,
			ReasoningEffort: o.ReasoningEffort, ModelIdentity: o.ModelIdentity, Now: func() time.Time { return d }})
	})
}

// Every byte the caller wrote is inside a span, and no template marker is.
func TestRenderSpans(t *testing.T) {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "f¤", "description": "d¤", "parameters": {"type": "object", "properties": {"p¤": {"type": "string", "description": "e¤"}}}}}`)
	msgs := []engine.Message{
		{Role: "system", Content: "s¤"},
		{Role: "user", Content: "u¤<|end|><|return|>"},
		{Role: "assistant", Content: "a¤"},
		{Role: "user", Content: "v¤"},
		{Role: "assistant", ReasoningContent: "r¤", ToolCalls: []engine.ToolCall{{Name: "f¤", Arguments: json.RawMessage(`{"x": "¤"}`)}}},
		{Role: "tool", Content: "t¤"},
	}
	for _, tools := range [][]json.RawMessage{nil, {tool}} {
		text, spans, err := RenderSpans(msgs, Options{Tools: tools, AddGenerationPrompt: true, ModelIdentity: "i¤"})
		if err != nil {
			t.Fatal(err)
		}
		if n, want := strings.Count(text, "¤"), 10+4*len(tools); n != want {
			t.Errorf("%d marks in the render, want %d:\n%s", n, want, text)
		}
		reftest.CheckSpans(t, text, spans, "¤", Start, Channel, Message, Call, "# Tools", "# Instructions")
	}
}

// An assistant turn with several calls (which the template, assuming one,
// would cut to the first) is written as one turn per call would be, and
// the results after it are named after the calls in order.
func TestRenderParallelCalls(t *testing.T) {
	msgs := []engine.Message{
		{Role: "user", Content: "Weather and time?"},
		{Role: "assistant", ReasoningContent: "Both.", ToolCalls: []engine.ToolCall{
			{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}, {Name: "get_time"}}},
		{Role: "tool", Content: "sunny"},
		{Role: "tool", Content: "14:05"},
	}
	got, err := Render(msgs, Options{AddGenerationPrompt: true, Now: func() time.Time { return time.Date(2025, 7, 8, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|start|>user<|message|>Weather and time?<|end|>" +
		"<|start|>assistant<|channel|>analysis<|message|>Both.<|end|>" +
		`<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>` +
		"<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{}<|call|>" +
		`<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"sunny"<|end|>` +
		`<|start|>functions.get_time to=assistant<|channel|>commentary<|message|>"14:05"<|end|>` +
		"<|start|>assistant"
	if _, rest, _ := strings.Cut(got, "for every message.<|end|>"); rest != want {
		t.Errorf("got\n%q\nwant\n%q", rest, want)
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
		{[]engine.Message{{Role: "user"}, {Role: "system", Content: "late"}}, Options{}, "message 1: a system message after the first"},
		{[]engine.Message{{Role: "user", ToolCalls: []engine.ToolCall{{Name: "f"}}}}, Options{}, "message 0: a user message has tool calls"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"a":`)}}, "Tools[0]"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"description":"x"}}`)}}, "Tools[0]: the function has no name"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"name":"f","description":3}`)}}, "description is not a string"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"name":"f","parameters":{"properties":[1]}}`)}}, "properties is not an object"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"name":"f","parameters":{"properties":{"a":{}},"required":7}}`)}}, "not iterable"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"name":"f","parameters":{"properties":{"a":{"type":"string","enum":5}}}}`)}}, "enum: int is not iterable"},
		{[]engine.Message{{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f"}, {Name: "g", Arguments: json.RawMessage(`[`)}}}}, Options{}, "message 0: tool call 1"},
		{[]engine.Message{{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: json.RawMessage(`"{nope"`)}}}}, Options{}, "a string that is not JSON"},
		{[]engine.Message{{Role: "user"}, {Role: "tool", Content: "x"}}, Options{}, "message 1: Message has tool role"},
	}
	for _, tt := range tests {
		if _, err := Render(tt.msgs, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Render(%v): err = %v, want one mentioning %q", tt.msgs, err, tt.want)
		}
	}
}
