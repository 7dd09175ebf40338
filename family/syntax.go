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

// JSONListSyntax is a tool-call syntax whose calls are JSON objects
// between markers (chatfmt.JSONCalls: Command-R's, Nemotron v2's,
// Apriel's, MiniMax-M1's, Firefunction v2's). Its grammar spells the
// markers with ordinary tokens; where they are special tokens of the
// vocabulary (Command R7B's <|START_ACTION|>), the format gives them their
// text back (SpecialMarkers), so the parser reads them either way.
type JSONListSyntax struct {
	Name  string
	Calls chatfmt.JSONCalls
}

// NewParser implements ToolSyntax.
func (s JSONListSyntax) NewParser(*tokenizer.Tokenizer) ToolParser {
	return chatfmt.NewMarkedParser(s.Calls.Marked())
}

// Grammar implements ToolSyntax: one run of calls, one call unless
// opts.Parallel.
func (s JSONListSyntax) Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	names, params := functionLists(funcs)
	g, err := s.Calls.Grammar(ctx, names, params, opts.Parallel)
	if err != nil {
		return nil, fmt.Errorf("family: %s: %w", s.Name, err)
	}
	return g, nil
}

// MarkerTexts implements SpecialMarkers.
func (s JSONListSyntax) MarkerTexts() []string {
	if s.Calls.End == "" {
		return []string{s.Calls.Begin}
	}
	return []string{s.Calls.Begin, s.Calls.End}
}

// RecipientSyntax is functionary v3.2's tool-call syntax
// (chatfmt.RecipientParser): messages opened by ">>>" and their
// recipient, "all" for the user or a function to call.
type RecipientSyntax struct{}

// NewParser implements ToolSyntax.
func (RecipientSyntax) NewParser(*tokenizer.Tokenizer) ToolParser {
	return chatfmt.NewRecipientParser()
}

// Grammar implements ToolSyntax: calls written right after the generation
// prompt's ">>>", one unless opts.Parallel.
func (RecipientSyntax) Grammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	names, params := functionLists(funcs)
	g, err := chatfmt.RecipientGrammar(ctx, names, params, opts.Parallel)
	if err != nil {
		return nil, fmt.Errorf("family: functionary v3.2: %w", err)
	}
	return g, nil
}

// NewTextParser implements FramedSyntax: the recipient "all" is read, and
// any other is text.
func (RecipientSyntax) NewTextParser() ToolParser { return chatfmt.NewRecipientTextParser() }

// functionLists splits funcs into their names and parameters schemas.
func functionLists(funcs []grammar.Function) ([]string, []json.RawMessage) {
	names, params := make([]string, len(funcs)), make([]json.RawMessage, len(funcs))
	for i, f := range funcs {
		names[i], params[i] = f.Name, f.Parameters
	}
	return names, params
}

// The JSON-list and recipient syntaxes of the table.
var (
	CommandR7BTools     ToolSyntax = JSONListSyntax{"Command R7B", chatfmt.CommandR7BCalls}
	CommandRPlusTools   ToolSyntax = JSONListSyntax{"Command R+", chatfmt.CommandRPlusCalls}
	NemotronTools       ToolSyntax = JSONListSyntax{"Nemotron v2", chatfmt.NemotronCalls}
	AprielTools         ToolSyntax = JSONListSyntax{"Apriel", chatfmt.AprielCalls}
	MiniMaxM1Tools      ToolSyntax = JSONListSyntax{"MiniMax-M1", chatfmt.MiniMaxM1Calls}
	FirefunctionTools   ToolSyntax = JSONListSyntax{"Firefunction v2", chatfmt.FirefunctionCalls}
	FunctionaryV32Tools ToolSyntax = RecipientSyntax{}
)
