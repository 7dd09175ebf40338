package engine

import (
	"errors"
	"fmt"
)

// PromptTooLongError is the error of a prompt that does not fit the
// context (it wraps ErrContextFull): APIs report the numbers in their own
// words, as Anthropic's "prompt is too long: N tokens > M maximum", which
// agents read to know they must compact the conversation.
type PromptTooLongError struct {
	// Tokens is the prompt's length, Context the most positions a
	// sequence holds (one of which is kept for the answer).
	Tokens, Context int
	// Dropped is how many old messages were left out before giving up
	// (GenerateOptions.DropOldest).
	Dropped int
}

func (e *PromptTooLongError) Error() string {
	how := ""
	if e.Dropped > 0 {
		how = fmt.Sprintf(" after dropping the %d oldest messages", e.Dropped)
	}
	return fmt.Sprintf("engine: the prompt is %d tokens%s but the context holds %d, so %d tokens must go (one position is kept for the answer): %v",
		e.Tokens, how, e.Context, e.Tokens-e.Context+1, ErrContextFull)
}

func (e *PromptTooLongError) Unwrap() error { return ErrContextFull }

// ErrTemplate wraps the errors of a Jinja chat template that cannot render
// a conversation: one that raises (raise_exception: "roles must
// alternate"), fails on the values it is given, or goes past the engine's
// bounds (a runaway loop or recursion). APIs answer such a request with a
// client error; the model goes on serving others.
var ErrTemplate = errors.New("the chat template cannot render this conversation")
