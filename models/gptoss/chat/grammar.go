package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// CallHeader is the header gpt-oss writes before a call's arguments, after
// the prompt's <|start|>assistant: the commentary channel, the recipient
// functions.NAME and the JSON content type.
func CallHeader(name string) string {
	return Channel + "commentary to=functions." + name + " " + Constrain + "json" + Message
}

// CallGrammar returns the grammar of an answer that is one call of one of
// funcs in harmony's syntax: CallHeader(NAME) and the arguments, JSON valid
// under the function's parameters schema (any object without one). The
// call then ends with <|call|>, an end-of-generation token the grammar
// allows once the arguments are complete. It is how tool_choice
// "required" or a named function is honoured; gpt-oss makes one call per
// answer, so opts.Parallel changes nothing. The grammar does not let the
// model reason first: its markers are spelled with ordinary tokens (a
// grammar vocabulary leaves special tokens out), and reasoning could only
// end with <|end|> spelled the same way, which the model does not write.
func CallGrammar(ctx context.Context, funcs []grammar.Function, _ grammar.ToolCallOptions) (*grammar.Grammar, error) {
	if len(funcs) == 0 {
		return nil, errors.New("chat: a call grammar needs at least one function")
	}
	gs := make([]*grammar.Grammar, len(funcs))
	for i, f := range funcs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if f.Name == "" {
			return nil, fmt.Errorf("chat: function %d has no name", i)
		}
		params := bytes.TrimSpace(f.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object"}`)
		}
		src, err := grammar.JSONSchemaGBNF(params)
		if err != nil {
			return nil, fmt.Errorf("chat: function %q: %w", f.Name, err)
		}
		first, rest, _ := strings.Cut(src, "\n")
		args, ok := strings.CutPrefix(first, "root ::= ")
		if !ok {
			return nil, fmt.Errorf("chat: unexpected grammar translation %q", first)
		}
		if gs[i], err = grammar.ParseContext(ctx, "root ::= "+literal(CallHeader(f.Name))+" ( "+args+" )\n"+rest); err != nil {
			return nil, fmt.Errorf("chat: function %q: %w", f.Name, err)
		}
	}
	if len(gs) == 1 {
		return gs[0], nil
	}
	return grammar.Union(ctx, gs...)
}

// literal writes s as a GBNF string literal.
func literal(s string) string { return chatfmt.GBNFLiteral(s) }
