package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/toolcall"
)

// ToolCallTag is the token Granite 3 writes before its tool calls (a
// special token of the Granite vocabulary, which decoding leaves out of
// the text: pass its id to NewToolParser).
const ToolCallTag = "<|tool_call|>"

// FormatCalls writes calls as a JSON list, the way Granite 3 answers with
// them after <|tool_call|> and the way Render writes an assistant's calls
// for Granite 3.3:
//
//	[{"name": "get_weather", "arguments": {"city": "Paris"}}]
//
// printed as Python's json.dumps prints it; arguments that are a JSON
// string (OpenAI's wire form) stay a string, empty ones are {}.
func FormatCalls(calls []engine.ToolCall) (string, error) {
	var sb strings.Builder
	sb.WriteString("[")
	for i, c := range calls {
		args, err := arguments(c.Arguments)
		if err != nil {
			return "", fmt.Errorf("tool call %d: %w", i, err)
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(`{"name": `)
		chatfmt.WriteJSONString(&sb, c.Name)
		sb.WriteString(`, "arguments": `)
		args.Dump(&sb, chatfmt.Python, -1)
		sb.WriteString("}")
	}
	sb.WriteString("]")
	return sb.String(), nil
}

// ToolParser splits a Granite 3 answer into text and tool calls while its
// tokens stream in. Granite 3 calls tools the way its template's system
// prompt asks, "<|tool_call|> followed by a JSON list of tools used":
//
//	<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]
//
// which is what llama.cpp's Granite format read (common_chat_parse_granite
// before its chat parsers were rewritten). An object of the list is a
// call when it has a "name" and nothing else but "arguments" (or
// "parameters", which models mix up; absent means {}), "id" and "type";
// text before <|tool_call|> is text. Beyond llama.cpp: a bare list of calls
// opening the answer is read too (that is what CallSchema forces, and what
// is left when the tag was decoded away without its id), as is a single
// call object in place of the list, and further tags or lists may follow
// a list (separated by white space, "," or ";"); text after the calls is
// text, the white space before it dropped.
//
// Text is streamed as soon as it is known not to be a call: only white
// space at the start and a partial <|tool_call|> written as text are held
// back. A JSON value at the start or after the tag is held until it
// closes. One that holds no call comes out as text (a JSON answer); one
// that starts like a call but cannot be read (broken JSON, arguments that
// are not an object, an answer that ends inside it) is a toolcall.KindError
// event with its raw text, and so is an item of a list of calls that is
// no call. A ToolParser is for one answer and not safe for concurrent use.
type ToolParser struct{ p *chatfmt.LeadParser }

// NewToolParser returns a parser; toolCallID is the id of <|tool_call|>
// in the model's vocabulary, or -1 to recognise it as text only.
func NewToolParser(toolCallID int32) *ToolParser {
	return &ToolParser{chatfmt.NewLeadParser(decideCalls, toolCallID, ToolCallTag, true).AcceptArrays()}
}

// Push takes one generated token, its id and its text, and returns the
// events it completes.
func (t *ToolParser) Push(id int32, text string) []toolcall.Event { return t.p.Push(id, text) }

// Flush ends the answer and returns what was held back.
func (t *ToolParser) Flush() []toolcall.Event { return t.p.Flush() }

// InCall reports whether the parser is inside a JSON value.
func (t *ToolParser) InCall() bool { return t.p.InCall() }

// callStart is how a call list (or a call object) begins.
var callStart = regexp.MustCompile(`^(?:\[\s*)?\{\s*"name"\s*:`)

// decideCalls reads a JSON value that opened the answer or followed the
// tag.
func decideCalls(raw string, complete bool) []toolcall.Event {
	looks := callStart.MatchString(raw)
	if !complete {
		if looks {
			return []toolcall.Event{chatfmt.Malformed(raw, errors.New("the answer ended inside the call"))}
		}
		return nil
	}
	v, err := chatfmt.Parse([]byte(raw))
	if err != nil {
		if looks {
			return []toolcall.Event{chatfmt.Malformed(raw, err)}
		}
		return nil
	}
	items := []chatfmt.Value{v}
	if v.Kind == chatfmt.Array {
		items = v.Items
	}
	calls := 0
	for _, it := range items {
		if isCall(it) {
			calls++
		}
	}
	if calls == 0 {
		return nil // a JSON answer, not a call
	}
	var out []toolcall.Event
	for _, it := range items {
		var sb strings.Builder
		it.Dump(&sb, chatfmt.Python, -1)
		if !isCall(it) {
			out = append(out, chatfmt.Malformed(sb.String(), errors.New("a list of calls holds something else")))
			continue
		}
		c, err := chatfmt.ParseCall([]byte(sb.String()), "arguments")
		if err != nil {
			out = append(out, chatfmt.Malformed(sb.String(), err))
			continue
		}
		out = append(out, toolcall.Event{Kind: toolcall.KindCall, Call: c})
	}
	return out
}

// isCall reports whether v is a call object: a "name" and nothing but
// "arguments", "parameters", "id" and "type" besides.
func isCall(v chatfmt.Value) bool {
	if _, ok := v.Get("name"); !ok {
		return false
	}
	for _, k := range v.Keys {
		switch k {
		case "name", "arguments", "parameters", "id", "type":
		default:
			return false
		}
	}
	return true
}

// CallSchema returns a JSON schema that only a list of calls of tools
// matches, the list Granite 3 writes after <|tool_call|>:
//
//	[{"name": "get_weather", "arguments": {"city": "Paris"}}]
//
// each name one of the tools' and its arguments valid under that tool's
// parameters schema (any object when it has none); one call, or with
// parallel one or more. Compiled with grammar.FromJSONSchema it forces a
// call (OpenAI's tool_choice "required"; pass one tool for a named
// function), as llama.cpp's Granite grammar did, except that the list is
// not preceded by <|tool_call|>: a grammar spells text with ordinary
// tokens, not the special token the model was trained on, so the list
// alone opens the answer, and ToolParser reads it there. tools are in the
// OpenAI form ({"type": "function", "function": {…}}) or the bare
// function objects.
func CallSchema(tools []json.RawMessage, parallel bool) (json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, errors.New("chat: CallSchema needs at least one tool")
	}
	names, params, err := chatfmt.ToolFunctions(tools)
	if err != nil {
		return nil, err
	}
	return chatfmt.CallSchema(names, params, "arguments", true, parallel)
}
