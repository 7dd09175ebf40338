package grammar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Function is a tool a model may call: its name and the JSON schema of its
// arguments (nil: any object).
type Function struct {
	Name       string
	Parameters json.RawMessage
}

// ToolCallOptions says how many calls a tool-call grammar allows.
type ToolCallOptions struct {
	// Parallel allows several calls in a row (OpenAI's
	// parallel_tool_calls, true by default there); false allows exactly
	// one.
	Parallel bool
}

// ToolCalls returns a grammar for one or more calls of funcs, as
// ToolCallsContext with Parallel set.
func ToolCalls(funcs []Function) (*Grammar, error) {
	return ToolCallsContext(context.Background(), funcs, ToolCallOptions{Parallel: true})
}

// ToolCallsContext returns a grammar for calls of funcs in the form SmolLM3
// (and Hermes-style models) write them, the form toolcall.Text writes:
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// with the name one of funcs and the arguments valid under its parameters
// schema; with opts.Parallel, several such blocks separated by a newline.
// It is how a server honours tool_choice "required" (all the tools) or a
// named function (funcs holds that one): the model can only call. The
// tags are spelled with the vocabulary's ordinary tokens (a Vocab leaves
// out special tokens), which toolcall's parser reads as well.
func ToolCallsContext(ctx context.Context, funcs []Function, opts ToolCallOptions) (*Grammar, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(funcs) == 0 {
		return nil, errors.New("grammar: ToolCalls needs at least one function")
	}
	sc := newSchemaCompiler(ctx)
	var alts []string
	for _, f := range funcs {
		params := bytes.TrimSpace(f.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object"}`)
		}
		sc.root, sc.refs, sc.objects = params, map[string]string{}, nil
		args, err := sc.compile(params, "", 0)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, fmt.Errorf("grammar: function %q: %w", f.Name, err)
		}
		name, _ := marshalNoEscape(f.Name)
		alts = append(alts, gbnfLiteral([]byte(`{"name": `+string(name)+`, "arguments": `))+" "+args+` "}"`)
	}
	var b strings.Builder
	if opts.Parallel {
		b.WriteString("root ::= call (\"\\n\" call)*\n")
	} else {
		b.WriteString("root ::= call\n")
	}
	b.WriteString("call ::= \"<tool_call>\\n\" ( " + strings.Join(alts, " | ") + " ) \"\\n</tool_call>\"\n")
	for _, r := range sc.rules {
		b.WriteString(r + "\n")
	}
	b.WriteString(jsonPrimitives)
	return ParseContext(ctx, b.String())
}
