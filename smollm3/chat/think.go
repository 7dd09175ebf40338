package chat

import "github.com/smolgo/smolgo/internal/chatfmt/think"

// SmolLM3 writes its reasoning between <think> and </think> at the start of
// its answer; the parser that separates it is shared with the other
// families that do the same (Qwen3), and named here under these names.
type (
	// Parser splits generated tokens into reasoning and answer.
	Parser = think.Parser
	// ParserOptions adjust a Parser.
	ParserOptions = think.ParserOptions
	// Segment is a piece of generated text of one Kind.
	Segment = think.Segment
	// Kind tells reasoning from answer text.
	Kind = think.Kind
)

// The kinds of segments, and the tags around the reasoning.
const (
	Content   = think.Content
	Reasoning = think.Reasoning
	OpenTag   = think.OpenTag
	CloseTag  = think.CloseTag
)

// NewParser returns a parser that knows the ids of <think> and </think>
// (128002 and 128003 in SmolLM3's vocabulary; -1 matches the tags as text
// only).
func NewParser(openID, closeID int32, opts ParserOptions) *Parser {
	return think.NewParser(openID, closeID, opts)
}
