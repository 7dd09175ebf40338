package lfm2

import (
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// Format is LFM2's chat format: ChatML as LFM2's template writes it (the
// system turn only when there is one; an earlier assistant turn's
// reasoning, up to </think>, left out), <|im_end|> ending a turn. Tool
// definitions and LFM2's Python-style tool calls are not rendered or parsed
// by this format: a prompt with tools is an error naming the architecture.
func Format(f *gguf.File) (engine.Format, error) { return family.NewFormat(f, FormatSpec), nil }

// FormatSpec is LFM2's chat format (see Format).
var FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return Render(msgs, true)
	},
	EndOfTurn: []string{"<|im_end|>"},
}

// Render writes msgs as LFM2's template does (tools aside), ending with the
// assistant's header when addGenerationPrompt, and returns the byte ranges
// that came from the caller.
func Render(msgs []engine.Message, addGenerationPrompt bool) (string, [][2]int, error) {
	if err := chatfmt.Check(msgs); err != nil {
		return "", nil, err
	}
	var b chatfmt.Builder
	if msgs[0].Role == "system" {
		if msgs[0].Content != "" {
			b.WriteString("<|im_start|>system\n")
			b.Literal(msgs[0].Content)
			b.WriteString("<|im_end|>\n")
		}
		msgs = msgs[1:]
	}
	last := -1
	for i, m := range msgs {
		if m.Role == "assistant" {
			last = i
		}
	}
	for i, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n")
		content := m.Content
		if m.Role == "assistant" && i != last {
			if k := strings.LastIndex(content, "</think>"); k >= 0 {
				content = chatfmt.Strip(content[k+len("</think>"):])
			}
		}
		b.Literal(content)
		b.WriteString("<|im_end|>\n")
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), b.Spans(), nil
}
