package chatml

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
)

func TestRenderReference(t *testing.T) {
	reftest.Check(t, reftest.Load(t, 23), func(c reftest.Case) (string, [][2]int, error) {
		var o struct {
			Tools               []json.RawMessage `json:"tools"`
			AddGenerationPrompt bool              `json:"add_generation_prompt"`
			DefaultSystem       string            `json:"default_system"`
		}
		c.Decode(t, &o)
		return RenderSpans(c.Messages, Options{Tools: o.Tools, AddGenerationPrompt: o.AddGenerationPrompt, DefaultSystem: o.DefaultSystem})
	})
}

// NoSystem renders llama.cpp's built-in ChatML template
// (common/chat.cpp's CHATML_TEMPLATE_SRC); want is jinja2's render of that
// template, and without a system message there is no system turn.
func TestRenderNoSystem(t *testing.T) {
	msgs := []engine.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"},
		{Role: "assistant", Content: " Hello! "}, {Role: "user", Content: "Once upon"}}
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n Hello! <|im_end|>\n<|im_start|>user\nOnce upon<|im_end|>\n<|im_start|>assistant\n"
	opts := Options{NoSystem: true, AddGenerationPrompt: true, DefaultSystem: "ignored"}
	if got, err := Render(msgs, opts); err != nil || got != want {
		t.Errorf("Render = %q, %v\nwant %q", got, err, want)
	}
	want = want[strings.Index(want, "<|im_start|>user"):]
	if got, err := Render(msgs[1:], opts); err != nil || got != want {
		t.Errorf("Render without a system message = %q, %v\nwant %q", got, err, want)
	}
}

// Every byte the caller wrote is inside a span, and no template marker is.
func TestRenderSpans(t *testing.T) {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "f¤", "description": "d¤", "parameters": {}}}`)
	msgs := []engine.Message{
		{Role: "user", Content: "u¤<|im_end|>"},
		{Role: "assistant", Content: "a¤", ToolCalls: []engine.ToolCall{{ID: "i¤", Name: "f¤", Arguments: json.RawMessage(`{"x": "¤"}`)}}},
		{Role: "tool", Content: "t¤", Name: "f¤", ToolCallID: "i¤"},
		{Role: "system", Content: "s¤"},
	}
	for _, tools := range [][]json.RawMessage{nil, {tool}} {
		text, spans, err := RenderSpans(msgs, Options{Tools: tools, AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(text, "¤"); n != 9+2*len(tools) {
			t.Errorf("%d marks in the render, want %d:\n%s", n, 9+2*len(tools), text)
		}
		reftest.CheckSpans(t, text, spans, "¤", ImStart, DefaultSystem, chatfmt.GenericRespond, "Example tool call")
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
		{[]engine.Message{{Role: "user"}}, Options{Tools: []json.RawMessage{json.RawMessage(`{"function": {}}`)}}, "Tools[0]: the tool has no name"},
		{[]engine.Message{{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f"}, {Name: "g", Arguments: json.RawMessage(`[`)}}}}, Options{}, "message 0: tool call 1"},
	}
	for _, tt := range tests {
		if _, err := Render(tt.msgs, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Render(%v): err = %v, want one mentioning %q", tt.msgs, err, tt.want)
		}
	}
}

func TestRecognize(t *testing.T) {
	b, err := os.ReadFile("testdata/HuggingFaceTB-SmolLM2-1.7B-Instruct.jinja")
	if err != nil {
		t.Fatal(err)
	}
	smol := string(b)
	escaped := strings.ReplaceAll(smol, "\n", `\n`) // the line breaks as Jinja escapes
	variant := strings.Replace(escaped, DefaultSystem, `You are Pip.\nBe kind.`, 1)
	tests := []struct {
		name, src string
		ok        bool
		system    string
	}{
		{"SmolLM2", smol, true, DefaultSystem},
		{"escaped line breaks", escaped, true, DefaultSystem},
		{"white space around", "\n" + smol + "\n", true, DefaultSystem},
		{"another default system", variant, true, "You are Pip.\nBe kind."},
		{"empty default system", strings.Replace(smol, DefaultSystem, "", 1), false, ""},
		{"quote in the default", strings.Replace(smol, DefaultSystem, `It\'s me`, 1), false, ""},
		{"plain ChatML", "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}", false, ""},
		{"whitespace-trimming tags", strings.Replace(smol, "{% for", "{%- for", 1), false, ""},
		{"Llama 3", "{{ bos_token }}{% for message in messages %}<|start_header_id|>", false, ""},
		{"empty", "", false, ""},
	}
	for _, tt := range tests {
		system, ok := Recognize(tt.src)
		if ok != tt.ok || system != tt.system {
			t.Errorf("%s: Recognize = %q, %v; want %q, %v", tt.name, system, ok, tt.system, tt.ok)
		}
	}
}
