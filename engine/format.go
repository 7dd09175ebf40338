package engine

import (
	"context"
	"encoding/json"

	"github.com/smolgo/smolgo/grammar"
)

// Format is a model's language side: how a conversation becomes prompt
// tokens (the chat template and the tokenizer) and how generated tokens
// become text, reasoning and tool calls. A model package provides one
// (package smollm3's is SmolLM3's template, vocabulary, <think> block and
// <tool_call> format); the engine knows none of those markers itself.
//
// A Format is shared by every session of a model and must be safe for
// concurrent use; the Decoder and Parser it makes are for one generation.
type Format interface {
	// Prompt renders msgs with the chat template, ending with the header of
	// the assistant's answer, and tokenizes the result.
	Prompt(msgs []Message, opts PromptOptions) ([]int32, error)
	// NewDecoder returns a streaming detokenizer for generated tokens.
	NewDecoder() Decoder
	// EndOfTurn reports whether the model ends its answer with token id.
	EndOfTurn(id int32) bool
	// NewParser returns a parser that splits one answer's tokens into
	// reasoning, content and (with tools) tool calls.
	NewParser(opts ParserOptions) Parser
	// Tokenizer is the model's vocabulary, for callers that tokenize text
	// themselves (an API's /tokenize, grammar masks over the vocabulary).
	// A format may read it lazily, so it can fail (a file without a
	// vocabulary still runs Forward, but has no conversations).
	Tokenizer() (Tokenizer, error)
}

// PromptOptions are the inputs of Format.Prompt besides the messages.
type PromptOptions struct {
	// Thinking turns the reasoning mode on or off; nil is the template's
	// default.
	Thinking *bool
	// ReasoningEffort is how hard a model that reasons at several levels
	// should think (GenerateOptions.ReasoningEffort); "" is the template's
	// default. Formats without levels ignore it.
	ReasoningEffort string
	// Tools are function definitions in the OpenAI form to show the model.
	Tools []json.RawMessage
	// ParseSpecial tokenizes special tokens written in message contents
	// as those tokens (GenerateOptions.ParseSpecial). When false, contents
	// are plain text and only the template's own markers are special.
	ParseSpecial bool
	// TemplateKwargs are extra variables for a Jinja chat template
	// (llama-server's chat_template_kwargs), as JSON values by name.
	// Formats without a Jinja template ignore them.
	TemplateKwargs map[string]json.RawMessage
}

// PromptTexter is implemented by formats that can return the rendered
// prompt as text, before tokenizing (llama-server's /apply-template).
type PromptTexter interface {
	PromptText(msgs []Message, opts PromptOptions) (string, error)
}

// ParserOptions configure Format.NewParser.
type ParserOptions struct {
	// Tools makes the parser read tool calls out of the answer.
	Tools bool
	// ToolDefinitions are the request's tools (GenerateOptions.Tools),
	// for formats whose calls are read by the tools' schemas (Qwen3-Coder
	// writes each argument as raw text, typed by its schema).
	ToolDefinitions []json.RawMessage
	// Thinking is whether the prompt asked for reasoning (nil: the
	// template's default).
	Thinking *bool
}

// Decoder turns generated tokens into text as it becomes complete: Push
// returns the text that is certain so far (an incomplete UTF-8 character is
// held back), Flush what is left at the end.
type Decoder interface {
	Push(id int32) (string, error)
	Flush() string
}

// A Continuer is a Decoder that can be told that its tokens continue text
// decoded before, a plain completion's prompt (GenerateOptions.RawPrompt):
// it then keeps the leading space that a decoder of a whole text drops
// (SentencePiece's space prefix), so that the prompt and the completion
// together are the text, as in llama.cpp's completions.
type Continuer interface {
	Continue()
}

// Parser splits an answer into events as its tokens arrive: Push takes a
// token's id and its decoded text and returns the events that are complete
// (EventReasoning, EventContent, EventToolCall, EventToolError; Token is
// filled in by the engine), holding back text that could be the start of a
// marker; Flush returns the rest at the end of the answer.
type Parser interface {
	Push(id int32, text string) []Event
	Flush() []Event
}

// Tokenizer is what the engine and its callers need of a model's
// vocabulary. *tokenizer.Tokenizer implements it.
type Tokenizer interface {
	// Encode tokenizes text; with parseSpecial, special tokens written in
	// the text become their ids.
	Encode(text string, parseSpecial bool) []int32
	// Decode turns ids back into text, leaving special tokens out with
	// skipSpecial.
	Decode(ids []int32, skipSpecial bool) (string, error)
	// TokenBytes returns the bytes token id stands for (nil for an id
	// outside the vocabulary).
	TokenBytes(id int32) []byte
	// Normal reports whether id is an ordinary text token, as opposed to
	// an added one (a special marker such as <|im_end|>, or a
	// user-defined token such as SmolLM3's <think>). Grammars spell
	// answers with ordinary tokens only.
	Normal(id int32) bool
	// Len is the vocabulary size.
	Len() int
	// EndOfGeneration lists the tokens that end a generation.
	EndOfGeneration() []int32
}

// ToolCaller is implemented by formats that say how their model writes tool
// calls in a form a grammar can force (tool_choice "required" or a named
// function). Model.ToolCallGrammar uses it; formats without it get the
// Hermes <tool_call> form of grammar.ToolCallsContext.
type ToolCaller interface {
	ToolCallGrammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error)
}
