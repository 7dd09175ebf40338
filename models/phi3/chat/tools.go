package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/toolcall"
)

// ToolParser splits an answer into text and tool calls while its tokens
// stream in. A ToolParser is for one answer and not safe for concurrent
// use.
//
// NewToolParser reads Phi-4-mini's calls: a JSON list of calls between
// <|tool_call|> and <|/tool_call|>,
//
//	<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>
//
// (a single call object is read too, and "parameters" for "arguments").
// The tags may come as their tokens or spelled out in pieces; text before,
// between and after calls is text, and anything that could be the start of
// a tag is held back until the next token decides. A block that cannot be
// read (broken JSON, a call without a name, arguments that are not an
// object) is a toolcall.KindError event whose Raw is the block, tags
// included; a block the answer never closes is read if it is complete JSON
// and is an error otherwise.
type ToolParser struct {
	p interface {
		Push(id int32, text string) []toolcall.Event
		Flush() []toolcall.Event
		InCall() bool
	}
	tags bool // the events' Raw gets the tags back
}

// NewToolParser returns a parser of Phi-4-mini's calls. toolCallID and
// endToolCallID are the ids of <|tool_call|> and <|/tool_call|> in the
// vocabulary (200025 and 200026 in Phi-4-mini's), or -1 to recognize the
// tags as text only.
func NewToolParser(toolCallID, endToolCallID int32) *ToolParser {
	return &ToolParser{p: toolcall.NewTagParser(ToolCall, EndToolCall, toolCallID, endToolCallID), tags: true}
}

// Push takes one generated token, its id (-1 when the text is not one whole
// token) and its text, and returns the events it completes.
func (t *ToolParser) Push(id int32, text string) []toolcall.Event {
	return t.withTags(t.p.Push(id, text))
}

// Flush ends the answer and returns what was held back.
func (t *ToolParser) Flush() []toolcall.Event { return t.withTags(t.p.Flush()) }

// InCall reports whether the parser is inside a call.
func (t *ToolParser) InCall() bool { return t.p.InCall() }

// withTags gives malformed blocks their tags back, so that the text shown
// for them is what the model wrote.
func (t *ToolParser) withTags(evs []toolcall.Event) []toolcall.Event {
	if !t.tags {
		return evs
	}
	for i := range evs {
		if evs[i].Kind == toolcall.KindError {
			evs[i].Raw = ToolCall + evs[i].Raw + EndToolCall
		}
	}
	return evs
}

// CallSchema returns the JSON schema of the list Phi-4-mini writes between
// its tags,
//
//	[{"name": "get_weather", "arguments": {"city": "Paris"}}, …]
//
// each call's name one of the functions' and its arguments valid under
// that function's parameters schema (any object when it has none); with
// parallel, one or more calls, otherwise exactly one.
func CallSchema(funcs []grammar.Function, parallel bool) (json.RawMessage, error) {
	if len(funcs) == 0 {
		return nil, errors.New("chat: CallSchema needs at least one function")
	}
	names, params := make([]string, len(funcs)), make([]json.RawMessage, len(funcs))
	for i, f := range funcs {
		names[i], params[i] = f.Name, f.Parameters
	}
	return chatfmt.CallSchema(names, params, "arguments", true, parallel)
}

// CallGrammar returns a grammar that only Phi-4-mini calls of funcs match:
// <|tool_call|>, the list of CallSchema, <|/tool_call|>. It is how a server
// honours tool_choice "required" (all the functions) or a named function
// (funcs holds that one). The tags are spelled with the vocabulary's
// ordinary tokens (a grammar.Vocab leaves out added tokens), which the
// parser reads as well.
func CallGrammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	schema, err := CallSchema(funcs, opts.Parallel)
	if err != nil {
		return nil, err
	}
	src, err := grammar.JSONSchemaGBNF(schema)
	if err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	// The translation's first line is the root rule: wrap it in the tags.
	first, rest, _ := strings.Cut(src, "\n")
	list, ok := strings.CutPrefix(first, "root ::= ")
	if !ok {
		return nil, fmt.Errorf("chat: unexpected grammar translation %q", first)
	}
	return grammar.ParseContext(ctx, `root ::= "`+ToolCall+`" ( `+list+` ) "`+EndToolCall+`"`+"\n"+rest)
}
