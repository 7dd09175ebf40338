package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
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
// "grammar" (GBNF text). It checks the shape at once and returns the
// compilation for later (see grammarBuild); unsupported schema keywords are
// then a 400 that names them.
func responseFormat(raw json.RawMessage, gbnf string) (grammarBuild, error) {
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
				build = func(context.Context) (*grammar.Grammar, error) { return grammar.JSONObject(), nil }
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

// schemaGrammar compiles a JSON schema for the request field param.
func schemaGrammar(param string, schema json.RawMessage) grammarBuild {
	return compileUnder(param, func(ctx context.Context) (*grammar.Grammar, error) { return grammar.FromJSONSchemaContext(ctx, schema) })
}

// compileUnder makes a grammarBuild of compile, whose errors are 400s on
// param; compile stops when ctx ends (the client left), with ctx's error.
func compileUnder(param string, compile func(ctx context.Context) (*grammar.Grammar, error)) grammarBuild {
	return func(ctx context.Context) (*grammar.Grammar, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		g, err := compile(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, badRequest(param, "%s: %v", param, err)
		}
		return g, nil
	}
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
// tool_choice asks for a call ("required", or a named function), the
// compilation of the grammar that forces one.
//
// parallel (parallel_tool_calls) lets a forced answer make several calls.
func parseTools(raw, choice json.RawMessage, parallel bool) ([]json.RawMessage, grammarBuild, error) {
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
	return tools, compileUnder("tools", func(ctx context.Context) (*grammar.Grammar, error) {
		return grammar.ToolCallsContext(ctx, funcs, grammar.ToolCallOptions{Parallel: parallel})
	}), nil
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
func fromWire(calls []wireToolCall, i int) ([]engine.ToolCall, error) {
	out := make([]engine.ToolCall, len(calls))
	for j, c := range calls {
		param := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
		if c.Function.Name == "" {
			return nil, badRequest(param, "%s.function.name is missing", param)
		}
		args := bytes.TrimSpace([]byte(c.Function.Arguments))
		if len(args) == 0 {
			args = []byte("{}")
		}
		if !json.Valid(args) || args[0] != '{' {
			return nil, badRequest(param, "%s.function.arguments is not a valid JSON object", param)
		}
		out[j] = engine.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(args)}
	}
	return out, nil
}
