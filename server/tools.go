package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/toolcall"
)

// This file holds structured output (response_format, grammar) and tool
// calling (tools, tool_choice, tool_calls, role "tool") on the OpenAI
// endpoint.

// responseFormat reads response_format:
//
//	{"type": "text"}                                   free text
//	{"type": "json_object"}                            any JSON object
//	{"type": "json_schema", "json_schema": {"name": …, "schema": {…}, "strict": …}}
//
// and llama.cpp's {"type": "json_object", "schema": {…}} and top-level
// "grammar" (GBNF text). Unsupported schema keywords are a 400 that names
// them.
func responseFormat(raw json.RawMessage, gbnf string) (*grammar.Grammar, error) {
	var g *grammar.Grammar
	if len(raw) > 0 && string(raw) != "null" {
		var rf struct {
			Type       string          `json:"type"`
			Schema     json.RawMessage `json:"schema"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(raw, &rf); err != nil {
			return nil, badRequest("response_format", "response_format must be an object with a type: %v", err)
		}
		var err error
		switch rf.Type {
		case "text":
		case "json_object":
			if len(rf.Schema) > 0 && string(rf.Schema) != "null" {
				g, err = grammar.FromJSONSchema(rf.Schema)
			} else {
				g = grammar.JSONObject()
			}
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 || string(rf.JSONSchema.Schema) == "null" {
				return nil, badRequest("response_format.json_schema.schema", "response_format of type json_schema needs json_schema.schema")
			}
			g, err = grammar.FromJSONSchema(rf.JSONSchema.Schema)
		default:
			return nil, badRequest("response_format.type", "response_format type %q is not supported (use text, json_object or json_schema)", rf.Type)
		}
		if err != nil {
			return nil, badRequest("response_format", "response_format: %v", err)
		}
	}
	if gbnf != "" {
		if g != nil {
			return nil, badRequest("grammar", "give either grammar or a JSON response_format, not both")
		}
		var err error
		if g, err = grammar.Parse(gbnf); err != nil {
			return nil, badRequest("grammar", "%v", err)
		}
	}
	return g, nil
}

// functionTool is one entry of "tools".
type functionTool struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// maxTools bounds "tools".
const maxTools = 128

// parseTools checks "tools" and "tool_choice" and returns the tool
// definitions to show the model (none when tool_choice is "none") and, when
// tool_choice asks for a call ("required", or a named function), the grammar
// that forces one.
func parseTools(raw, choice json.RawMessage) ([]json.RawMessage, *grammar.Grammar, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if len(choice) > 0 && string(choice) != "null" && string(choice) != `"none"` && string(choice) != `"auto"` {
			return nil, nil, badRequest("tool_choice", "tool_choice %s needs tools", choice)
		}
		return nil, nil, nil
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, nil, badRequest("tools", "tools must be an array of tool objects")
	}
	if len(tools) > maxTools {
		return nil, nil, badRequest("tools", "tools has %d entries; at most %d are allowed", len(tools), maxTools)
	}
	funcs := make([]grammar.Function, len(tools))
	for i, t := range tools {
		var ft functionTool
		if err := json.Unmarshal(t, &ft); err != nil || ft.Type != "function" || ft.Function.Name == "" {
			return nil, nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d] must be {\"type\": \"function\", \"function\": {\"name\": …, \"parameters\": …}}", i)
		}
		funcs[i] = grammar.Function{Name: ft.Function.Name, Parameters: ft.Function.Parameters}
	}
	if len(choice) == 0 || string(choice) == "null" {
		return tools, nil, nil
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	var s string
	switch {
	case json.Unmarshal(choice, &s) == nil:
		switch s {
		case "none":
			return nil, nil, nil
		case "auto":
			return tools, nil, nil
		case "required":
		default:
			return nil, nil, badRequest("tool_choice", "tool_choice %q is not supported (use \"auto\", \"none\", \"required\" or a function)", s)
		}
	case json.Unmarshal(choice, &named) == nil && named.Type == "function" && named.Function.Name != "":
		i := slices.IndexFunc(funcs, func(f grammar.Function) bool { return f.Name == named.Function.Name })
		if i < 0 {
			return nil, nil, badRequest("tool_choice", "tool_choice names function %q, which is not in tools", named.Function.Name)
		}
		funcs = funcs[i : i+1]
	default:
		return nil, nil, badRequest("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}")
	}
	g, err := grammar.ToolCalls(funcs)
	if err != nil {
		return nil, nil, badRequest("tools", "tool_choice needs a grammar for the tools' parameters: %v", err)
	}
	return tools, g, nil
}

// wireToolCall is a call in OpenAI's format (responses, stream deltas and
// assistant messages sent back).
type wireToolCall struct {
	Index    *int   `json:"index,omitempty"` // stream deltas only
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func toWire(c toolcall.Call, id string) wireToolCall {
	w := wireToolCall{ID: id, Type: "function"}
	w.Function.Name = c.Name
	w.Function.Arguments = string(c.Arguments)
	return w
}

// renderToolCalls writes an assistant message's tool_calls the way SmolLM3
// wrote them, so that the model sees its own calls again in the history.
func renderToolCalls(calls []wireToolCall, i int) (string, error) {
	var b strings.Builder
	for j, c := range calls {
		param := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
		if c.Function.Name == "" {
			return "", badRequest(param, "%s.function.name is missing", param)
		}
		args := bytes.TrimSpace([]byte(c.Function.Arguments))
		if len(args) == 0 {
			args = []byte("{}")
		}
		if !json.Valid(args) {
			return "", badRequest(param, "%s.function.arguments is not valid JSON", param)
		}
		name, _ := json.Marshal(c.Function.Name)
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s\n{\"name\": %s, \"arguments\": %s}\n%s", toolcall.OpenTag, name, args, toolcall.CloseTag)
	}
	return b.String(), nil
}

// toolCalls splits the answer's content into text and calls while it
// streams. A call the model wrote badly is given back as text, tags
// included, so that nothing the model said is lost.
type toolCalls struct {
	p     *toolcall.Parser
	calls []wireToolCall
	bad   []string // errors of calls that could not be read
}

func newToolCalls() *toolCalls { return &toolCalls{p: toolcall.NewParser(-1, -1)} }

// all returns the calls so far (none for a nil toolCalls: no tools).
func (t *toolCalls) all() []wireToolCall {
	if t == nil {
		return nil
	}
	return t.calls
}

// push takes content text and returns the text to show and the calls that
// were completed.
func (t *toolCalls) push(text string) (string, []wireToolCall) {
	return t.events(t.p.Push(-1, text))
}

// flush ends the content.
func (t *toolCalls) flush() (string, []wireToolCall) { return t.events(t.p.Flush()) }

func (t *toolCalls) events(evs []toolcall.Event) (string, []wireToolCall) {
	var text strings.Builder
	var calls []wireToolCall
	for _, ev := range evs {
		switch ev.Kind {
		case toolcall.KindText:
			text.WriteString(ev.Text)
		case toolcall.KindCall:
			c := toWire(ev.Call, newID("call_"))
			t.calls = append(t.calls, c)
			calls = append(calls, c)
		case toolcall.KindError:
			t.bad = append(t.bad, ev.Err.Error())
			text.WriteString(toolcall.OpenTag + ev.Raw + toolcall.CloseTag)
		}
	}
	return text.String(), calls
}
