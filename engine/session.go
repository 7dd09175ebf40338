package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
)

// ErrSessionBusy is returned when Generate is called on a session that is
// still generating (a Session runs one generation at a time).
var ErrSessionBusy = errors.New("engine: session is busy with another generation")

// A Session is one conversation with a model: it owns a KV cache and keeps
// it between calls of Generate, so that a follow-up turn only computes the
// tokens that are new. Pass the whole conversation each time (including the
// model's previous answers); the session finds the longest prefix of the new
// prompt that is already cached and computes only the rest.
//
// The same prompt asked again reuses even the prompt's logits, so a seeded
// request repeats its answer. A session runs one generation at a time; make
// one per concurrent conversation. Sessions of one Model share its weights,
// and their generations are computed together, one token each per forward
// step (see Model).
type Session struct {
	m     *Model
	mu    sync.Mutex
	cache Cache
	// tokens are the tokens whose keys and values are in the cache, at
	// positions 0..len-1.
	tokens []int32
	// sampled are the tokens the last generation sampled (for tests).
	sampled []int32
	// promptLogits are the logits after the last prompt's prefill, the
	// prediction for position promptEnd; promptEnd is -1 when there are none
	// or tokens[:promptEnd] has changed since. Asking the same prompt again
	// reuses them: recomputing the last prompt token alone could give
	// slightly different numbers than the prefill did, and a seeded request
	// would not repeat its answer.
	promptLogits []float32
	promptEnd    int
	// approxFrom is the first position whose keys and values came through
	// a context shift (approximations, never shared through a PromptCache);
	// -1 when there are none.
	approxFrom int
	// draft is the session's sequence on the model's draft model
	// (Config.Draft), made on the first draft; nil before.
	draft *draftSeq
	// mtp is the session's sequence on the model's MTP block
	// (Config.MTP), made on the first draft; nil before.
	mtp *mtpSeq
	// memBytes is cache.Bytes() as of the end of the last generation (read
	// without waiting for a running one), the draft's cache included.
	memBytes atomic.Int64
}

// Reset empties the session's KV cache; the next Generate starts from
// scratch. It waits for a running generation to finish.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget()
}

func (s *Session) forget() {
	s.tokens = s.tokens[:0]
	s.promptEnd = -1
	s.approxFrom = -1
	if s.draft != nil {
		s.draft.tokens = s.draft.tokens[:0]
	}
	if s.mtp != nil {
		s.mtp.tokens, s.mtp.hAt = s.mtp.tokens[:0], -1
	}
}

// Close frees the session's KV cache (a GPU backend's device memory); the
// session stays usable and makes a new cache if it generates again. It
// waits for a running generation to finish.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget()
	s.draft.close()
	s.draft = nil
	s.mtp.close()
	s.mtp = nil
	if s.cache == nil {
		return nil
	}
	err := s.cache.Close()
	s.cache = nil
	s.memBytes.Store(0)
	return err
}

// CachedTokens returns how many tokens the session's KV cache holds.
func (s *Session) CachedTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}

// MemoryBytes returns the memory the session's KV cache holds: what it has
// allocated (it grows in steps), not only what the cached tokens use. It
// never waits: during a generation it returns the size at the end of the
// previous one.
func (s *Session) MemoryBytes() int64 { return s.memBytes.Load() }

// Generate renders msgs with the chat template, computes what the cache does
// not already hold, and streams the model's answer: EventReasoning,
// EventContent and (with tools) EventToolCall events as they become
// available, then one EventDone with Stats. A failure is yielded once as a
// non-nil error and ends the stream.
//
// Generation stops when the model ends its turn, when a stop string
// appears, at opts.MaxTokens, when the context is full, or when ctx is
// cancelled (then the Done event has StopReason StopCancelled; Generate
// returns within one forward step). Breaking out of the loop early stops
// generation too. In every case the session stays usable.
//
// A prompt that does not fit in the context is an error wrapping
// ErrContextFull, unless opts.DropOldest allows dropping old messages. On a
// closed model Generate fails with ErrClosed.
func (s *Session) Generate(ctx context.Context, msgs []Message, opts GenerateOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if !s.mu.TryLock() {
			yield(Event{}, ErrSessionBusy)
			return
		}
		defer s.mu.Unlock()
		if s.m.b == nil {
			yield(Event{}, ErrNotGenerative)
			return
		}
		if err := s.m.enter(); err != nil {
			yield(Event{}, err)
			return
		}
		defer s.m.leave()
		defer func() {
			if s.cache != nil {
				n := s.cache.Bytes()
				if s.mtp != nil && s.mtp.cache != nil {
					n += s.mtp.cache.Bytes()
				}
				if s.draft != nil && s.draft.cache != nil {
					n += s.draft.cache.Bytes()
				}
				s.memBytes.Store(n)
			}
		}()
		g := &generation{s: s, m: s.m, opts: opts, yield: yield}
		if err := g.run(ctx, msgs); err != nil && !g.stopped {
			g.yield(Event{}, err)
		}
	}
}

// ensureCache makes the session's cache on first use.
func (s *Session) ensureCache() error {
	if s.cache != nil {
		return nil
	}
	c, err := s.m.b.NewCache()
	if err != nil {
		return fmt.Errorf("engine: creating the KV cache: %w", err)
	}
	s.cache = c
	return nil
}

// PromptLogits returns a copy of the logits after the last prompt the
// session computed (the prediction of the answer's first token), or nil.
// It is for comparing engines and checking that a reused prefix gives the
// numbers a fresh computation gives.
func (s *Session) PromptLogits() []float32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.promptEnd < 0 {
		return nil
	}
	return append([]float32(nil), s.promptLogits...)
}
