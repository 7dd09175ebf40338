package smollm3

import (
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/smollm3/chat"
)

// Format is SmolLM3's language side over a file's tokenizer (see
// FormatSpec).
type Format = family.Format

// FormatSpec is SmolLM3's chat format: the template of package chat (its
// date from now, or time.Now when now is nil), <|im_end|> ending a turn,
// reasoning in <think>…</think>, and Hermes <tool_call> blocks. ChatML
// models that follow SmolLM3's conventions can use it too.
func FormatSpec(now func() time.Time) family.FormatSpec {
	return family.FormatSpec{
		Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
			return chat.RenderSpans(msgs, chat.Options{EnableThinking: opts.Thinking, Tools: opts.Tools, AddGenerationPrompt: true, Now: now})
		},
		EndOfTurn: []string{"<|im_end|>"},
		Reasoning: true,
		Tools:     family.Hermes,
	}
}

// NewFormat returns SmolLM3's format over the tokenizer of file f. The
// tokenizer is read from the file on first use, so a file without one still
// loads (for Forward); its conversations then fail with the tokenizer's
// error. Message contents are plain text: a user who types "<|im_end|>"
// gets those characters, not the marker.
func NewFormat(f *gguf.File) *Format { return family.NewFormat(f, FormatSpec(nil)) }
