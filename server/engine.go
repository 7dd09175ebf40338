package server

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
)

// Engine is what the server needs from a loaded model: sessions that stream
// events, in package engine's types (engine.Message, engine.GenerateOptions,
// engine.Event), so that what a client sends reaches the model as it is.
// FromModel adapts an *engine.Model (any registered architecture; package
// smollm3's Model embeds one); package servertest has a scripted fake for
// tests.
//
// An Engine must be safe for concurrent use: its methods are called from
// many request goroutines. A Session is used by one generation at a time;
// the server guarantees that.
type Engine interface {
	// ModelName is the id reported by GET /v1/models and in every response.
	ModelName() string
	// ContextLength is the most tokens (prompt and answer) a session holds.
	ContextLength() int
	// NewSession returns a fresh conversation state with its own KV cache.
	NewSession() Session
	// NewConstraint prepares a grammar over the model's vocabulary for
	// GenerateOptions.Constraint (response_format, forced tool calls).
	NewConstraint(g *grammar.Grammar) (engine.Constraint, error)
}

// Session is one conversation's state on the engine; *engine.Session
// implements it. Generate streams reasoning, content and tool-call events
// and then exactly one EventDone carrying Stats; a prompt that does not fit
// the context is an error wrapping engine.ErrContextFull before any event.
type Session interface {
	Generate(ctx context.Context, msgs []engine.Message, opts engine.GenerateOptions) iter.Seq2[engine.Event, error]
	// Reset forgets the cached conversation.
	Reset()
	// MemoryBytes is the memory the session holds (its KV cache); the
	// session store bounds idle conversations by it. It must not wait for
	// a running generation.
	MemoryBytes() int64
}

// Occupancy is implemented by engines that batch several sessions' steps and
// can say how full the batch is (engine.Model's Occupancy); /health and the
// web page show it.
type Occupancy interface {
	Occupancy() engine.Occupancy
}

// ModelOptions configure FromModel.
type ModelOptions struct {
	// Name is the model id shown to clients (e.g. the file name); empty
	// means "model".
	Name string
}

// FromModel serves a loaded engine model. The model stays owned by the
// caller, who closes it after the server has stopped.
func FromModel(m *engine.Model, opts ModelOptions) (Engine, error) {
	if m == nil {
		return nil, errors.New("server: FromModel needs a model")
	}
	if opts.Name == "" {
		opts.Name = "model"
	}
	return &modelEngine{m: m, name: opts.Name}, nil
}

type modelEngine struct {
	m    *engine.Model
	name string
}

func (e *modelEngine) ModelName() string           { return e.name }
func (e *modelEngine) ContextLength() int          { return e.m.ContextLength() }
func (e *modelEngine) NewSession() Session         { return e.m.NewSession() }
func (e *modelEngine) Occupancy() engine.Occupancy { return e.m.Occupancy() }
func (e *modelEngine) NewConstraint(g *grammar.Grammar) (engine.Constraint, error) {
	return e.m.NewConstraint(g)
}

// ToolCallGrammar is the model's own tool-call syntax (ToolCalling).
func (e *modelEngine) ToolCallGrammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	return e.m.ToolCallGrammar(ctx, funcs, opts)
}

// ImageInput is implemented by engines that say whether their model takes
// images in messages (FromModel's: a model opened with a vision
// projector). GET /v1/models lists the input modalities from it: "text",
// and "image" when TakesImages.
type ImageInput interface {
	TakesImages() bool
}

// TakesImages reports whether the model was opened with a projector
// (ImageInput).
func (e *modelEngine) TakesImages() bool { return e.m.TakesImages() }

// Tokenizing is implemented by engines that expose their vocabulary:
// POST /tokenize, /detokenize and /v1/completions (whose prompt is text or
// tokens, with no chat template) need it.
type Tokenizing interface {
	// Tokenize turns text into token ids; with special, special tokens
	// written in the text ("<|im_end|>") become their ids.
	Tokenize(text string, special bool) ([]int32, error)
	// Detokenize turns ids back into text (special tokens included); an id
	// outside the vocabulary is an error.
	Detokenize(ids []int32) (string, error)
	// TokenPiece is the text of one token (it may be part of a UTF-8
	// character).
	TokenPiece(id int32) (string, error)
}

// PromptTokenizing is implemented by engines whose vocabulary puts tokens
// around a prompt (BOS, and EOS where the file asks), as llama_tokenize
// does with add_special: /v1/completions tokenizes a text prompt so, as
// llama-server does. Engines without it get Tokenize.
type PromptTokenizing interface {
	TokenizePrompt(text string, special bool) ([]int32, error)
}

// specialTokenizer is a tokenizer that adds the vocabulary's special tokens
// around a text (tokenizer.Tokenizer.Tokenize).
type specialTokenizer interface {
	Tokenize(text string, addSpecial, parseSpecial bool) []int32
}

func (e *modelEngine) TokenizePrompt(text string, special bool) ([]int32, error) {
	tok, err := e.tokenizer()
	if err != nil {
		return nil, err
	}
	if st, ok := tok.(specialTokenizer); ok {
		return st.Tokenize(text, true, special), nil
	}
	return tok.Encode(text, special), nil
}

func (e *modelEngine) tokenizer() (engine.Tokenizer, error) {
	tok, err := e.m.Format().Tokenizer()
	if err != nil {
		return nil, fmt.Errorf("the model has no usable tokenizer: %w", err)
	}
	return tok, nil
}

func (e *modelEngine) Tokenize(text string, special bool) ([]int32, error) {
	tok, err := e.tokenizer()
	if err != nil {
		return nil, err
	}
	return tok.Encode(text, special), nil
}

func (e *modelEngine) Detokenize(ids []int32) (string, error) {
	tok, err := e.tokenizer()
	if err != nil {
		return "", err
	}
	if err := checkIDs(ids, tok.Len()); err != nil {
		return "", err
	}
	return tok.Decode(ids, false)
}

func (e *modelEngine) TokenPiece(id int32) (string, error) {
	tok, err := e.tokenizer()
	if err != nil {
		return "", err
	}
	if err := checkIDs([]int32{id}, tok.Len()); err != nil {
		return "", err
	}
	return string(tok.TokenBytes(id)), nil
}

// checkIDs reports the first id outside a vocabulary of n tokens.
func checkIDs(ids []int32, n int) error {
	for i, id := range ids {
		if id < 0 || int(id) >= n {
			return fmt.Errorf("token %d (at index %d) is not in the vocabulary of %d tokens", id, i, n)
		}
	}
	return nil
}

func (e *modelEngine) PromptCacheStats() (engine.PromptCacheStats, bool) {
	pc := e.m.PromptCache()
	if pc == nil {
		return engine.PromptCacheStats{}, false
	}
	return pc.Stats(), true
}

// Templating is implemented by engines that render a conversation with the
// model's chat template (FromModel's; servertest's): Anthropic's
// POST /v1/messages/count_tokens and llama-server's POST /apply-template
// need it.
type Templating interface {
	// PromptTokens renders msgs as a generation would (tools, thinking)
	// and tokenizes the result.
	PromptTokens(msgs []engine.Message, opts engine.PromptOptions) ([]int32, error)
}

func (e *modelEngine) PromptTokens(msgs []engine.Message, opts engine.PromptOptions) ([]int32, error) {
	return e.m.Format().Prompt(msgs, opts)
}

// errNoPromptText says a model's format renders no text of its own.
var errNoPromptText = errors.New("the model's format does not render text")

// PromptText renders msgs with the model's template and returns the text,
// or fails when the format cannot say it (then /apply-template decodes
// the tokens).
func (e *modelEngine) PromptText(msgs []engine.Message, opts engine.PromptOptions) (string, error) {
	pt, ok := e.m.Format().(engine.PromptTexter)
	if !ok {
		return "", errNoPromptText
	}
	return pt.PromptText(msgs, opts)
}
