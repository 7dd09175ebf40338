package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
)

// This file holds structured output (response_format, grammar) and tool
// calling (tools, tool_choice, tool_calls, role "tool") on the OpenAI chat
// endpoint.

// responseFormat reads response_format:
//
//	{"type": "text"}                                   free text
//	{"type": "json_object"}                            any JSON object
//	{"type": "json_schema", "json_schema": {"name": …, "schema": {…}, "strict": …}}
//
// and llama.cpp's {"type": "json_object", "schema": {…}} and top-level
// "grammar" (GBNF text). It checks the shape at once and returns the
// compilation for later (see grammarBuild); unsupported schema keywords are
// then a 400 that names them.
func responseFormat(raw json.RawMessage, gbnf string) (grammarBuild, *apiError) {
	var build grammarBuild
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
		switch rf.Type {
		case "text":
		case "json_object":
			if len(rf.Schema) > 0 && string(rf.Schema) != "null" {
				build = schemaGrammar("response_format", rf.Schema)
			} else {
				build = jsonObjectGrammar
			}
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 || string(rf.JSONSchema.Schema) == "null" {
				return nil, badRequest("response_format.json_schema.schema", "response_format of type json_schema needs json_schema.schema")
			}
			build = schemaGrammar("response_format", rf.JSONSchema.Schema)
		default:
			return nil, badRequest("response_format.type", "response_format type %q is not supported (use text, json_object or json_schema)", rf.Type)
		}
	}
	if gbnf != "" {
		if build != nil {
			return nil, badRequest("grammar", "give either grammar or a JSON response_format, not both")
		}
		build = compileUnder("grammar", func(ctx context.Context) (*grammar.Grammar, error) { return grammar.ParseContext(ctx, gbnf) })
	}
	return build, nil
}

// chatTools reads "tools" ({"type": "function", "function": {"name",
// "description", "parameters"}}) and "tool_choice" ("auto", "none",
// "required" or {"type": "function", "function": {"name": …}}).
func chatTools(raw, choice json.RawMessage) ([]toolDef, toolChoice, *apiError) {
	var tc toolChoice
	if len(raw) == 0 || string(raw) == "null" {
		if len(choice) > 0 && string(choice) != "null" && string(choice) != `"none"` && string(choice) != `"auto"` {
			return nil, tc, badRequest("tool_choice", "tool_choice %s needs tools", choice)
		}
		return nil, tc, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, tc, badRequest("tools", "tools must be an array of tool objects")
	}
	if len(list) > maxTools {
		return nil, tc, badRequest("tools", "tools has %d entries; at most %d are allowed", len(list), maxTools)
	}
	tools := make([]toolDef, len(list))
	for i, t := range list {
		var ft struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(t, &ft); err != nil || ft.Type != "function" || ft.Function.Name == "" {
			return nil, tc, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d] must be {\"type\": \"function\", \"function\": {\"name\": …, \"parameters\": …}}", i)
		}
		tools[i] = toolDef{Name: ft.Function.Name, Description: ft.Function.Description, Parameters: ft.Function.Parameters}
	}
	if len(choice) == 0 || string(choice) == "null" {
		return tools, tc, nil
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
			tc.mode = toolNone
		case "auto":
		case "required":
			tc.mode = toolRequired
		default:
			return nil, tc, badRequest("tool_choice", "tool_choice %q is not supported (use \"auto\", \"none\", \"required\" or a function)", s)
		}
	case json.Unmarshal(choice, &named) == nil && named.Type == "function" && named.Function.Name != "":
		if !hasTool(tools, named.Function.Name) {
			return nil, tc, badRequest("tool_choice", "tool_choice names function %q, which is not in tools", named.Function.Name)
		}
		tc = toolChoice{mode: toolNamed, name: named.Function.Name}
	default:
		return nil, tc, badRequest("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}")
	}
	return tools, tc, nil
}

func hasTool(tools []toolDef, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
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

// toWire converts a call the model made, with an id unique to this server
// (the engine numbers calls per generation only).
func toWire(c engine.ToolCall) wireToolCall {
	w := wireToolCall{ID: newID("call_"), Type: "function"}
	w.Function.Name = c.Name
	w.Function.Arguments = string(c.Arguments)
	if len(c.Arguments) == 0 {
		w.Function.Arguments = "{}"
	}
	return w
}

// fromWire checks message i's tool_calls and converts them; the chat
// template writes them back the way the model writes calls.
func fromWire(calls []wireToolCall, i int) ([]engine.ToolCall, *apiError) {
	out := make([]engine.ToolCall, len(calls))
	for j, c := range calls {
		param := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
		if c.Function.Name == "" {
			return nil, badRequest(param, "%s.function.name is missing", param)
		}
		args, ok := toolArguments(c.Function.Arguments)
		if !ok {
			return nil, badRequest(param, "%s.function.arguments is not a valid JSON object", param)
		}
		out[j] = engine.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args}
	}
	return out, nil
}
