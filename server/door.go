package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
)

// This file is the door every generation request comes through. Each API
// (chat completions in openai.go, Responses in responses.go, Anthropic's
// Messages in messages.go, plain completions in completions.go) has one
// validator that reads its own request and turns it straight into a
// chatJob, engine messages and options, with errors that name the fields
// the client sent, in the API's own words. What the dialects share lives
// here: tools and tool_choice (and the one place that knows how the model
// writes calls, toolSyntax), answer formats, the folding of system
// messages, token limits.

// chatJob is a validated request: what the engine gets.
type chatJob struct {
	msgs []engine.Message
	opts engine.GenerateOptions
	// format builds the grammar that constrains the answer (an answer
	// format, a grammar, forced tool calls, or calls or the answer); the
	// engine turns it into opts.Constraint. It runs once the request holds
	// a slot.
	format grammarBuild
	// grammar is format's result, once compiled (runJob), for the
	// constraints of further answers (n).
	grammar *grammar.Grammar
	// n is the number of answers to the same prompt (chat's n); 0 means 1.
	n int
	// ignored lists the tools the client offered that the server cannot
	// run (the Responses API's hosted tools), by type.
	ignored []string
	// ignoredItems lists the types of the input items left out (Responses
	// items without conversation content).
	ignoredItems []string
	// namespaces maps the name a namespaced function is shown to the model
	// with to its namespace and own name (Responses' namespace tools).
	namespaces map[string][2]string
	// conversation is the Responses conversation without its instructions,
	// as it is stored for previous_response_id.
	conversation []engine.Message
}

// grammarBuild compiles a request's grammar. Compiling a large schema costs
// real CPU, so it runs under the request's context after the request got a
// generation slot (it counts against the queue), never during validation.
type grammarBuild func(ctx context.Context) (*grammar.Grammar, error)

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

// schemaGrammar compiles a JSON schema for the request field param.
func schemaGrammar(param string, schema json.RawMessage) grammarBuild {
	return compileUnder(param, func(ctx context.Context) (*grammar.Grammar, error) { return grammar.FromJSONSchemaContext(ctx, schema) })
}

// jsonObjectGrammar is any JSON object ({"type": "json_object"}).
func jsonObjectGrammar(context.Context) (*grammar.Grammar, error) { return grammar.JSONObject(), nil }

// --- tools ---

// toolDef is a function the client offers the model, in any dialect.
type toolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON schema of the arguments; nil: any object
}

// toolMode says whether the model must call.
type toolMode int

const (
	toolAuto     toolMode = iota // the model chooses (the default)
	toolNone                     // no tools this turn
	toolRequired                 // at least one call, of any tool
	toolNamed                    // a call of toolChoice.name
)

type toolChoice struct {
	mode toolMode
	name string
}

// maxTools bounds the tools of a request.
const maxTools = 128

// toolSyntax is how the served model writes tool calls, as a grammar: the
// one place in the server that knows a call's text. Grammar returns the
// grammar of a turn that is calls of funcs (at least one; with parallel,
// any number), or, when answer is not nil, that is either such calls or a
// string of answer (an agent's turn: calls, or the final answer in its
// format).
//
// Call syntax is the model format's business (SmolLM3 and Qwen write
// Hermes <tool_call>{"name": …, "arguments": …}</tool_call> blocks, Llama 3
// a bare JSON object, Gemma 3 llama.cpp's generic JSON): an engine that
// implements ToolCalling (FromModel's does, through engine.Model's format)
// supplies the calls' grammar; for other engines the server assumes Hermes.
type toolSyntax interface {
	Grammar(ctx context.Context, funcs []grammar.Function, parallel bool, answer *grammar.Grammar) (*grammar.Grammar, error)
}

// ToolCalling is implemented by engines whose model says how it writes
// tool calls: the grammar of one or more calls of funcs (one with
// opts.Parallel false) in its own syntax (engine.Model.ToolCallGrammar).
type ToolCalling interface {
	ToolCallGrammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error)
}

// callSyntax is a toolSyntax from a function that builds the calls'
// grammar; an answer format joins it as the other branch of one grammar.
type callSyntax func(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error)

func (c callSyntax) Grammar(ctx context.Context, funcs []grammar.Function, parallel bool, answer *grammar.Grammar) (*grammar.Grammar, error) {
	calls, err := c(ctx, funcs, grammar.ToolCallOptions{Parallel: parallel})
	if err != nil || answer == nil {
		return calls, err
	}
	return grammar.Union(ctx, calls, answer)
}

// syntaxOf is e's tool-call syntax: its model's own (ToolCalling), or
// Hermes.
func syntaxOf(e Engine) toolSyntax {
	if tc, ok := e.(ToolCalling); ok {
		return callSyntax(tc.ToolCallGrammar)
	}
	return callSyntax(grammar.ToolCallsContext)
}

// useTools sets the job's tools and its answer's grammar:
//
//   - no tools, or tool_choice none: the answer format alone (or free
//     text);
//   - auto: the model sees the tools and may call; with an answer format
//     the turn is one grammar, calls or the formatted answer;
//   - required or a named function: a grammar that forces calls (the
//     format is for a later turn), which must be whole or not start
//     (engine.GenerateOptions.RequireComplete).
//
// The tools are shown to the model in the OpenAI form its template takes.
// toolsParam names the request's tools in errors.
func (j *chatJob) useTools(tools []toolDef, choice toolChoice, parallel bool, answer grammarBuild, syntax toolSyntax, toolsParam string) {
	j.format = answer
	j.opts.EndAfterToolCall = !parallel
	if choice.mode == toolNone || len(tools) == 0 {
		return
	}
	var funcs []grammar.Function
	for _, t := range tools {
		f := map[string]any{"name": t.Name}
		if t.Description != "" {
			f["description"] = t.Description
		}
		if len(t.Parameters) > 0 {
			f["parameters"] = t.Parameters
		}
		b, _ := json.Marshal(map[string]any{"type": "function", "function": f})
		j.opts.Tools = append(j.opts.Tools, b)
		if choice.mode != toolNamed || t.Name == choice.name {
			funcs = append(funcs, grammar.Function{Name: t.Name, Parameters: t.Parameters})
		}
	}
	if choice.mode == toolAuto && answer == nil {
		return // free text; the format's parser reads the calls
	}
	forced := choice.mode != toolAuto
	if forced {
		answer = nil
	}
	j.opts.RequireComplete = true
	j.format = func(ctx context.Context) (*grammar.Grammar, error) {
		var a *grammar.Grammar
		if answer != nil {
			var err error
			if a, err = answer(ctx); err != nil {
				return nil, err
			}
		}
		return compileUnder(toolsParam, func(ctx context.Context) (*grammar.Grammar, error) {
			return syntax.Grammar(ctx, funcs, parallel, a)
		})(ctx)
	}
}

// --- messages ---

// foldSystem makes a conversation the chat template can render: the system
// and developer messages before the conversation starts are joined into
// one system prompt (with a blank line between them), and a system message
// inside the conversation (Codex's per-turn instructions, Claude Code's
// environment notes) is folded into the user message after it, its text
// first, as llama.cpp does for templates without a system role. One that
// ends the conversation goes at the end of the user message before it, or,
// after a tool result or an answer, becomes a user message of its own; so
// does one followed by an assistant message. (SmolLM3's template, like
// most, renders one system prompt and would drop the rest.)
func foldSystem(msgs []engine.Message) []engine.Message {
	out := make([]engine.Message, 0, len(msgs))
	leading := true      // still in the system messages that open the conversation
	var pending []string // system texts waiting for the next user message
	for _, m := range msgs {
		switch {
		case m.Role == "system" && leading && len(out) == 0:
			out = append(out, m)
		case m.Role == "system" && leading:
			out[0].Content += "\n\n" + m.Content
		case m.Role == "system":
			pending = append(pending, m.Content)
		default:
			leading = false
			if len(pending) > 0 {
				if m.Role == "user" {
					m.Content = strings.Join(append(pending, m.Content), "\n\n")
				} else {
					out = append(out, engine.Message{Role: "user", Content: strings.Join(pending, "\n\n")})
				}
				pending = nil
			}
			out = append(out, m)
		}
	}
	if len(pending) > 0 {
		// Nothing follows: the last user message takes the text (a user
		// message of its own after a tool result or an answer).
		text := strings.Join(pending, "\n\n")
		if n := len(out); n > 0 && out[n-1].Role == "user" {
			out[n-1].Content += "\n\n" + text
		} else {
			out = append(out, engine.Message{Role: "user", Content: text})
		}
	}
	return out
}

// messagesBytes is the text of a conversation, as MaxPromptBytes counts it.
func messagesBytes(msgs []engine.Message) int {
	total := 0
	for _, m := range msgs {
		total += len(m.Content) + len(m.ReasoningContent)
		for _, c := range m.ToolCalls {
			total += len(c.Name) + len(c.Arguments)
		}
	}
	return total
}

// checkSize bounds the job's text by cfg.MaxPromptBytes; param names the
// request's messages.
func (j *chatJob) checkSize(cfg *Config, param string) *apiError {
	if total := messagesBytes(j.msgs); cfg.MaxPromptBytes > 0 && total > cfg.MaxPromptBytes {
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: "context_length_exceeded",
			Message: fmt.Sprintf("the messages are %d bytes of text; this server accepts at most %d", total, cfg.MaxPromptBytes)}
	}
	return nil
}

// toolArguments checks a call's arguments as a client sends them back (a
// JSON object as text, or nothing) and returns them as JSON.
func toolArguments(raw string) (json.RawMessage, bool) {
	args := strings.TrimSpace(raw)
	if args == "" {
		return json.RawMessage("{}"), true
	}
	if !json.Valid([]byte(args)) || args[0] != '{' {
		return nil, false
	}
	return json.RawMessage(args), true
}

// limitTokens reads a maximum number of tokens to generate: at least 1.
// One larger than the context is not an error: the engine ends the answer
// when the context is full, with the length stop reason (llama-server
// clamps it the same way), so a client's default (Claude Code asks for
// 32,000 and more) works on a small context.
func limitTokens(n *int, param string) (int, *apiError) {
	if n == nil {
		return 0, nil
	}
	if *n < 1 {
		return 0, badRequest(param, "%s must be at least 1, got %d", param, *n)
	}
	return *n, nil
}
