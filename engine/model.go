package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/smolgo/smolgo/grammar"
)

// ErrClosed is returned by Generate on a model that has been closed (or is
// closing: a generation running at Close ends with it).
var ErrClosed = errors.New("engine: model closed")

// Model is a loaded model ready for conversations: a Backend that computes,
// a Format that speaks the model's language, the scheduler that batches the
// sessions' steps, and the prompt cache they share. Make one with Open (any
// registered architecture) or New; it is safe for concurrent use.
type Model struct {
	b     Backend // nil for an encoder-only model
	enc   Encoder // nil for a decoder
	eq    *encodeQueue
	f     Format
	cfg   Config
	pc    *PromptCache // nil without Config.PromptCacheBytes
	sched *scheduler
	proj  Projector // nil: the model takes no images
	mtp   *mtpHead  // the MTP block (Config.MTP), nil without

	// draftRecurrent: the draft model's caches keep recurrent state
	// (Checkpointer), so prompts keep checkpoints at the turns for it too.
	draftRecurrent bool
	// acceptRule, when set, replaces the rejection rule of speculative
	// sampling (leviathan); only tests set it, to check that the
	// statistical test of the sampled output fails with a wrong rule.
	acceptRule func(p, q, u float64) bool

	release func() error // from Open: what the architecture opened
	parts   any          // from Open: Loaded.Parts

	vocabOnce sync.Once // the grammar vocabulary, built on first use
	vocab     *grammar.Vocab
	vocabErr  error

	closeOnce sync.Once
	closeErr  error
	life      sync.Mutex
	idle      *sync.Cond // signalled when the last generation leaves a closed model
	closed    bool
	running   int // generations in flight
}

// New makes a model from a backend and a format, with cfg's engine settings
// (Config's loader settings are not used here). The caller keeps ownership of
// what the backend and format hold: close the Model first, then them.
func New(b Backend, f Format, cfg Config) (*Model, error) {
	if b == nil || f == nil {
		return nil, errors.New("engine: New needs a backend and a format")
	}
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	m := &Model{b: b, f: f, cfg: cfg}
	m.idle = sync.NewCond(&m.life)
	if d := cfg.Draft; d != nil {
		if err := checkDraft(b, f, d); err != nil {
			return nil, err
		}
		if c, err := d.b.NewCache(); err == nil {
			_, m.draftRecurrent = c.(Checkpointer)
			c.Close()
		}
	}
	if cfg.PromptCacheBytes > 0 {
		m.pc = newPromptCache(cfg.PromptCacheBytes)
		if cfg.PromptCacheDir != "" {
			if err := m.pc.openDisk(&cfg, b); err != nil {
				return nil, err
			}
		}
	}
	if cfg.MTP {
		h, err := newMTPHead(b)
		if err != nil {
			if m.pc != nil {
				m.pc.close()
			}
			return nil, err
		}
		h.pc = m.pc
		m.mtp = h
	}
	m.sched = newScheduler(b, cfg, cfg.Logger)
	return m, nil
}

// NewEncoder makes a model of an encoder (an embedding model such as BERT:
// see Encoder) and a format, which gives the tokenizer (and, as an
// EmbedFormat, the special tokens around an input). Such a model embeds and
// reranks; Generate refuses with ErrNotGenerative. The caller keeps
// ownership of the encoder and the format: close the Model first.
func NewEncoder(e Encoder, f Format, cfg Config) (*Model, error) {
	if e == nil || f == nil {
		return nil, errors.New("engine: NewEncoder needs an encoder and a format")
	}
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if e.BatchSize() < e.MaxTokens() {
		return nil, fmt.Errorf("engine: the encoder's batch size %d is less than its longest sequence %d", e.BatchSize(), e.MaxTokens())
	}
	m := &Model{enc: e, f: f, cfg: cfg}
	m.idle = sync.NewCond(&m.life)
	m.eq = newEncodeQueue(e, cfg.Logger)
	return m, nil
}

// Parts returns what the architecture's loader says the model is made of
// (Loaded.Parts), for callers that need more than sessions: the weights, a
// runner to call without the engine, the file. It is nil for a model made
// with New or NewEncoder. Read it through the architecture's package, which
// knows its type, as database/sql's Conn.Raw hands a driver's connection to
// code that knows the driver: family.Of(m) for a llama family's model. The
// parts live as long as the model: Close releases them.
func (m *Model) Parts() any { return m.parts }

// Encoder returns the model's encoder, or nil for a decoder.
func (m *Model) Encoder() Encoder { return m.enc }

// Backend returns the model's backend (nil for an encoder-only model).
func (m *Model) Backend() Backend { return m.b }

// Format returns the model's format (chat template, tokenizer, markers).
func (m *Model) Format() Format { return m.f }

// Config returns the settings the model was made with.
func (m *Model) Config() Config { return m.cfg }

// PromptCache returns the model's prompt cache, or nil if it has none.
func (m *Model) PromptCache() *PromptCache { return m.pc }

// ContextLength is the most positions a sequence can hold.
func (m *Model) ContextLength() int {
	if m.sched == nil {
		return m.enc.MaxTokens()
	}
	return m.sched.maxLen()
}

// NewSession starts a conversation; see Session.
func (m *Model) NewSession() *Session {
	return &Session{m: m, promptEnd: -1, approxFrom: -1}
}

// NewConstraint returns a constraint that keeps an answer inside grammar g
// over this model's vocabulary (for GenerateOptions.Constraint). The
// vocabulary is prepared on the first call.
func (m *Model) NewConstraint(g *grammar.Grammar) (Constraint, error) {
	m.vocabOnce.Do(func() {
		tok, err := m.f.Tokenizer()
		if err != nil {
			m.vocabErr = err
			return
		}
		text := make([][]byte, tok.Len())
		for id := range text {
			if tok.Normal(int32(id)) {
				text[id] = tok.TokenBytes(int32(id))
			}
		}
		m.vocab, m.vocabErr = grammar.NewVocab(text, tok.EndOfGeneration())
	})
	if m.vocabErr != nil {
		return nil, fmt.Errorf("engine: preparing the vocabulary for grammars: %w", m.vocabErr)
	}
	return g.NewConstraint(m.vocab), nil
}

// ToolCallGrammar returns the grammar that makes an answer one or more
// calls of funcs (one with opts.Parallel false) in the form this model
// writes them: its format's (ToolCaller), or the Hermes <tool_call> form.
func (m *Model) ToolCallGrammar(ctx context.Context, funcs []grammar.Function, opts grammar.ToolCallOptions) (*grammar.Grammar, error) {
	if tc, ok := m.f.(ToolCaller); ok {
		return tc.ToolCallGrammar(ctx, funcs, opts)
	}
	return grammar.ToolCallsContext(ctx, funcs, opts)
}

// Occupancy describes how busy the model is and what it has computed.
type Occupancy struct {
	// Sequences is the number of generations holding a place in the batch,
	// Waiting those waiting for one; MaxSequences is the limit.
	Sequences, Waiting, MaxSequences int
	// Steps counts forward steps, StepTokens the tokens they computed, and
	// StepSequences the sequences they computed summed over steps
	// (StepSequences/Steps is the mean batch size).
	Steps, StepTokens, StepSequences int64
	// StepTime is the time spent in forward steps. Over a stretch of wall
	// time in which generations ran, the rest went to sampling, streaming
	// and waiting for members between steps.
	StepTime time.Duration
	// CachedPositions is the positions held by the caches of the
	// sequences in the last forward step (0 once none is running), and
	// PositionCapacity what MaxSequences caches of the full context hold:
	// CachedPositions/PositionCapacity is the KV cache in use by running
	// generations, 0 to 1, the utilization a gateway routes by (vLLM's
	// kv_cache_usage_perc counts its blocks the same way). An encoder
	// model has neither.
	CachedPositions, PositionCapacity int
}

// Occupancy returns the scheduler's occupancy and counters.
func (m *Model) Occupancy() Occupancy {
	if m.sched == nil {
		return m.eq.occupancy()
	}
	return m.sched.occupancy()
}

// Close stops the model: generations still running end with ErrClosed (and
// their caches are freed), later calls of Generate fail with ErrClosed, and
// Close returns once every generation has returned, after releasing what
// Open loaded. Closing twice is harmless.
func (m *Model) Close() error {
	m.closeOnce.Do(func() {
		m.life.Lock()
		m.closed = true
		m.life.Unlock()
		if m.sched != nil {
			m.sched.close()
		} else {
			m.eq.close()
		}
		m.life.Lock()
		for m.running > 0 {
			m.idle.Wait()
		}
		m.life.Unlock()
		if m.pc != nil {
			m.pc.close() // the snapshots queued for disk are written first
		}
		if m.mtp != nil {
			m.closeErr = m.mtp.close()
		}
		if m.release != nil {
			m.closeErr = m.release()
		}
		if m.proj != nil {
			if err := m.proj.Close(); m.closeErr == nil {
				m.closeErr = err
			}
		}
	})
	return m.closeErr
}

// enter registers a generation; it fails once the model is closed.
func (m *Model) enter() error {
	m.life.Lock()
	defer m.life.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.running++
	return nil
}

func (m *Model) leave() {
	m.life.Lock()
	defer m.life.Unlock()
	m.running--
	if m.running == 0 {
		m.idle.Broadcast()
	}
}
