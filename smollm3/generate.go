package smollm3

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/smollm3/chat"
)

// Message is one turn of a conversation (see chat.Message): Role is
// "system", "user", "assistant" or "tool".
type Message = chat.Message

// GenerateOptions controls one call of Session.Generate. The zero value
// generates greedily until the model ends its turn or the context is full,
// with thinking at the template's default (on).
type GenerateOptions struct {
	// MaxTokens caps the number of generated tokens (reasoning included).
	// 0 means until the end of the turn or of the context.
	MaxTokens int
	// Sampler picks each token; its zero value is greedy decoding.
	// sample.SmolLM3Defaults() is the model's recommended setting. The
	// penalties' window starts with the last tokens of the prompt, so a
	// repetition penalty also discourages echoing the question.
	Sampler sample.Config
	// Stop ends the answer at the first occurrence of any of these strings.
	// The stop string itself is not returned. Stop strings are matched in
	// the answer (content), not in the reasoning.
	Stop []string
	// Thinking turns SmolLM3's reasoning mode on or off for this request; nil
	// leaves it to the template (on, unless a system prompt says /no_think).
	Thinking *bool
	// Tools are function definitions in the OpenAI form ({"type":
	// "function", "function": {...}}) that the chat template lists in the
	// system turn (see chat.Options.Tools). The model calls them by writing
	// <tool_call>{...}</tool_call> in its answer; with Tools set, Generate
	// reads those calls out of the answer (package toolcall) and streams
	// each as an EventToolCall instead of content text, or as an
	// EventToolError when the model wrote a call that cannot be read.
	Tools []json.RawMessage
	// HideReasoning drops the reasoning events; the model still thinks.
	HideReasoning bool
	// PrefillProgress, if set, is called after each chunk of the prompt is
	// computed, with the prompt tokens done so far (cached ones included)
	// and the prompt's length, so that a program can show progress on a
	// long prompt. It runs on the generating goroutine; keep it quick.
	PrefillProgress func(done, total int)
	// DropOldest lets Generate drop the oldest messages (after a leading
	// system message) until the prompt fits the context, instead of failing
	// with ErrContextFull. The last message is never dropped.
	DropOldest bool
	// Constraint, if set, restricts the answer to a format (structured
	// output; see Constraint and package grammar). It is for one
	// generation: make a new one each time. Thinking is turned off, since
	// the reasoning would have to follow the format too. Stop strings and
	// MaxTokens can still cut the answer short (StopReason tells).
	Constraint Constraint
	// ShiftContext, with DropOldest, drops the oldest messages from the KV
	// cache by shifting it (llama.Cache.Shift, llama.cpp's context shift)
	// instead of recomputing everything after the system prompt: the kept
	// messages' keys are re-rotated to their new positions, so only the new
	// message is computed. It is an approximation: the kept messages keep
	// what they computed while the dropped ones were in view (on the tiny
	// test model the next-token logits move by RMS 0.7 against a fresh
	// prefill), which is why it is off by default.
	ShiftContext bool
}

// EventKind says what an Event carries.
type EventKind int

const (
	// EventReasoning is a piece of the model's reasoning (the text between
	// <think> and </think>).
	EventReasoning EventKind = iota
	// EventContent is a piece of the answer.
	EventContent
	// EventDone is the last event of a generation; it carries Stats.
	EventDone
	// EventToolCall is a complete tool call the model made (only with
	// GenerateOptions.Tools); ToolCall is set, and Text is the call as
	// SmolLM3 writes it (<tool_call>\n{"name": …, "arguments": …}\n</tool_call>).
	// The call is not part of the content events; SmolLM3's template shows
	// the model its earlier calls only in an assistant message's Content, so
	// put Text there for the next turn.
	EventToolCall
	// EventToolError is a tool call the model wrote but that cannot be read
	// (broken JSON, no name; only with GenerateOptions.Tools): Text is what
	// the model wrote, tags included, and Err says what is wrong (it wraps
	// toolcall.ErrMalformed). The generation goes on.
	EventToolError
)

// ToolCall is a function call made by the model: Name, and Arguments as a
// JSON object. It is chat.ToolCall, so an EventToolCall's call can go
// straight into the assistant Message's ToolCalls of the next turn.
type ToolCall = chat.ToolCall

func (k EventKind) String() string {
	switch k {
	case EventReasoning:
		return "reasoning"
	case EventContent:
		return "content"
	case EventDone:
		return "done"
	case EventToolCall:
		return "tool call"
	case EventToolError:
		return "tool error"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one step of a streamed generation. Concatenating the Text of the
// EventReasoning events gives the reasoning, of the EventContent events the
// answer.
type Event struct {
	Kind EventKind
	// Text is the new text: complete UTF-8 characters, never empty for
	// reasoning and content events. For tool-call events it is the call's
	// text, tags included.
	Text string
	// Token is the id of the last token that contributed to Text.
	Token int32
	// Stats is set on EventDone only.
	Stats *Stats
	// ToolCall is set on EventToolCall only.
	ToolCall *ToolCall
	// Err is set on EventToolError only.
	Err error
}

// Stop reasons reported in Stats.StopReason.
const (
	StopEndOfTurn = "stop"      // the model ended its turn, or a stop string matched
	StopLength    = "length"    // MaxTokens reached, or the context is full
	StopCancelled = "cancelled" // the context passed to Generate was cancelled
)

// Stats describes a finished generation.
type Stats struct {
	// PromptTokens is the length of the rendered prompt in tokens;
	// CachedTokens of them were already in the session's KV cache and were
	// not computed again.
	PromptTokens, CachedTokens int
	// ShiftedTokens is the number of cached positions dropped by a context
	// shift (GenerateOptions.ShiftContext) before the prompt was reused.
	ShiftedTokens int
	// SharedCachedTokens is the part of CachedTokens that came from the
	// model's PromptCache (computed by another session or an earlier
	// conversation) rather than from this session's own cache.
	SharedCachedTokens int
	// GeneratedTokens counts the tokens the model produced, including the
	// end-of-turn token and a token that completed a stop string.
	GeneratedTokens int
	// PrefillTokensPerSec is (PromptTokens-CachedTokens) over the prefill
	// time; DecodeTokensPerSec is GeneratedTokens over the decode time.
	PrefillTokensPerSec, DecodeTokensPerSec float64
	// StopReason is StopEndOfTurn, StopLength or StopCancelled.
	StopReason string
}

// String summarizes the stats on one line, for logs and status lines.
func (s Stats) String() string {
	return fmt.Sprintf("%d prompt tokens (%d cached) at %.1f tokens/s, %d generated at %.1f tokens/s, stop: %s",
		s.PromptTokens, s.CachedTokens, s.PrefillTokensPerSec, s.GeneratedTokens, s.DecodeTokensPerSec, s.StopReason)
}

// ErrSessionBusy is returned when Generate is called on a session that is
// still generating (a Session runs one generation at a time).
var ErrSessionBusy = errors.New("smollm3: session is busy with another generation")
