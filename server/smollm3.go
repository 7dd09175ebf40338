package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/smollm3"
)

// SmolLM3Options configure FromSmolLM3.
type SmolLM3Options struct {
	// Name is the model id shown to clients (e.g. the file name).
	Name string
	// Context is the context length the model was loaded with
	// (smollm3.WithContext); 0 means the model's trained context.
	Context int
	// Sampler is the sampling used where a request says nothing; requests
	// override temperature, top_p, top_k, min_p, penalties and seed.
	// Use sample.SmolLM3Defaults() for the model's recommended settings.
	Sampler sample.Config
	// KVBytesPerValue is the size of one cached key or value element, for
	// the memory estimate of sessions: 2 for an f16 cache, 4 for f32; 0
	// means the exact size of the model's KV type (smollm3.WithKVType,
	// q8_0 included).
	KVBytesPerValue int
}

// FromSmolLM3 serves a loaded SmolLM3 (or llama-family) model. The model
// stays owned by the caller, who closes it after the server has stopped.
func FromSmolLM3(m *smollm3.Model, opts SmolLM3Options) (Engine, error) {
	if m == nil {
		return nil, errors.New("server: FromSmolLM3 needs a model")
	}
	if err := opts.Sampler.Validate(); err != nil {
		return nil, fmt.Errorf("server: default sampler: %w", err)
	}
	cfg := m.Config()
	if opts.Context <= 0 || opts.Context > cfg.Context {
		opts.Context = cfg.Context
	}
	if opts.Name == "" {
		opts.Name = cfg.Arch
	}
	perToken := cfg.KVBytes(m.KVType(), 1)
	if opts.KVBytesPerValue > 0 {
		perToken = int64(cfg.Layers) * int64(cfg.KVHeads) * int64(cfg.HeadDim) * 2 * int64(opts.KVBytesPerValue)
	}
	return &smolEngine{m: m, opts: opts, perToken: perToken}, nil
}

type smolEngine struct {
	m        *smollm3.Model
	opts     SmolLM3Options
	perToken int64 // KV cache bytes per cached token

	// The vocabulary prepared for constrained decoding, built on the first
	// request with a response_format.
	vocabOnce sync.Once
	vocab     *grammar.Vocab
	vocabErr  error
}

// grammarVocab returns the model's vocabulary for package grammar.
func (e *smolEngine) grammarVocab() (*grammar.Vocab, error) {
	e.vocabOnce.Do(func() {
		tok, err := e.m.Tokenizer()
		if err != nil {
			e.vocabErr = err
			return
		}
		e.vocab, e.vocabErr = grammar.NewVocab(grammar.TokenBytes(tok), tok.EndOfGeneration())
	})
	return e.vocab, e.vocabErr
}

func (e *smolEngine) ModelName() string  { return e.opts.Name }
func (e *smolEngine) ContextLength() int { return e.opts.Context }
func (e *smolEngine) NewSession() Session {
	return &smolSession{s: e.m.NewSession(), e: e}
}

type smolSession struct {
	s *smollm3.Session
	e *smolEngine
}

func (s *smolSession) Reset() { s.s.Reset() }

// MemoryBytes estimates the KV cache held: cached tokens times the bytes of
// their keys and values in every layer.
func (s *smolSession) MemoryBytes() int64 { return int64(s.s.CachedTokens()) * s.e.perToken }

// sampler applies a request's settings over the engine's defaults.
func (e *smolEngine) sampler(o Options) sample.Config {
	c := e.opts.Sampler
	set := func(dst *float32, src *float64) {
		if src != nil {
			*dst = float32(*src)
		}
	}
	set(&c.Temperature, o.Temperature)
	set(&c.TopP, o.TopP)
	set(&c.MinP, o.MinP)
	set(&c.PresencePenalty, o.PresencePenalty)
	set(&c.FrequencyPenalty, o.FrequencyPenalty)
	set(&c.RepeatPenalty, o.RepeatPenalty)
	if o.TopK != nil {
		c.TopK = *o.TopK
	}
	if o.Seed != nil {
		// sample treats seed 0 as "random"; a client asking for seed 0
		// wants a fixed seed, so map it to another fixed value.
		c.Seed = uint64(*o.Seed)
		if c.Seed == 0 {
			c.Seed = 0x9e3779b97f4a7c15
		}
	}
	return c
}

func (s *smolSession) Generate(ctx context.Context, msgs []Message, o Options) iter.Seq2[Event, error] {
	in := make([]smollm3.Message, len(msgs))
	for i, m := range msgs {
		in[i] = smollm3.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent}
	}
	gopts := smollm3.GenerateOptions{MaxTokens: o.MaxTokens, Sampler: s.e.sampler(o), Stop: o.Stop, Thinking: o.Thinking, Tools: o.Tools}
	return func(yield func(Event, error) bool) {
		if o.Format != nil {
			v, err := s.e.grammarVocab()
			if err != nil {
				yield(Event{}, fmt.Errorf("preparing the vocabulary for response_format: %w", err))
				return
			}
			gopts.Constraint = o.Format.NewConstraint(v)
		}
		for ev, err := range s.s.Generate(ctx, in, gopts) {
			if err != nil {
				if errors.Is(err, llama.ErrContextFull) && !errors.Is(err, ErrContextFull) {
					err = fmt.Errorf("%w: %w", ErrContextFull, err)
				}
				yield(Event{}, err)
				return
			}
			out := Event{Text: ev.Text, Token: ev.Token}
			switch ev.Kind {
			case smollm3.EventReasoning:
				out.Kind = EventReasoning
			case smollm3.EventContent:
				out.Kind = EventContent
			case smollm3.EventToolCall, smollm3.EventToolError:
				// The library has read the call already, but the endpoint
				// reads calls out of the content (tools.go) for every
				// engine: the event's Text is the call as SmolLM3 writes
				// it, which that parser turns into tool_calls (or, for a
				// broken call, into the same error text as for any engine).
				out.Kind = EventContent
			case smollm3.EventDone:
				out.Kind = EventDone
				if st := ev.Stats; st != nil {
					out.Stats = &Stats{PromptTokens: st.PromptTokens, CachedTokens: st.CachedTokens,
						GeneratedTokens: st.GeneratedTokens, PrefillTokensPerSec: st.PrefillTokensPerSec,
						DecodeTokensPerSec: st.DecodeTokensPerSec, StopReason: st.StopReason}
				}
			default:
				continue
			}
			if !yield(out, nil) {
				return
			}
		}
	}
}
