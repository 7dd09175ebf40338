package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/toolcall"
)

// PythonTag is the token Llama 3 may write before a tool call (id 128010
// in the Llama 3 vocabulary). Llama 3.1 uses it for its built-in tools;
// Llama 3.2, whose template has none, sometimes writes it before a JSON
// call all the same.
const PythonTag = "<|python_tag|>"

// ToolParser splits a Llama 3.2 answer into text and tool calls while its
// tokens stream in. The model calls a tool by answering with a JSON object
// instead of text, as its template asks:
//
//	{"name": "get_weather", "parameters": {"city": "Paris"}}
//
// This is what llama.cpp's Llama 3.x format reads: the object must open
// the answer (after white space), may carry a leading "type": "function"
// member, and a call only counts when the object has a "name" and
// "parameters" (or "arguments", which models mix up). Beyond llama.cpp,
// <|python_tag|> announces a call anywhere in the answer, and further
// calls may follow a call, separated by white space, "," or ";" (llama.cpp
// reads one call and keeps the rest as text).
//
// Text is streamed as soon as it is known not to be a call: only the white
// space at the start (and a partial <|python_tag|> written as text) is held
// back. A JSON object is held until it closes. An object that is no call
// (a JSON answer) comes out as text; one that starts like a call but cannot
// be read (broken JSON, arguments that are not an object, an answer that
// ends inside it) is a toolcall.KindError event with its raw text, where
// llama.cpp would fall back to text. A ToolParser is for one answer and not
// safe for concurrent use.
type ToolParser struct{ p *chatfmt.LeadParser }

// NewToolParser returns a parser; pythonTagID is the id of <|python_tag|>
// (128010), or -1 to recognise it as text only.
func NewToolParser(pythonTagID int32) *ToolParser {
	return &ToolParser{chatfmt.NewLeadParser(decideCall, pythonTagID, PythonTag, true)}
}

// Push takes one generated token, its id and its text, and returns the
// events it completes.
func (t *ToolParser) Push(id int32, text string) []toolcall.Event { return t.p.Push(id, text) }

// Flush ends the answer and returns what was held back.
func (t *ToolParser) Flush() []toolcall.Event { return t.p.Flush() }

// InCall reports whether the parser is inside a JSON object.
func (t *ToolParser) InCall() bool { return t.p.InCall() }

// callStart is how llama.cpp recognises a call (its function regex).
var callStart = regexp.MustCompile(`^\{\s*(?:"type"\s*:\s*"function"\s*,\s*)?"name"\s*:`)

// decideCall reads an object the answer opened with.
func decideCall(raw string, complete bool) []toolcall.Event {
	looks := callStart.MatchString(raw)
	if !complete {
		if looks {
			return []toolcall.Event{chatfmt.Malformed(raw, errors.New("the answer ended inside the call"))}
		}
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		if looks {
			return []toolcall.Event{chatfmt.Malformed(raw, fmt.Errorf("not valid JSON: %v", err))}
		}
		return nil
	}
	_, name := obj["name"]
	_, params := obj["parameters"]
	_, args := obj["arguments"]
	typ, hasType := obj["type"]
	if !name || !params && !args || hasType && !bytes.Equal(bytes.TrimSpace(typ), []byte(`"function"`)) {
		return nil // a JSON answer, not a call
	}
	c, err := chatfmt.ParseCall([]byte(raw), "parameters")
	if err != nil {
		return []toolcall.Event{chatfmt.Malformed(raw, err)}
	}
	return []toolcall.Event{{Kind: toolcall.KindCall, Call: c}}
}

// CallSchema returns a JSON schema that only a call of one of tools
// matches, in the form the template asks for:
//
//	{"name": "get_weather", "parameters": {"city": "Paris"}}
//
// with the name one of the tools' and the parameters valid under that
// tool's parameters schema (any object when it has none). Compiled with
// grammar.FromJSONSchema, it forces a call (OpenAI's tool_choice
// "required"; pass one tool for a named function), as llama.cpp's Llama
// 3.x grammar does. tools are in the OpenAI form ({"type": "function",
// "function": {…}}) or the bare function objects.
func CallSchema(tools []json.RawMessage) (json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, errors.New("chat: CallSchema needs at least one tool")
	}
	names, params, err := chatfmt.ToolFunctions(tools)
	if err != nil {
		return nil, err
	}
	return chatfmt.CallSchema(names, params, "parameters", false, false)
}
