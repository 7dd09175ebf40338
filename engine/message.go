package engine

import "encoding/json"

// Message is one turn of a conversation.
type Message struct {
	// Role is "system", "user", "assistant" or "tool". Where a system
	// message may stand besides first depends on the model's template:
	// Qwen's and Llama 3's render one anywhere, SmolLM3's only first,
	// Gemma 3's only where an assistant turn would be (the format's Prompt
	// says so with an error; the server folds later ones into the next
	// user turn).
	Role string `json:"role"`
	// Content is the text of the turn. For an assistant turn it may hold the
	// model's own reasoning block; the chat template decides what to show.
	Content string `json:"content"`
	// ReasoningContent is an assistant turn's reasoning, kept apart from
	// Content (EventReasoning's text). Templates usually leave earlier
	// reasoning out of the prompt.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// ToolCalls are the calls an assistant turn made (EventToolCall's
	// calls). The model's template writes them back the way the model
	// writes calls.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, on a tool message, the id of the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
	// Images are the turn's images, in order: each stands where an
	// ImageMarker stands in Content (one marker per image). A model takes
	// them when it was opened with a projector (WithProjector).
	Images []Image `json:"images,omitempty"`
}

// ToolCall is a function call made by the model.
type ToolCall struct {
	// ID identifies the call within a conversation (the engine numbers the
	// calls of a generation call_0, call_1, ...; APIs may replace it).
	ID string `json:"id,omitempty"`
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments is a JSON object ({} when the model gave none).
	Arguments json.RawMessage `json:"arguments,omitempty"`
}
