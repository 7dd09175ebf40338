// Package enginetest is a fake model for tests of code built on package
// engine: a Backend whose "forward pass" writes a scripted answer and a
// Format in SmolLM3's manner (ChatML, <think>, Hermes <tool_call> calls)
// over a small fake Tokenizer. Put together with engine.New they make a
// real *engine.Model, so that tests run the engine's own generate loop
// (scheduling and batching, prompt reuse, stop strings, constraints,
// budgets, tool-call parsing, cancellation) without a model file:
//
//	m, err := enginetest.New(enginetest.Options{Answer: func(prompt string) string {
//		return "<think>\nEasy.\n</think>\nHello!"
//	}})
//	for ev, err := range m.NewSession().Generate(ctx, msgs, engine.GenerateOptions{}) { ... }
//
// The model answers whatever Answer returns for the prompt it is given (as
// text, special tokens included; ParseChatML reads the messages back): it
// puts a high logit on the answer's next token at every step, so that any
// sampler picks it, unless a constraint or a logit bias rules it out.
// Package servertest builds the server's fake engine on it.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/smolgo/smolgo/engine"
)

// Peak is the logit the fake model gives its answer's next token; every
// other token gets 0.
const Peak = 40

// Options configure a fake model.
type Options struct {
	// Answer returns the text the model writes after prompt (the decoded
	// prompt of a chat, ending with the assistant's header, or a raw
	// prompt), special tags such as <think> included; <|im_end|> follows
	// it. nil answers "OK".
	Answer func(prompt string) string
	// Context is the most positions a sequence holds [4096].
	Context int
	// Vocab is the vocabulary's size [DefaultVocab].
	Vocab int
	// StepDelay is slept in every forward step that decodes, PrefillDelay
	// in every step that computes prompt tokens (both end early when the
	// step is cancelled).
	StepDelay, PrefillDelay time.Duration
	// BytesPerToken is the memory a cache reports per position [1024].
	BytesPerToken int64
	// Config is the engine's configuration (MaxSequences, PromptCacheBytes,
	// ...); its Context is set from Context.
	Config engine.Config
}

// New returns a model over a fake Backend and Format.
func New(o Options) (*engine.Model, error) {
	b := NewBackend(o)
	cfg := o.Config
	cfg.Context = b.ctxLen
	return engine.New(b, &Format{Tok: b.Tok}, cfg)
}

// Backend is the fake forward pass (engine.Backend). Its caches hold the
// tokens they were given and check that the engine never leaves a gap.
type Backend struct {
	Tok *Tokenizer

	answer                  func(string) string
	ctxLen                  int
	stepDelay, prefillDelay time.Duration
	bytesPerToken           int64

	mu      sync.Mutex
	answers map[string][]int32 // SetAnswer's, per prompt text
	raw     []rawAnswer        // SetRawAnswer's
	scripts map[uint64][]int32 // Options.Answer's, tokenized, per prompt hash
	order   []uint64           // oldest first, to bound scripts
	seed    maphash.Seed
}

// NewBackend returns the backend of New, for callers that build the
// engine.Model themselves.
func NewBackend(o Options) *Backend {
	b := &Backend{Tok: NewTokenizer(o.Vocab), answer: o.Answer, ctxLen: o.Context,
		stepDelay: o.StepDelay, prefillDelay: o.PrefillDelay, bytesPerToken: o.BytesPerToken,
		answers: map[string][]int32{}, scripts: map[uint64][]int32{}, seed: maphash.MakeSeed()}
	if b.answer == nil {
		b.answer = func(string) string { return "OK" }
	}
	if b.ctxLen <= 0 {
		b.ctxLen = 4096
	}
	if b.bytesPerToken <= 0 {
		b.bytesPerToken = 1024
	}
	return b
}

// SetAnswer makes the model answer prompt (a chat prompt as Format
// renders it, decoded with its special tokens, up to and including the
// assistant's header) with answer, until ClearAnswer, instead of asking
// Options.Answer. A caller that knows the messages computes the answer from
// them and registers it for the prompt they render to.
func (b *Backend) SetAnswer(prompt, answer string) {
	s := append(b.Tok.Encode(answer, true), ImEnd)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.answers[prompt] = s
}

// ClearAnswer forgets an answer given to SetAnswer.
func (b *Backend) ClearAnswer(prompt string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.answers, prompt)
}

// SetRawAnswer makes the model continue a raw prompt (a plain completion:
// no chat template, so no assistant header to answer after) with answer,
// until ClearRawAnswer.
func (b *Backend) SetRawAnswer(prompt []int32, answer string) {
	s := append(b.Tok.Encode(answer, true), ImEnd)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.raw = append(b.raw, rawAnswer{slices.Clone(prompt), s})
}

// ClearRawAnswer forgets an answer given to SetRawAnswer.
func (b *Backend) ClearRawAnswer(prompt []int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.raw = slices.DeleteFunc(b.raw, func(r rawAnswer) bool { return slices.Equal(r.prompt, prompt) })
}

type rawAnswer struct {
	prompt, script []int32
}

// Vocab implements engine.Backend.
func (b *Backend) Vocab() int { return b.Tok.Len() }

// BatchSize implements engine.Backend.
func (b *Backend) BatchSize() int { return 512 }

// NewCache implements engine.Backend.
func (b *Backend) NewCache() (engine.Cache, error) { return &cache{b: b}, nil }

// Step implements engine.Backend: every row of logits is one-hot (Peak) on
// the next token of the answer to the sequence's prompt.
func (b *Backend) Step(ctx context.Context, batch []engine.Seq) error {
	V := b.Vocab()
	prefill := false
	for _, q := range batch {
		c, ok := q.Cache.(*cache)
		switch {
		case !ok || c.b != b:
			return errors.New("enginetest: a cache of another backend")
		case c.closed:
			return errors.New("enginetest: a cache used after Close")
		case len(q.Tokens) == 0 || len(q.Logits)%V != 0 || len(q.Logits)/V > len(q.Tokens):
			return fmt.Errorf("enginetest: a bad sequence: %d tokens, %d logits", len(q.Tokens), len(q.Logits))
		case len(c.stored)+len(q.Tokens) > b.ctxLen:
			return fmt.Errorf("enginetest: %d + %d tokens: %w", len(c.stored), len(q.Tokens), engine.ErrContextFull)
		}
		prefill = prefill || len(q.Tokens) > len(q.Logits)/V
	}
	d := b.stepDelay
	if prefill {
		d = b.prefillDelay
	}
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Ids not given out yet are no tokens: -Inf, so that no sampler picks
	// them (as with a real vocabulary, where every id is a token).
	assigned := int(firstPiece) + b.Tok.pieceCount()
	negInf := float32(math.Inf(-1))
	for _, q := range batch {
		c := q.Cache.(*cache)
		c.stored = append(c.stored, q.Tokens...)
		rows := len(q.Logits) / V
		for r := range rows {
			end := len(c.stored) - rows + r + 1 // the row predicts the token after stored[:end]
			row := q.Logits[r*V : (r+1)*V]
			next := b.next(c.stored[:end])
			clear(row[:assigned])
			for i := assigned; i < V; i++ {
				row[i] = negInf
			}
			row[next] = Peak
		}
	}
	return nil
}

// next returns the answer's token after hist.
func (b *Backend) next(hist []int32) int32 {
	start, script := b.find(hist)
	if script == nil {
		script = b.script(hist[:start])
	}
	if n := len(hist) - start; n < len(script) {
		return script[n]
	}
	return ImEnd
}

// find returns where the answer begins in hist: after a raw prompt given to
// SetRawAnswer (with its answer), else after the last assistant header (and
// the empty think block of no-think mode), else at the end.
func (b *Backend) find(hist []int32) (int, []int32) {
	b.mu.Lock()
	best, script := -1, []int32(nil)
	for _, r := range b.raw {
		if len(r.prompt) <= len(hist) && len(r.prompt) > best && slices.Equal(hist[:len(r.prompt)], r.prompt) {
			best, script = len(r.prompt), r.script
		}
	}
	b.mu.Unlock()
	if best >= 0 {
		return best, script
	}
	hdr := append([]int32{ImStart}, b.Tok.appendPlain(nil, "assistant\n")...)
	for i := len(hist) - len(hdr); i >= 0; i-- {
		if hist[i] == ImStart && slices.Equal(hist[i:i+len(hdr)], hdr) {
			// After the header, an empty think block is the prompt's (no-think
			// mode) or the answer's (a reasoning of nothing): the prompt up
			// to the header wins if an answer was set for it.
			j := i + len(hdr)
			empty := b.Tok.Encode("<think>\n\n</think>\n", true)
			if len(hist) >= j+len(empty) && slices.Equal(hist[j:j+len(empty)], empty) {
				text, _ := b.Tok.Decode(hist[:j], false)
				b.mu.Lock()
				s, ok := b.answers[text]
				b.mu.Unlock()
				if ok {
					return j, s
				}
				j += len(empty)
			}
			return j, nil
		}
	}
	return len(hist), nil
}

// maxScripts bounds the answers of Options.Answer kept, tokenized.
const maxScripts = 256

// script returns the answer's tokens after prompt (ImEnd last).
func (b *Backend) script(prompt []int32) []int32 {
	text, _ := b.Tok.Decode(prompt, false)
	h := maphash.Hash{}
	h.SetSeed(b.seed)
	h.WriteString(text)
	key := h.Sum64()
	b.mu.Lock()
	s, ok := b.answers[text]
	if !ok {
		s, ok = b.scripts[key]
	}
	b.mu.Unlock()
	if ok {
		return s
	}
	s = append(b.Tok.Encode(b.answer(text), true), ImEnd)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.scripts[key]; !ok {
		b.scripts[key] = s
		b.order = append(b.order, key)
		if len(b.order) > maxScripts {
			delete(b.scripts, b.order[0])
			b.order = b.order[1:]
		}
	}
	return s
}

// cache is one sequence's tokens.
type cache struct {
	b      *Backend
	stored []int32
	closed bool
}

func (c *cache) Len() int     { return len(c.stored) }
func (c *cache) MaxLen() int  { return c.b.ctxLen }
func (c *cache) Bytes() int64 { return int64(len(c.stored)) * c.b.bytesPerToken }

func (c *cache) Truncate(n int) error {
	if n < 0 || n > len(c.stored) {
		return fmt.Errorf("enginetest: truncate to %d of %d", n, len(c.stored))
	}
	c.stored = c.stored[:n]
	return nil
}

func (c *cache) Close() error { c.closed = true; return nil }

// Clone implements engine.Snapshotter.
func (c *cache) Clone(n int) (engine.Cache, error) {
	if n > len(c.stored) {
		return nil, fmt.Errorf("enginetest: clone %d of %d", n, len(c.stored))
	}
	return &cache{b: c.b, stored: slices.Clone(c.stored[:n])}, nil
}

// CopyFrom implements engine.Snapshotter.
func (c *cache) CopyFrom(src engine.Cache, from, to int) error {
	s, ok := src.(*cache)
	if !ok || s.closed || from > len(c.stored) || to > len(s.stored) || from > to {
		return fmt.Errorf("enginetest: copy [%d, %d) into %d", from, to, len(c.stored))
	}
	c.stored = append(c.stored[:from], s.stored[from:to]...)
	return nil
}

// Shift implements engine.Shifter.
func (c *cache) Shift(keep, drop int) error {
	if keep+drop > len(c.stored) {
		return fmt.Errorf("enginetest: shift %d+%d of %d", keep, drop, len(c.stored))
	}
	c.stored = append(c.stored[:keep], c.stored[keep+drop:]...)
	return nil
}
