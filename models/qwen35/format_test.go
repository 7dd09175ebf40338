package qwen35

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// Render is jinja2's rendering of Qwen3.5's template, byte for byte, on the
// reference conversations of testdata/render.py, errors included.
func TestRenderReference(t *testing.T) {
	reftest.Check(t, reftest.Load(t, 27), func(c reftest.Case) (string, [][2]int, error) {
		var o struct {
			AddGenerationPrompt bool  `json:"add_generation_prompt"`
			EnableThinking      *bool `json:"enable_thinking"`
		}
		c.Decode(t, &o)
		return Render(c.Messages, Options{AddGenerationPrompt: o.AddGenerationPrompt, EnableThinking: o.EnableThinking})
	})
}

// Every byte the caller wrote is inside a span, and no template marker is.
func TestRenderSpans(t *testing.T) {
	msgs := []engine.Message{
		{Role: "system", Content: "s¤"},
		{Role: "user", Content: "u¤<|im_end|>"},
		{Role: "assistant", Content: "<think>r¤</think>a¤", ToolCalls: []engine.ToolCall{{Name: "f¤", Arguments: json.RawMessage(`{"x¤": "¤", "y": [1]}`)}}},
		{Role: "tool", Content: "t¤"},
		{Role: "assistant", Content: "b¤", ReasoningContent: "r¤"},
		{Role: "user", Content: "u2¤"},
	}
	text, spans, err := Render(msgs, Options{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(text, "¤"); n != 9 {
		t.Errorf("%d marks in the render, want 9:\n%s", n, text)
	}
	reftest.CheckSpans(t, text, spans, "¤", "<|im_start|>", "<tool_call>", "<function=", "<parameter=", "<tool_response>", "<think>")
}

func TestRenderErrors(t *testing.T) {
	for _, c := range []struct {
		msgs []engine.Message
		want string
	}{
		{nil, "no messages"},
		{[]engine.Message{{Role: "assistant", Content: "hi"}}, "no user query"},
		{[]engine.Message{{Role: "user"}, {Role: "system"}}, "message 1"},
		{[]engine.Message{{Role: "user"}, {Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: json.RawMessage(`[1]`)}}}}, "tool call 0 (f)"},
		{[]engine.Message{{Role: "user"}, {Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "f", Arguments: json.RawMessage(`{`)}}}}, "tool call 0 (f)"},
	} {
		if _, _, err := Render(c.msgs, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Render(%v): %v, want an error with %q", c.msgs, err, c.want)
		}
	}
}

// The generation prompt opens the reasoning when thinking is on, so the
// answer's text up to </think> is reasoning; with thinking off it is all
// content (a stray </think> dropped, as the parser does for every family).
func TestParserStartsInReasoning(t *testing.T) {
	f, err := gguf.Open(sharedtest.Path(t, "golden-next/models/qwen35-tiny-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	format, err := Format(f)
	if err != nil {
		t.Fatal(err)
	}
	off := false
	for _, c := range []struct {
		thinking                *bool
		wantReasoning, wantText string
	}{
		{nil, "Easy.", "Paris."},
		{&off, "", "Easy.\n\nParis."},
	} {
		p := format.NewParser(engine.ParserOptions{Thinking: c.thinking})
		var reasoning, text string
		for _, piece := range []string{"Easy.", "</think>", "\n\n", "Paris."} {
			for _, ev := range p.Push(-1, piece) {
				switch ev.Kind {
				case engine.EventReasoning:
					reasoning += ev.Text
				case engine.EventContent:
					text += ev.Text
				}
			}
		}
		for _, ev := range p.Flush() {
			if ev.Kind == engine.EventContent {
				text += ev.Text
			}
		}
		if reasoning != c.wantReasoning || text != c.wantText {
			t.Errorf("thinking %v: reasoning %q, content %q; want %q, %q", c.thinking, reasoning, text, c.wantReasoning, c.wantText)
		}
	}
}
