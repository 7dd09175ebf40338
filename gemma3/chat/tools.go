package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

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
type ToolParser struct{ p *chatfmt.LeadParser }

// NewToolParser returns a parser.
func NewToolParser() *ToolParser {
	return &ToolParser{chatfmt.NewLeadParser(decide, -1, "", false)}
}

// Push takes one generated token, its id and its text, and returns the
// events it completes. The whole JSON object is held until it closes.
func (t *ToolParser) Push(id int32, text string) []toolcall.Event { return t.p.Push(id, text) }

// Flush ends the answer and returns what was held back.
func (t *ToolParser) Flush() []toolcall.Event { return t.p.Flush() }

// InCall reports whether the parser is inside the JSON object.
func (t *ToolParser) InCall() bool { return t.p.InCall() }

var callStart = regexp.MustCompile(`^\{\s*"tool_calls?"\s*:`)

// decide reads the object the answer opened with, as llama.cpp's
// common_chat_parse_generic does: tool_calls, else tool_call, else
// response.
func decide(raw string, complete bool) []toolcall.Event {
	looks := callStart.MatchString(raw)
	var v chatfmt.Value
	var err error
	if complete {
		v, err = chatfmt.Parse([]byte(raw))
	} else {
		err = errors.New("the answer ended inside the object")
	}
	if err != nil {
		if looks {
			return []toolcall.Event{chatfmt.Malformed(raw, err)}
		}
		return nil
	}
	if calls, ok := v.Get("tool_calls"); ok {
		if calls.Kind != chatfmt.Array || len(calls.Items) == 0 {
			return []toolcall.Event{chatfmt.Malformed(raw, errors.New(`"tool_calls" is not an array of calls`))}
		}
		var out []toolcall.Event
		for _, c := range calls.Items {
			out = append(out, callEvent(c))
		}
		return out
	}
	if c, ok := v.Get("tool_call"); ok {
		return []toolcall.Event{callEvent(c)}
	}
	if r, ok := v.Get("response"); ok {
		if r.Kind == chatfmt.String {
			return []toolcall.Event{{Kind: toolcall.KindText, Text: r.Str}}
		}
		return []toolcall.Event{{Kind: toolcall.KindText, Text: dump(r)}}
	}
	return nil
}

func callEvent(c chatfmt.Value) toolcall.Event {
	var sb strings.Builder
	c.Dump(&sb, chatfmt.Python, -1)
	call, err := chatfmt.ParseCall([]byte(sb.String()), "arguments")
	if err != nil {
		return chatfmt.Malformed(sb.String(), err)
	}
	return toolcall.Event{Kind: toolcall.KindCall, Call: call}
}

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
	if len(tools) == 0 {
		return nil, errors.New("chat: ResponseSchema needs at least one tool")
	}
	type nameSchema struct {
		Type  string `json:"type"`
		Const string `json:"const"`
	}
	type call struct {
		Type       string `json:"type"`
		Properties struct {
			Name      nameSchema      `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	var alts []call
	for i, t := range tools {
		name, params, err := chatfmt.ToolFunction(t)
		if err != nil {
			return nil, fmt.Errorf("chat: tools[%d]: %w", i, err)
		}
		c := call{Type: "object", Required: []string{"name", "arguments"}}
		c.Properties.Name = nameSchema{"string", name}
		c.Properties.Arguments = params
		alts = append(alts, c)
	}
	var one any = alts[0]
	if len(alts) > 1 {
		one = struct {
			AnyOf []call `json:"anyOf"`
		}{alts}
	}
	toolCall := map[string]any{"type": "object", "properties": map[string]any{"tool_call": one}, "required": []string{"tool_call"}}
	if required {
		return json.Marshal(toolCall)
	}
	response := map[string]any{"type": "object", "properties": map[string]any{"response": map[string]string{"type": "string"}}, "required": []string{"response"}}
	return json.Marshal(map[string]any{"anyOf": []any{toolCall, response}})
}
