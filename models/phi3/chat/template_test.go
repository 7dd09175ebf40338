package chat

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
)

// renderCase renders a reference case with the options render.py used.
func renderCase(t *testing.T, c reftest.Case) (string, [][2]int, error) {
	var o struct {
		Template            string            `json:"template"`
		Tools               []json.RawMessage `json:"tools"`
		AddGenerationPrompt bool              `json:"add_generation_prompt"`
	}
	c.Decode(t, &o)
	opts := Options{Tools: o.Tools, AddGenerationPrompt: o.AddGenerationPrompt}
	switch o.Template {
	case "phi4":
		opts.Template = Phi4Mini
	case "phi35":
		opts.Template = Phi35Mini
	default:
		t.Fatalf("%s: template %q", c.Name, o.Template)
	}
	return RenderSpans(c.Messages, opts)
}

func TestRenderReference(t *testing.T) {
	reftest.Check(t, reftest.Load(t, 40), func(c reftest.Case) (string, [][2]int, error) { return renderCase(t, c) })
}

// Every byte the caller wrote is inside a span, and no template marker is.
func TestRenderSpans(t *testing.T) {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "f¤", "description": "d¤", "parameters": {}}}`)
	msgs := []engine.Message{
		{Role: "system", Content: " s¤ "},
		{Role: "user", Content: "u¤<|im_end|>"},
		{Role: "assistant", Content: "a¤", ToolCalls: []engine.ToolCall{{ID: "i¤", Name: "f¤", Arguments: json.RawMessage(`{"x": "¤"}`)}}},
		{Role: "tool", Content: "t¤", Name: "f¤", ToolCallID: "i¤"},
		{Role: "assistant", Content: "a2¤"},
	}
	markers := []string{System, User, Assistant, End, EndOfText, Tool, EndTool, ToolCall, EndToolCall, DefaultToolSystem,
		"Respond in JSON", "Example tool call"}
	for _, tmpl := range []Template{Phi4Mini, Phi35Mini} {
		for _, tools := range [][]json.RawMessage{nil, {tool}} {
			text, spans, err := RenderSpans(msgs, Options{Template: tmpl, Tools: tools, AddGenerationPrompt: true})
			if err != nil {
				t.Fatal(err)
			}
			// Phi-4-mini drops the call's id and the result's name and id;
			// the generic format keeps them.
			want := 7 + 2*len(tools)
			if tmpl == Phi35Mini {
				want = 10 + 2*len(tools)
			}
			if n := strings.Count(text, "¤"); n != want {
				t.Errorf("%v: %d marks in the render, want %d:\n%s", tmpl, n, want, text)
			}
			reftest.CheckSpans(t, text, spans, "¤", markers...)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	bad := json.RawMessage(`{"function": {}}`)
	tests := []struct {
		msgs []engine.Message
		opts Options
		want string
	}{
		{nil, Options{}, "no messages"},
		{[]engine.Message{{Role: "user"}, {Role: "model"}}, Options{}, `message 1: role "model"`},
		{[]engine.Message{{Role: "tool", ToolCalls: []engine.ToolCall{{Name: "f"}}}}, Options{}, "message 0: a tool message has tool calls"},
		{[]engine.Message{{Role: "user"}, {Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: json.RawMessage(`{`)}}}}, Options{}, "message 1: tool call 0: arguments"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{bad}}, "Tools[0]: the tool has no name"},
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`[`)}}, "Tools[0]"},
		{[]engine.Message{{Role: "user"}}, Options{Template: Phi35Mini, Tools: []json.RawMessage{bad}}, "Tools[0]: the tool has no name"},
		{[]engine.Message{{Role: "user"}}, Options{Template: 7}, "unknown template"},
	}
	for _, tt := range tests {
		if _, err := Render(tt.msgs, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Render(%v, %v): err = %v, want one mentioning %q", tt.msgs, tt.opts.Template, err, tt.want)
		}
	}
}

// Detect knows the published templates as the files in testdata hold them,
// and nothing else.
func TestDetect(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	phi4, phi35 := read("microsoft-Phi-4-mini-instruct.jinja"), read("microsoft-Phi-3.5-mini-instruct.jinja")
	tests := []struct {
		src  string
		want Template
		ok   bool
	}{
		{phi4, Phi4Mini, true},
		{"\n" + phi4 + "\n", Phi4Mini, true},
		{strings.Replace(phi4, "{% else %}{{ eos_token }}{% endif %}", "{% endif %}", 1), Phi4Mini, true},
		{phi35, Phi35Mini, true},
		{strings.Replace(phi4, "<|end|>", "<|end|>\n", 1), 0, false},
		{"{{ bos_token }}{% for message in messages %}", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		if got, ok := Detect(tt.src); got != tt.want || ok != tt.ok {
			t.Errorf("Detect(%.40q…) = %v, %v; want %v, %v", tt.src, got, ok, tt.want, tt.ok)
		}
	}
}
