package family

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/tokenizer"
)

// GenericJSON is llama.cpp's generic tool format, which it used for
// templates that show no tools (Gemma 3's, SmolLM2's): the tools are
// described in the system text, and the answer is one JSON object,
// {"tool_call": {"name": …, "arguments": …}} or {"response": "…"}. Its
// grammar forces a call (one per answer).
var GenericJSON ToolSyntax = SchemaSyntax{
	Parser: func(*tokenizer.Tokenizer) ToolParser { return chatfmt.NewGenericParser() },
	Schema: func(tools []json.RawMessage) (json.RawMessage, error) { return chatfmt.GenericSchema(tools, true) },
}

// SchemaSyntax is a ToolSyntax whose calls are a JSON value a schema
// describes: Llama 3's bare call object, or llama.cpp's generic format.
type SchemaSyntax struct {
	// Parser returns a parser for one answer.
	Parser func(tok *tokenizer.Tokenizer) ToolParser
	// Schema returns the JSON schema that only calls of tools match
	// (tools as bare function objects: {"name", "parameters"}).
	Schema func(tools []json.RawMessage) (json.RawMessage, error)
}

// NewParser implements ToolSyntax.
func (s SchemaSyntax) NewParser(tok *tokenizer.Tokenizer) ToolParser { return s.Parser(tok) }

// Grammar implements ToolSyntax: the schema compiled to a grammar. These
// syntaxes write one call per answer, so opts.Parallel changes nothing.
func (s SchemaSyntax) Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	tools := make([]json.RawMessage, len(funcs))
	for i, f := range funcs {
		b, err := json.Marshal(struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters,omitempty"`
		}{f.Name, f.Parameters})
		if err != nil {
			return nil, fmt.Errorf("family: function %q: %w", f.Name, err)
		}
		tools[i] = b
	}
	schema, err := s.Schema(tools)
	if err != nil {
		return nil, err
	}
	return grammar.FromJSONSchemaContext(ctx, schema)
}
