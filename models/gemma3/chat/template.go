package chat

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// Options are the template's inputs besides the messages.
type Options struct {
	// AddGenerationPrompt ends the render with the model's header, ready
	// for generation.
	AddGenerationPrompt bool
	// Tools are function definitions in the OpenAI form ({"type":
	// "function", "function": {"name", "description", "parameters"}}).
	// Gemma 3's template has no place for them: they are described in the
	// system text the way llama.cpp's generic tool format does (see the
	// package documentation), and the model is asked to answer in JSON.
	Tools []json.RawMessage
}

// The template's markers.
const (
	BOS         = "<bos>"
	StartOfTurn = "<start_of_turn>"
	EndOfTurn   = "<end_of_turn>"
)

// ErrNoMessages is returned for an empty conversation.
var ErrNoMessages = chatfmt.ErrNoMessages

// Render formats a conversation with Gemma 3's chat template, byte for byte
// as Hugging Face transformers renders the published template (see the
// package documentation for its rules), <bos> included; tool use is
// rewritten first as llama.cpp did. The text is meant to be tokenized with
// special tokens parsed (and no second BOS added); RenderSpans also says
// which bytes came from the caller, to tokenize them as plain text.
func Render(msgs []engine.Message, opts Options) (string, error) {
	text, _, err := RenderSpans(msgs, opts)
	return text, err
}

// RenderSpans is Render that also returns the byte ranges ([start, end))
// of the text that came from the caller: message contents, tool
// definitions, and the JSON that carries tool calls and results.
// tokenizer.EncodeMarked keeps special tokens written there from becoming
// markers.
func RenderSpans(msgs []engine.Message, opts Options) (string, [][2]int, error) {
	if len(msgs) == 0 {
		return "", nil, ErrNoMessages
	}
	turns, err := chatfmt.GenericTurns(msgs, opts.Tools, EndOfTurn+"\n")
	if err != nil {
		return "", nil, err
	}

	var b chatfmt.Builder
	b.WriteString(BOS)
	var prefix []chatfmt.Piece
	if turns[0].Role == "system" {
		if len(turns) == 1 {
			return "", nil, errors.New("chat: message 0: a system message alone is dropped by Gemma 3's template, which writes it into the first user turn")
		}
		prefix = append(turns[0].Pieces, chatfmt.Piece{Text: "\n\n"})
		turns = turns[1:]
	}
	for i, t := range turns {
		if (t.Role == "user") != (i%2 == 0) {
			what := msgs[t.Message].Role
			hint := ""
			if what == "tool" {
				hint = "; each tool result is a user turn here, so two in a row cannot be rendered"
			}
			return "", nil, fmt.Errorf("chat: message %d: Gemma 3's template needs user and assistant turns to alternate, starting with user, and raises (\"Conversation roles must alternate user/assistant/user/assistant/...\") at this %s message%s", t.Message, what, hint)
		}
		role := t.Role
		if role == "assistant" {
			role = "model"
		}
		b.WriteString(StartOfTurn + role + "\n")
		if i == 0 {
			b.WritePieces(prefix)
		}
		// Jinja's trim strips the content (polyfilled JSON has no white
		// space to strip).
		b.Literal(chatfmt.Strip(t.Pieces[0].Text))
		b.WriteString(EndOfTurn + "\n")
	}
	if opts.AddGenerationPrompt {
		b.WriteString(StartOfTurn + "model\n")
	}
	return b.String(), b.Spans(), nil
}
