package chatfmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/toolcall"
)

// llama.cpp's generic JSON tool format, for templates that show neither
// tools, nor calls, nor results (Gemma 3's, Phi-3.5-mini's). In the
// releases that rendered templates with minja, llama.cpp
// (common_chat_params_init_generic) added an instruction to answer in JSON
// to the system text, and minja's chat_template::apply polyfilled the rest
// before rendering: the tools listed in the system text with an example
// call, each assistant's tool calls as a JSON object in its content, each
// tool result as a user turn holding a JSON object. The model answers with
// one JSON object: a call, or {"response": …}.

// The texts the generic format adds to the system prompt.
const (
	// GenericRespond is common_chat_params_init_generic's instruction.
	GenericRespond = "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request"
	// GenericToolsIntro opens minja's tool list.
	GenericToolsIntro = "You can call any of the following tools to satisfy the user's requests: "
)

// GenericExample returns the example minja adds after the tool list: the
// polyfilled call of a dummy tool, as the template renders an assistant
// turn holding it, between "Example tool call syntax" and two newlines.
// minja cuts the example out of a render of a user turn and that assistant
// turn, so it ends with what the template writes after an assistant's
// content (and the end-of-sequence token, when the template writes that
// too): tail, "<end_of_turn>\n" for Gemma 3.
func GenericExample(tail string) string {
	return "\n\nExample tool call syntax:\n\n{\n  \"tool_calls\": [\n    {\n      \"name\": \"tool_name\",\n      \"arguments\": {\n        \"arg1\": \"some_value\"\n      },\n      \"id\": \"call_1___\"\n    }\n  ]\n}" + tail + "\n\n"
}

// Piece is text of a turn: the caller's (Literal) or the template's.
type Piece struct {
	Text    string
	Literal bool
}

// Turn is a message as the template sees it after the generic format's
// rewriting: a role and its text.
type Turn struct {
	Role   string
	Pieces []Piece
	// Message is the index of the message it comes from, -1 for the
	// system turn the tools were added in.
	Message int
}

// GenericTurns rewrites msgs for the generic format: with tools, the system
// text (the first message's, or a new system turn's) gets GenericRespond
// and the tool list, rebuilt from each tool's name, description and
// parameters and printed as minja's dump(2), followed by example
// (GenericExample); an assistant's tool calls become its content, the JSON
// {"tool_calls": [{"name", "arguments", "id"}], "content": …}; a tool
// result becomes the user turn {"tool_response": {"tool", "content",
// "tool_call_id"}}; both printed as nlohmann::json's dump(2). The roles
// must have passed CheckRoles. Errors name the message or tool.
func GenericTurns(msgs []engine.Message, tools []json.RawMessage, example string) ([]Turn, error) {
	turns := make([]Turn, len(msgs))
	for i, m := range msgs {
		t, err := genericTurn(m)
		if err != nil {
			return nil, fmt.Errorf("chat: message %d: %w", i, err)
		}
		t.Message = i
		turns[i] = t
	}
	if len(tools) == 0 {
		return turns, nil
	}
	list, err := genericTools(tools)
	if err != nil {
		return nil, err
	}
	text := []Piece{{GenericToolsIntro, false}, {list, true}, {example, false}}
	if len(turns) > 0 && turns[0].Role == "system" {
		turns[0].Pieces = append(turns[0].Pieces, Piece{"\n\n" + GenericRespond + "\n\n", false})
		turns[0].Pieces = append(turns[0].Pieces, text...)
		return turns, nil
	}
	sys := Turn{Role: "system", Pieces: append([]Piece{{GenericRespond + "\n\n", false}}, text...), Message: -1}
	return append([]Turn{sys}, turns...), nil
}

// genericTurn rewrites one message (see GenericTurns).
func genericTurn(m engine.Message) (Turn, error) {
	switch {
	case len(m.ToolCalls) > 0: // an assistant's (CheckRoles)
		calls := Value{Kind: Array}
		for j, c := range m.ToolCalls {
			args := Value{Kind: Object}
			if len(strings.TrimSpace(string(c.Arguments))) > 0 {
				var err error
				if args, err = Parse(c.Arguments); err != nil {
					return Turn{}, fmt.Errorf("tool call %d: arguments: %w", j, err)
				}
				if args.Kind == String { // minja parses string arguments back
					if v, err := Parse([]byte(args.Str)); err == nil {
						args = v
					}
				}
			}
			call := object("name", str(c.Name), "arguments", args)
			if c.ID != "" {
				call = object("name", str(c.Name), "arguments", args, "id", str(c.ID))
			}
			calls.Items = append(calls.Items, call)
		}
		obj := object("tool_calls", calls)
		if m.Content != "" {
			obj = object("tool_calls", calls, "content", str(m.Content))
		}
		return Turn{Role: "assistant", Pieces: []Piece{{dump2(obj, Nlohmann), true}}}, nil
	case m.Role == "tool":
		var kv []any
		if m.Name != "" {
			kv = append(kv, "tool", str(m.Name))
		}
		kv = append(kv, "content", str(m.Content))
		if m.ToolCallID != "" {
			kv = append(kv, "tool_call_id", str(m.ToolCallID))
		}
		return Turn{Role: "user", Pieces: []Piece{{dump2(object("tool_response", object(kv...)), Nlohmann), true}}}, nil
	}
	return Turn{Role: m.Role, Pieces: []Piece{{m.Content, true}}}, nil
}

// genericTools prints the tool list as minja's polyfill does: each tool
// rebuilt as {"type": "function", "function": {"name", "description",
// "parameters"}}, as llama.cpp passes them, in minja's dump(2).
func genericTools(tools []json.RawMessage) (string, error) {
	list := Value{Kind: Array}
	for i, raw := range tools {
		fn, err := Parse(raw)
		if err != nil {
			return "", fmt.Errorf("chat: Tools[%d]: %w", i, err)
		}
		if f, ok := fn.Get("function"); ok {
			fn = f
		}
		name, ok := fn.Get("name")
		if !ok || name.Kind != String || name.Str == "" {
			return "", fmt.Errorf("chat: Tools[%d]: the tool has no name", i)
		}
		desc, ok := fn.Get("description")
		if !ok {
			desc = str("")
		}
		params, ok := fn.Get("parameters")
		if !ok {
			params = Value{Kind: Object}
		}
		list.Items = append(list.Items, object("type", str("function"), "function", object("name", name, "description", desc, "parameters", params)))
	}
	return dump2(list, Minja), nil
}

func str(s string) Value { return Value{Kind: String, Str: s} }

// object builds an object from key, value pairs.
func object(kv ...any) Value {
	v := Value{Kind: Object}
	for i := 0; i < len(kv); i += 2 {
		v.Keys = append(v.Keys, kv[i].(string))
		v.Items = append(v.Items, kv[i+1].(Value))
	}
	return v
}

func dump2(v Value, style Style) string {
	var sb strings.Builder
	v.Dump(&sb, style, 2)
	return sb.String()
}

// NewGenericParser returns a parser of an answer in the generic format:
// the whole answer is one JSON object,
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
// space dropped.
func NewGenericParser() *LeadParser { return NewLeadParser(decideGeneric, -1, "", false) }

var genericCallStart = regexp.MustCompile(`^\{\s*"tool_calls?"\s*:`)

// decideGeneric reads the object the answer opened with, as llama.cpp's
// common_chat_parse_generic does: tool_calls, else tool_call, else
// response.
func decideGeneric(raw string, complete bool) []toolcall.Event {
	looks := genericCallStart.MatchString(raw)
	var v Value
	var err error
	if complete {
		v, err = Parse([]byte(raw))
	} else {
		err = errors.New("the answer ended inside the object")
	}
	if err != nil {
		if looks {
			return []toolcall.Event{Malformed(raw, err)}
		}
		return nil
	}
	if calls, ok := v.Get("tool_calls"); ok {
		if calls.Kind != Array || len(calls.Items) == 0 {
			return []toolcall.Event{Malformed(raw, errors.New(`"tool_calls" is not an array of calls`))}
		}
		var out []toolcall.Event
		for _, c := range calls.Items {
			out = append(out, genericCall(c))
		}
		return out
	}
	if c, ok := v.Get("tool_call"); ok {
		return []toolcall.Event{genericCall(c)}
	}
	if r, ok := v.Get("response"); ok {
		if r.Kind == String {
			return []toolcall.Event{{Kind: toolcall.KindText, Text: r.Str}}
		}
		return []toolcall.Event{{Kind: toolcall.KindText, Text: dump2(r, Nlohmann)}}
	}
	return nil
}

func genericCall(c Value) toolcall.Event {
	var sb strings.Builder
	c.Dump(&sb, Python, -1)
	call, err := ParseCall([]byte(sb.String()), "arguments")
	if err != nil {
		return Malformed(sb.String(), err)
	}
	return toolcall.Event{Kind: toolcall.KindCall, Call: call}
}

// GenericSchema returns the JSON schema of the generic format, which
// llama.cpp imposed on every answer when tools were given (its grammar was
// not lazy): {"tool_call": {"name": …, "arguments": …}}, the name one of
// the tools' and the arguments valid under its parameters schema, or,
// unless required, {"response": "…"}. Compile it with
// grammar.FromJSONSchema; required forces a call (OpenAI's tool_choice
// "required"; pass one tool for a named function). One call per answer:
// llama.cpp turned parallel calls off for templates that cannot show
// them. tools are in the OpenAI form or bare function objects.
func GenericSchema(tools []json.RawMessage, required bool) (json.RawMessage, error) {
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
		name, params, err := ToolFunction(t)
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
