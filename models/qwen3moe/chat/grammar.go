package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/chatfmt"
)

// textRules is the grammar of a parameter's raw text: lines, none of them
// after the first starting with </parameter> (which would end the value).
var textRules = func() string {
	var b strings.Builder
	b.WriteString("xml-text ::= [^\\n]* ( \"\\n\" xml-line0 )*\n")
	tag := EndParameter
	for i := range len(tag) {
		c := tag[i]
		next := fmt.Sprintf("xml-line%d", i+1)
		alt := fmt.Sprintf("%q %s", string(c), next)
		if i == len(tag)-1 {
			alt = "" // the whole tag: not allowed
		} else {
			alt = " | " + alt
		}
		fmt.Fprintf(&b, "xml-line%d ::= \"\" | [^\\n%s] [^\\n]*%s\n", i, classChar(c), alt)
	}
	return b.String()
}()

// classChar escapes a character for a GBNF character class.
func classChar(c byte) string {
	switch c {
	case ']', '\\', '-', '^':
		return `\` + string(c)
	}
	return string(c)
}

// CallGrammar returns the grammar of an answer that is calls of funcs in
// Qwen3-Coder's syntax, as ToolParser reads them: <tool_call>, the
// function's tag, its required parameters in the schema's order, then any
// optional ones, and the closing tags; with opts.Parallel, several calls
// one after the other. A parameter that cannot be a string is JSON valid
// under its schema (with the parameters schema's $defs and definitions
// for its references); one that can be a string is free text, as in
// llama.cpp's grammar. The tags are spelled with ordinary tokens (a
// grammar vocabulary leaves special tokens out), which the parser reads
// as well. It is how tool_choice "required" or a named function is
// honoured.
func CallGrammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	return CallGrammarIn(ctx, Qwen3Coder, funcs, opts)
}

// CallGrammarIn is CallGrammar for calls written with tags w (one call a
// block).
func CallGrammarIn(ctx context.Context, w Tags, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	if len(funcs) == 0 {
		return nil, errors.New("chat: a call grammar needs at least one function")
	}
	var src strings.Builder
	subs := map[string]*grammar.Grammar{}
	var calls []string
	for i, fn := range funcs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if fn.Name == "" || strings.ContainsAny(fn.Name, "<>\n") {
			return nil, fmt.Errorf("chat: function %d: %q is not a name the format can write", i, fn.Name)
		}
		tool, _ := json.Marshal(map[string]any{"name": fn.Name, "parameters": fn.Parameters})
		if len(fn.Parameters) == 0 {
			tool, _ = json.Marshal(map[string]any{"name": fn.Name})
		}
		f, ok := readFunction(tool)
		if !ok {
			return nil, fmt.Errorf("chat: function %q: the parameters are not a JSON schema object", fn.Name)
		}
		var required, optional []string
		for j, p := range f.params {
			value := "xml-text"
			if !p.types.has(tString) {
				schema, err := withDefs(p.schema, f.root)
				if err != nil {
					return nil, fmt.Errorf("chat: function %q: parameter %s: %w", fn.Name, p.name, err)
				}
				g, err := grammar.FromJSONSchemaContext(ctx, schema)
				if err != nil {
					return nil, fmt.Errorf("chat: function %q: parameter %s: %w", fn.Name, p.name, err)
				}
				value = fmt.Sprintf("f%dp%d", i, j)
				subs[value] = g
			}
			arg := literal(w.Parameter+p.name+w.NameEnd+"\n") + " " + value + " " + literal("\n"+EndParameter+"\n")
			if f.required[p.name] {
				required = append(required, arg)
			} else {
				optional = append(optional, "( "+arg+" )")
			}
		}
		call := literal(w.Open+"\n"+w.Function+fn.Name+w.NameEnd+"\n") + " " + strings.Join(required, " ")
		if len(optional) > 0 {
			call += " ( " + strings.Join(optional, " | ") + " )*"
		}
		calls = append(calls, call+" "+literal(w.EndFunction+"\n"+w.Close))
	}
	src.WriteString("root ::= call")
	if opts.Parallel {
		src.WriteString(` ( "\n" call )*`)
	}
	src.WriteString("\ncall ::= " + strings.Join(calls, " | ") + "\n")
	src.WriteString(textRules)
	return grammar.Compose(ctx, src.String(), subs)
}

// withDefs is a parameter's schema with the $defs and definitions of the
// parameters schema it sits in, so that its local references resolve.
func withDefs(schema, root chatfmt.Value) ([]byte, error) {
	if schema.Kind != chatfmt.Object {
		return nil, errors.New("the schema is not an object")
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
	return []byte(b.String()), nil
}

// literal writes s as a GBNF string literal.
func literal(s string) string { return chatfmt.GBNFLiteral(s) }
