package engine

import "fmt"

// EventKind says what an Event carries.
type EventKind int

const (
	// EventReasoning is a piece of the model's reasoning (SmolLM3: the text
	// between <think> and </think>).
	EventReasoning EventKind = iota
	// EventContent is a piece of the answer.
	EventContent
	// EventToolCall is a complete tool call the model made (only with
	// GenerateOptions.Tools): ToolCall is set, and Text is the call as the
	// model wrote it. Calls are not part of the content events.
	EventToolCall
	// EventToolError is a tool call the model wrote but that cannot be read
	// (broken JSON, no name): Text is what the model wrote and Err says what
	// is wrong. The generation goes on.
	EventToolError
	// EventDone is the last event of a generation; it carries Stats.
	EventDone
)

func (k EventKind) String() string {
	switch k {
	case EventReasoning:
		return "reasoning"
	case EventContent:
		return "content"
	case EventToolCall:
		return "tool call"
	case EventToolError:
		return "tool error"
	case EventDone:
		return "done"
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
	// text as the model wrote it, tags included.
	Text string
	// Token is the id of the last token that contributed to Text.
	Token int32
	// Logprobs are the log-probabilities of the tokens behind this event's
	// text, when GenerateOptions.Logprobs asked for them.
	Logprobs []TokenLogprob
	// ToolCall is set on EventToolCall only.
	ToolCall *ToolCall
	// Err is set on EventToolError only.
	Err error
	// Stats is set on EventDone only.
	Stats *Stats
}

// TokenLogprob is a sampled token's log-probability, with the most likely
// alternatives (GenerateOptions.Logprobs).
type TokenLogprob struct {
	Token   int32
	Text    string // the token's text (it may be part of a UTF-8 character)
	Logprob float32
	Top     []TopLogprob
}

// TopLogprob is one of the most likely tokens at a position.
type TopLogprob struct {
	Token   int32
	Text    string
	Logprob float32
}

// Stop reasons reported in Stats.StopReason.
const (
	StopEndOfTurn = "stop"       // the model ended its turn, or a stop string matched
	StopLength    = "length"     // MaxTokens reached, or the context is full
	StopToolCalls = "tool_calls" // a forced tool call is complete (GenerateOptions.EndAfterToolCall)
	StopCancelled = "cancelled"  // the context passed to Generate was cancelled
)

// Stats describes a finished generation.
type Stats struct {
	// PromptTokens is the length of the rendered prompt in tokens;
	// CachedTokens of them were already in the session's KV cache (or the
	// model's prompt cache) and were not computed again.
	PromptTokens, CachedTokens int
	// SharedCachedTokens is the part of CachedTokens that came from the
	// model's prompt cache (computed by another session or an earlier
	// conversation) rather than from this session's own cache.
	SharedCachedTokens int
	// ImageRows is the number of image rows (PromptTokens counts them)
	// this generation encoded; rows the caches already held are not
	// encoded again.
	ImageRows int
	// DroppedMessages is the number of old messages left out so that the
	// prompt fits the context (GenerateOptions.DropOldest).
	DroppedMessages int
	// ShiftedTokens is the number of cached positions dropped by a context
	// shift (GenerateOptions.ShiftContext) before the prompt was reused.
	ShiftedTokens int
	// GeneratedTokens counts the tokens the model produced, including the
	// end-of-turn token and a token that completed a stop string.
	GeneratedTokens int
	// DraftTokens and AcceptedTokens count speculative decoding: tokens
	// proposed by the draft and how many of them the model confirmed.
	DraftTokens, AcceptedTokens int
	// Drafter is who drafted them (DrafterLookup, DrafterModel or DrafterMTP), or ""
	// when nobody did.
	Drafter Drafter
	// PrefillTokensPerSec is (PromptTokens-CachedTokens) over the prefill
	// time; DecodeTokensPerSec is GeneratedTokens over the decode time.
	PrefillTokensPerSec, DecodeTokensPerSec float64
	// QueueSeconds is how long the generation waited for a free sequence
	// slot (Options.MaxSequences) before its prompt was computed.
	QueueSeconds float64
	// StopReason is StopEndOfTurn, StopLength, StopToolCalls or
	// StopCancelled.
	StopReason string
	// StopString is the stop string (GenerateOptions.Stop) that ended the
	// answer, if one did (StopReason is then StopEndOfTurn).
	StopString string
}

// String summarizes the stats on one line, for logs and status lines.
func (s Stats) String() string {
	return fmt.Sprintf("%d prompt tokens (%d cached) at %.1f tokens/s, %d generated at %.1f tokens/s, stop: %s",
		s.PromptTokens, s.CachedTokens, s.PrefillTokensPerSec, s.GeneratedTokens, s.DecodeTokensPerSec, s.StopReason)
}
