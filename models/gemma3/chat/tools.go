package chat

import (
	"encoding/json"

	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/toolcall"
)

// ToolParser splits a Gemma 3 answer into text and tool calls while its
// tokens stream in, reading llama.cpp's generic JSON format, which the
// system text set up by Options.Tools asks for: the whole answer is one
// JSON object,
//
//	{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}
//	{"tool_calls": [{"name": …, "arguments": …, "id": …}, …]}
//	{"response": "It is sunny."}
//
// A call object becomes toolcall.KindCall events, a "response" becomes
// text (a response that is not a string is printed as indented JSON, as
// llama.cpp does). An answer that does not open with "{" is text, streamed
// as it comes; an object of another shape, or one that cannot be read, is
// text too (llama.cpp's fallback), except that an object that starts as
// {"tool_call… and cannot be read is a toolcall.KindError event with its
// raw text. Text after the object (the schema allows none) is text, white
// space dropped. A ToolParser is for one answer and not safe for concurrent
// use.
type ToolParser struct{ p *chatfmt.GenericParser }

// NewToolParser returns a parser.
func NewToolParser() *ToolParser { return &ToolParser{chatfmt.NewGenericParser()} }

// Push takes one generated token, its id and its text, and returns the
// events it completes. The whole JSON object is held until it closes.
func (t *ToolParser) Push(id int32, text string) []toolcall.Event { return t.p.Push(id, text) }

// Flush ends the answer and returns what was held back.
func (t *ToolParser) Flush() []toolcall.Event { return t.p.Flush() }

// InCall reports whether the parser is inside the JSON object.
func (t *ToolParser) InCall() bool { return t.p.InCall() }

// ResponseSchema returns the JSON schema of llama.cpp's generic format for
// tools, which llama.cpp imposes on every answer when tools are given (its
// grammar is not lazy): {"tool_call": {"name": …, "arguments": …}}, the
// name one of the tools' and the arguments valid under its parameters
// schema, or, unless required, {"response": "…"}. Compile it with
// grammar.FromJSONSchema; required forces a call (OpenAI's tool_choice
// "required"; pass one tool for a named function). One call per answer:
// llama.cpp turns parallel calls off for templates, like Gemma 3's, that
// cannot show them. tools are in the OpenAI form or bare function objects.
func ResponseSchema(tools []json.RawMessage, required bool) (json.RawMessage, error) {
	return chatfmt.GenericSchema(tools, required)
}
