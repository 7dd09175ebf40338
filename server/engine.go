package server

import (
	"context"
	"encoding/json"
	"errors"
	"iter"

	"github.com/smolgo/smolgo/grammar"
)

// Engine is what the server needs from a loaded model. It is deliberately
// small so that the server can be tested against a fake and so that any
// generation library with sessions can be served; FromSmolLM3 adapts a
// *smollm3.Model.
//
// An Engine must be safe for concurrent use: NewSession, ModelName and
// ContextLength are called from many request goroutines. A Session is used by
// one generation at a time; the server guarantees that.
type Engine interface {
	// ModelName is the id reported by GET /v1/models and in every response.
	ModelName() string
	// ContextLength is the model's context window in tokens.
	ContextLength() int
	// NewSession returns a fresh conversation state with its own KV cache.
	NewSession() Session
}

// Session is one conversation's state on the engine: a KV cache that is
// reused between turns when the new prompt starts with the previous one.
type Session interface {
	// Generate renders msgs with the chat template, runs the prompt and
	// streams the answer as events: reasoning first (if thinking is on),
	// then content, then exactly one EventDone carrying Stats. When ctx is
	// cancelled it stops soon after and ends with EventDone whose
	// StopReason is "cancelled" or with an error wrapping ctx.Err().
	// A prompt that does not fit the context yields an error wrapping
	// ErrContextFull before any event.
	Generate(ctx context.Context, msgs []Message, opts Options) iter.Seq2[Event, error]
	// Reset forgets the cached conversation.
	Reset()
}

// MemorySizer is implemented by sessions that can tell how many bytes of
// memory they hold (mostly the KV cache). The session store uses it to bound
// the memory held by idle web-chat conversations; sessions that do not
// implement it are bounded by count only.
type MemorySizer interface {
	MemoryBytes() int64
}

// ErrContextFull is returned (wrapped) by an engine when the prompt does not
// fit in the model's context window. The server answers it with HTTP 400 and
// the OpenAI error code "context_length_exceeded".
var ErrContextFull = errors.New("prompt does not fit in the context window")

// Message is one chat turn. Role is "system", "user", "assistant" or
// "tool" (a tool's result, which SmolLM3's template shows as a user turn;
// an assistant's earlier tool calls are in its Content, as the model wrote
// them).
type Message struct {
	Role             string `json:"role"`
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// Options control one generation. Nil pointers mean "the engine's default".
type Options struct {
	MaxTokens   int      // 0 = until end of turn or context full
	Temperature *float64 // 0 = greedy
	TopP        *float64
	TopK        *int
	MinP        *float64
	Seed        *int64
	// Penalties as in OpenAI's API (presence, frequency: -2..2) and
	// llama.cpp's repeat_penalty (1 = off).
	PresencePenalty  *float64
	FrequencyPenalty *float64
	RepeatPenalty    *float64
	Stop             []string // stop strings, not included in the output
	Thinking         *bool    // nil = template default (SmolLM3: thinking on)
	// Tools are the function definitions ({"type": "function", ...}) the
	// chat template shows the model; the server reads the calls out of the
	// answer (<tool_call>…</tool_call>).
	Tools []json.RawMessage
	// Format, if set, constrains the answer to a grammar (response_format,
	// grammar): every sampled token keeps it valid, and the answer ends
	// only when it is complete.
	Format *grammar.Grammar
}

// EventKind says what an Event carries.
type EventKind int

const (
	EventReasoning EventKind = iota // Text is part of the reasoning (<think> block)
	EventContent                    // Text is part of the answer
	EventDone                       // generation ended; Stats is set
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventReasoning:
		return "reasoning"
	case EventContent:
		return "content"
	case EventDone:
		return "done"
	}
	return "unknown"
}

// Event is one step of a streamed generation: usually one sampled token.
// Text may be empty when a token is an incomplete UTF-8 sequence.
type Event struct {
	Kind  EventKind
	Text  string
	Token int32
	Stats *Stats // only on EventDone
}

// Stats summarise a finished generation.
type Stats struct {
	PromptTokens        int
	CachedTokens        int // prompt tokens reused from the session's KV cache
	GeneratedTokens     int
	PrefillTokensPerSec float64
	DecodeTokensPerSec  float64
	StopReason          string // "stop", "length" or "cancelled"
}
