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

// llama.cpp's generic tool format, for templates that show no tools (Gemma
// 3's, SmolLM2's). Up to the release that replaced minja, llama.cpp handled
// such a template in two steps: common_chat_params_init_generic added an
// instruction to answer in JSON to the system text, then minja's
// chat_template::apply rewrote ("polyfilled") what the template cannot
// show before rendering it:
//
//   - the tools: the system text gets "You can call any of the following
//     tools to satisfy the user's requests: ", the tools as indented JSON
//     and an example call;
//   - an assistant's tool calls: its content becomes the JSON
//     {"tool_calls": [{"name", "arguments", "id"}], "content": …};
//   - a tool result: a user turn holding {"tool_response": {"tool",
//     "content", "tool_call_id"}}.
//
// The model is to answer with one JSON object, {"tool_call": …} or
// {"response": …}: GenericParser reads it, GenericSchema describes it.

// Piece is text of a turn: the caller's (Literal) or the template's.
type Piece struct {
	Text    string
	Literal bool
}

// Turn is a message as the generic format hands it to the template: a role
// and its text. Message is the index of the message it came from, -1 for a
// system turn the format added.
type Turn struct {
	Role    string
	Pieces  []Piece
	Message int
}

// WritePieces writes ps, the caller's pieces as Literal.
func (b *Builder) WritePieces(ps []Piece) {
	for _, p := range ps {
		if p.Literal {
			b.Literal(p.Text)
		} else {
			b.WriteString(p.Text)
		}
	}
}

// The texts the generic format adds to the system turn:
// common_chat_params_init_generic's instruction, then minja's tool
// polyfill around the tools and the example call.
const (
	GenericRespond = "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request"
	genericIntro   = "You can call any of the following tools to satisfy the user's requests: "
	genericExample = "\n\nExample tool call syntax:\n\n"
)

// GenericExampleCall is the example call minja shows: the polyfilled call
// of a dummy tool, which it cuts out of a render of the template (see
// GenericTurns for what follows it).
const GenericExampleCall = "{\n  \"tool_calls\": [\n    {\n      \"name\": \"tool_name\",\n      \"arguments\": {\n        \"arg1\": \"some_value\"\n      },\n      \"id\": \"call_1___\"\n    }\n  ]\n}"

// GenericTurns returns msgs as llama.cpp's generic format hands them to the
// template: tool calls and results rewritten as JSON, and, with tools, the
// instruction, the tools and the example call added to the first system
// message (a system turn of their own, first, when there is none).
//
// exampleEnd is what the template writes after the example call, which
// minja cuts out of a render of an assistant's turn: the end of that turn,
// unless it is the file's EOS token followed by at most a line break, which
// minja leaves off. So Gemma 3 (EOS <eos>) passes "<end_of_turn>\n", a
// ChatML template whose EOS is <|im_end|> passes "".
//
// Roles are checked with CheckRoles.
func GenericTurns(msgs []engine.Message, tools []json.RawMessage, exampleEnd string) ([]Turn, error) {
	if err := CheckRoles(msgs); err != nil {
		return nil, err
	}
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
	text := []Piece{{genericIntro, false}, {list, true}, {genericExample + GenericExampleCall + exampleEnd + "\n\n", false}}
	if len(turns) > 0 && turns[0].Role == "system" {
		turns[0].Pieces = append(turns[0].Pieces, Piece{"\n\n" + GenericRespond + "\n\n", false})
		turns[0].Pieces = append(turns[0].Pieces, text...)
		return turns, nil
	}
	sys := Turn{Role: "system", Pieces: append([]Piece{{GenericRespond + "\n\n", false}}, text...), Message: -1}
	return append([]Turn{sys}, turns...), nil
}

// genericTurn is a message after minja's polyfills: an assistant's tool
// calls become the JSON object {"tool_calls": [...], "content": …}, a tool
// result the user turn {"tool_response": {"tool", "content",
// "tool_call_id"}}, both printed as nlohmann::json's dump(2).
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
		return Turn{Role: "assistant", Pieces: []Piece{{dump2(obj), true}}}, nil
	case m.Role == "tool":
		var kv []any
		if m.Name != "" {
			kv = append(kv, "tool", str(m.Name))
		}
		kv = append(kv, "content", str(m.Content))
		if m.ToolCallID != "" {
			kv = append(kv, "tool_call_id", str(m.ToolCallID))
		}
		return Turn{Role: "user", Pieces: []Piece{{dump2(object("tool_response", object(kv...))), true}}}, nil
	}
	return Turn{Role: m.Role, Pieces: []Piece{{m.Content, true}}}, nil
}

// genericTools is the tool list minja's polyfill adds to the system text:
// the tools, rebuilt from their name, description and parameters as
// llama.cpp does, printed as minja's dump(2).
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
	var sb strings.Builder
	list.Dump(&sb, Minja, 2)
	return sb.String(), nil
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

// dump2 prints v as nlohmann::json's dump(2).
func dump2(v Value) string {
	var sb strings.Builder
	v.Dump(&sb, Nlohmann, 2)
	return sb.String()
}

// GenericParser splits an answer into text and tool calls while its tokens
// stream in, reading the generic format's answer, which the system text
// that GenericTurns adds asks for: the whole answer is one JSON object,
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
// space dropped. A GenericParser is for one answer and not safe for
// concurrent use.
type GenericParser struct{ p *LeadParser }

// NewGenericParser returns a parser.
func NewGenericParser() *GenericParser {
	return &GenericParser{NewLeadParser(genericDecide, -1, "", false)}
}

// Push takes one generated token, its id and its text, and returns the
// events it completes. The whole JSON object is held until it closes.
func (g *GenericParser) Push(id int32, text string) []toolcall.Event { return g.p.Push(id, text) }

// Flush ends the answer and returns what was held back.
func (g *GenericParser) Flush() []toolcall.Event { return g.p.Flush() }

// InCall reports whether the parser is inside the JSON object.
func (g *GenericParser) InCall() bool { return g.p.InCall() }

var genericCallStart = regexp.MustCompile(`^\{\s*"tool_calls?"\s*:`)

// genericDecide reads the object the answer opened with, as llama.cpp's
// common_chat_parse_generic does: tool_calls, else tool_call, else
// response.
func genericDecide(raw string, complete bool) []toolcall.Event {
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
		return []toolcall.Event{{Kind: toolcall.KindText, Text: dump2(r)}}
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

// GenericSchema returns the JSON schema of the generic format's answer,
// which llama.cpp imposes on every answer when tools are given (its grammar
// is not lazy): {"tool_call": {"name": …, "arguments": …}}, the name one of
// the tools' and the arguments valid under its parameters schema, or,
// unless required, {"response": "…"}. Compile it with
// grammar.FromJSONSchema; required forces a call (OpenAI's tool_choice
// "required"; pass one tool for a named function). One call per answer:
// llama.cpp turns parallel calls off for templates that cannot show them.
// tools are in the OpenAI form or bare function objects.
func GenericSchema(tools []json.RawMessage, required bool) (json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, errors.New("chat: the response schema needs at least one tool")
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
