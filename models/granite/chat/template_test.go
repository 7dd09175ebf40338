package chat

import (
	"encoding/json"
	"os"
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

var templates = map[string]Template{"3.3": Granite33, "4.0": Granite40, "4.1": Granite41}

func TestRenderReference(t *testing.T) {
	reftest.Check(t, reftest.Load(t, 59), func(c reftest.Case) (string, [][2]int, error) {
		o := struct {
			Template            string            `json:"template"`
			Tools               []json.RawMessage `json:"tools"`
			Documents           []json.RawMessage `json:"documents"`
			Controls            json.RawMessage   `json:"controls"`
			Thinking            bool              `json:"thinking"`
			AddGenerationPrompt bool              `json:"add_generation_prompt"`
			Date                string            `json:"date"`
		}{Date: "2025-07-08"}
		c.Decode(t, &o)
		tmpl, ok := templates[o.Template]
		if !ok {
			t.Fatalf("%s: template %q", c.Name, o.Template)
		}
		return RenderSpans(c.Messages, Options{Template: tmpl, Tools: o.Tools, Documents: o.Documents,
			Controls: o.Controls, Thinking: o.Thinking, AddGenerationPrompt: o.AddGenerationPrompt, Now: date(t, o.Date)})
	})
}

// Every byte the caller wrote is inside a span, and no template marker is.
func TestRenderSpans(t *testing.T) {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "f¤", "description": "d¤", "parameters": {}}}`)
	doc := json.RawMessage(`{"doc_id": "i¤", "text": "t¤"}`)
	msgs := []engine.Message{
		{Role: "system", Content: " s¤ "},
		{Role: "user", Content: "u¤"},
		{Role: "assistant", Content: "c¤", ToolCalls: []engine.ToolCall{{Name: "f¤", Arguments: json.RawMessage(`{"x": "¤"}`)}}},
		{Role: "tool", Content: "t¤"},
		{Role: "system", Content: "s2¤"},
		{Role: "assistant", Content: "a¤"},
	}
	markers := []string{StartOfRole, EndOfRole, EndOfText, ToolCallTag, "<tool_call>", "<tool_response>", "You are"}
	for _, tmpl := range []Template{Granite33, Granite40, Granite41} {
		for _, extra := range []bool{false, true} {
			opts := Options{Template: tmpl, AddGenerationPrompt: true, Now: date(t, "2025-01-02")}
			want := 8
			if extra {
				opts.Tools, opts.Documents = []json.RawMessage{tool}, []json.RawMessage{doc}
				want += 4
				if tmpl == Granite33 {
					opts.Controls = json.RawMessage(`{"length": "¤"}`)
					want++
				}
			}
			text, spans, err := RenderSpans(msgs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(text, "¤"); n != want {
				t.Errorf("%v: %d marks in the render, want %d:\n%s", tmpl, n, want, text)
			}
			reftest.CheckSpans(t, text, spans, "¤", markers...)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	user := []engine.Message{{Role: "user"}}
	bad := json.RawMessage(`{`)
	tests := []struct {
		msgs []engine.Message
		opts Options
		want string
	}{
		{nil, Options{}, "no messages"},
		{[]engine.Message{{Role: "user"}, {Role: "tool_response"}}, Options{}, `message 1: role "tool_response"`},
		{[]engine.Message{{Role: "tool", ToolCalls: []engine.ToolCall{{Name: "f"}}}}, Options{}, "message 0: a tool message has tool calls"},
		{user, Options{Tools: []json.RawMessage{bad}}, "Tools[0]"},
		{user, Options{Template: Granite40, Tools: []json.RawMessage{bad}}, "Tools[0]"},
		{user, Options{Documents: []json.RawMessage{json.RawMessage(`[1]`)}}, "Documents[0]"},
		{user, Options{Documents: []json.RawMessage{json.RawMessage(`{"doc_id": [1]}`)}}, "Documents[0]: doc_id"},
		{user, Options{Documents: []json.RawMessage{json.RawMessage(`{"text": 3}`)}}, "Documents[0]: text"},
		{user, Options{Template: Granite41, Documents: []json.RawMessage{bad}}, "Documents[0]"},
		{user, Options{Controls: json.RawMessage(`["citations"]`)}, "Controls"},
		{user, Options{Template: 7}, "unknown"},
		{[]engine.Message{{Role: "user"}, {Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: bad}}}}, Options{}, "message 1: tool call 0"},
		{[]engine.Message{{Role: "user"}, {Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: bad}}}}, Options{Template: Granite40}, "message 1: tool call 0"},
	}
	for _, tt := range tests {
		if _, err := Render(tt.msgs, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Render(%v, %+v): err = %v, want one mentioning %q", tt.msgs, tt.opts, err, tt.want)
		}
	}
}

// Detect knows the three templates as llama.cpp keeps them, and no other.
func TestDetect(t *testing.T) {
	for file, want := range map[string]Template{
		"ibm-granite-granite-3.3-2B-Instruct.jinja": Granite33,
		"ibm-granite-granite-4.0.jinja":             Granite40,
		"ibm-granite-granite-4.1.jinja":             Granite41,
	} {
		src, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := Detect(string(src)); !ok || got != want {
			t.Errorf("Detect(%s) = %v, %v; want %v", file, got, ok, want)
		}
	}
	for _, src := range []string{"", "{{ messages }}",
		// Granite 3.1's default system prompt: lines, not one sentence.
		`{%- set system_message = "Knowledge Cutoff Date: April 2024.\nToday's Date: " + strftime_now('%B %d, %Y') + ".\nYou are Granite, developed by IBM." %}<|start_of_role|>`,
	} {
		if got, ok := Detect(src); ok {
			t.Errorf("Detect(%q) = %v, want none", src, got)
		}
	}
}
