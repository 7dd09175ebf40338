package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// CallGrammar returns the grammar of an answer that is one block of calls
// of funcs, as LFM2 writes them and ToolParser reads them:
//
//	<|tool_call_start|>[get_weather(city="Paris", days=3)]<|tool_call_end|>
//
// with, for each call, the function's declared parameters in its schema's
// order (each required one, any optional one), separated by ", ", each
// value JSON valid under the parameter's schema (with the parameters
// schema's $defs and definitions for its references): JSON's strings,
// numbers, true, false and null are literals ParseCalls reads. With
// opts.Parallel the list holds one or more calls, else exactly one. The
// markers are spelled with ordinary tokens (a grammar's vocabulary leaves
// special tokens out), which ToolParser reads as well. It is how
// tool_choice "required" or a named function is honoured.
func CallGrammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	if len(funcs) == 0 {
		return nil, errors.New("lfm2 chat: a call grammar needs at least one function")
	}
	var src strings.Builder
	subs := map[string]*grammar.Grammar{}
	calls := make([]string, len(funcs))
	for i, fn := range funcs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !isCallName(fn.Name) {
			return nil, fmt.Errorf("lfm2 chat: function %d: %q is not a name a Python-style call can write", i, fn.Name)
		}
		params, err := readParams(fn.Parameters)
		if err != nil {
			return nil, fmt.Errorf("lfm2 chat: function %q: %w", fn.Name, err)
		}
		// fI-aJ: nothing written yet, parameters J… to come; fI-bJ: at
		// least one written, so the next one starts with ", ".
		rule := func(kind byte, j int) string { return fmt.Sprintf("f%d-%c%d", i, kind, j) }
		for j, p := range params {
			g, err := grammar.FromJSONSchemaContext(ctx, p.schema)
			if err != nil {
				return nil, fmt.Errorf("lfm2 chat: function %q: parameter %s: %w", fn.Name, p.name, err)
			}
			value := fmt.Sprintf("f%dv%d", i, j)
			subs[value] = g
			arg := literal(p.name+"=") + " " + value
			a := arg + " " + rule('b', j+1)
			b := literal(", ") + " " + arg + " " + rule('b', j+1)
			if !p.required {
				a += " | " + rule('a', j+1)
				b += " | " + rule('b', j+1)
			}
			fmt.Fprintf(&src, "%s ::= %s\n%s ::= %s\n", rule('a', j), a, rule('b', j), b)
		}
		n := len(params)
		fmt.Fprintf(&src, "%s ::= \"\"\n%s ::= \"\"\n", rule('a', n), rule('b', n))
		calls[i] = literal(fn.Name+"(") + " " + rule('a', 0) + " " + literal(")")
	}
	root := "root ::= " + literal(CallStart+"[") + " call"
	if opts.Parallel {
		root += " ( " + literal(", ") + " call )*"
	}
	root += " " + literal("]"+CallEnd) + "\ncall ::= " + strings.Join(calls, " | ") + "\n"
	return grammar.Compose(ctx, root+src.String(), subs)
}

// isCallName reports whether ParseCalls reads name as a function's name.
func isCallName(name string) bool {
	p := &pyParser{s: name}
	return p.ident(true) == name && name != ""
}

// param is one declared parameter of a function.
type param struct {
	name     string
	schema   []byte
	required bool
}

// readParams returns the declared parameters of a parameters schema (an
// object schema, or none), each with its schema and the schema's $defs
// and definitions, so that its local references resolve.
func readParams(raw []byte) ([]param, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	root, err := chatfmt.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the parameters are not JSON: %w", err)
	}
	if root.Kind != chatfmt.Object {
		return nil, errors.New("the parameters are not a JSON schema object")
	}
	required := map[string]bool{}
	if req, ok := root.Get("required"); ok && req.Kind == chatfmt.Array {
		for _, x := range req.Items {
			if x.Kind == chatfmt.String {
				required[x.Str] = true
			}
		}
	}
	props, ok := root.Get("properties")
	if !ok {
		return nil, nil
	}
	if props.Kind != chatfmt.Object {
		return nil, errors.New("properties is not an object")
	}
	var out []param
	for i, name := range props.Keys {
		if p := (&pyParser{s: name}); p.ident(false) != name || name == "" {
			return nil, fmt.Errorf("parameter %q is not a name a keyword argument can have", name)
		}
		schema := props.Items[i]
		if schema.Kind != chatfmt.Object {
			schema = chatfmt.Value{Kind: chatfmt.Object} // true, or anything: any value
		}
		for _, k := range []string{"$defs", "definitions"} {
			if d, ok := root.Get(k); ok {
				if _, has := schema.Get(k); !has {
					schema.Keys = append(schema.Keys[:len(schema.Keys):len(schema.Keys)], k)
					schema.Items = append(schema.Items[:len(schema.Items):len(schema.Items)], d)
				}
			}
		}
		var b strings.Builder
		schema.Dump(&b, chatfmt.Nlohmann, -1)
		out = append(out, param{name: name, schema: []byte(b.String()), required: required[name]})
	}
	return out, nil
}

// literal writes s as a GBNF string literal.
func literal(s string) string { return chatfmt.GBNFLiteral(s) }
