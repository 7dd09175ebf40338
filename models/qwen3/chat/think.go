package chat

import (
	smol "github.com/smolgo/smolgo/internal/chatfmt/think"
	"github.com/smolgo/smolgo/toolcall"
)

// Qwen3 writes its reasoning exactly as SmolLM3 does, between <think> and
// </think> at the start of its answer, so the parser is SmolLM3's
// (package internal/chatfmt/think, shared with SmolLM3), named here under the same names.
type (
	// Parser splits generated tokens into reasoning and answer.
	Parser = smol.Parser
	// ParserOptions adjust a Parser.
	ParserOptions = smol.ParserOptions
	// Segment is a piece of generated text of one Kind.
	Segment = smol.Segment
	// Kind tells reasoning from answer text.
	Kind = smol.Kind
)

// The kinds of segments, and the tags around the reasoning.
const (
	Content   = smol.Content
	Reasoning = smol.Reasoning
	OpenTag   = smol.OpenTag
	CloseTag  = smol.CloseTag
)

// NewParser returns a parser that knows the ids of <think> and </think>
// (151667 and 151668 in Qwen3's vocabulary; look them up with the
// tokenizer's ID, or pass -1 to match the tags as text only). With thinking
// on, the answer starts with the open tag; with EnableThinking false the
// prompt already holds an empty block and the answer is content.
func NewParser(openID, closeID int32, opts ParserOptions) *Parser {
	return smol.NewParser(openID, closeID, opts)
}

// NewToolParser returns the parser of Qwen3's tool calls, which are the
// Hermes form package toolcall reads:
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// openID and closeID are the ids of <tool_call> and </tool_call> (151657
// and 151658 in Qwen's vocabulary; -1 to match the tags as text only). To
// force a call, constrain the answer with grammar.ToolCalls, which writes
// exactly this form.
func NewToolParser(openID, closeID int32) *toolcall.Parser {
	return toolcall.NewParser(openID, closeID)
}
