package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The scheduler is continuous batching: every forward step of a Model
// computes the next tokens of all the generations that are running, so the
// weights are read once per step for all of them instead of once per
// generation.
//
// A generation holds one of Config.MaxSequences places while it computes
// (admit); more wait in order of arrival. Each generation submits one
// request per step (a chunk of its prompt, or its last sampled token plus a
// speculative draft) and waits for its logits; the scheduler's goroutine
// collects the requests of all members, runs one Backend.Step over them and
// hands the results back. Sampling, detokenizing and streaming happen on the
// generations' own goroutines in between, in parallel.
//
// Fairness: while any sequence decodes, a step takes at most one prefill
// chunk (Config.PrefillChunk tokens) of one prompt, so a long new prompt
// delays the others' next token by about one chunk's compute time. A
// sequence alone (or with other prompts only) computes up to the backend's
// BatchSize prompt tokens per step, in whole chunks.
//
// Exactness: a prompt is always cut at the same places (multiples of the
// chunk size from where its cache left off, the remainder last and on its
// own), whatever else is running. With a backend whose products are
// batch-invariant and whose attention depends only on each sequence's own
// chunk, every sequence's logits are then the same as when it runs alone.
type scheduler struct {
	b      Backend
	log    *slog.Logger
	budget int // tokens per step
	chunk  int // prefill chunk

	mu       sync.Mutex
	closed   bool
	members  int             // admitted generations
	maxSeqs  int             // admission limit
	queue    []chan struct{} // generations waiting for a place, first come first served
	pending  []*request      // submitted for the next step
	wake     chan struct{}   // something was submitted (or close)
	lastStep time.Duration
	counters Occupancy

	stop     context.CancelFunc // cancels a running step at close
	stopCtx  context.Context
	loopDone chan struct{}
	batch    []Seq         // reused
	running  []*request    // reused
	stops    []func() bool // reused
}

// request is one generation's work for one step.
type request struct {
	ctx    context.Context
	cache  Cache
	tokens []int32
	logits []float32 // where the logits go (see Seq.Logits)
	// prefill marks a chunk of a prompt: tokens is the rest of the prompt
	// and the scheduler decides how much of it this step computes (took);
	// logits are written only when that reaches the end.
	prefill bool
	took    int
	// hidden receives final hidden states (Seq.Hidden) for embeddings:
	// of every row computed when hiddenAll, else of the prompt's last
	// token when the step reaches it.
	hidden    []float32
	hiddenAll bool
	hiddenDim int // the width of a row of hidden
	in        rowInput
	done      chan error
}

// rowInput is what a request gives besides its token ids: rows in place of
// their embeddings (an image chunk, computed whole in one step), whether
// they attend both ways, and the rows' rotary positions (backend.Seq's
// Embeds, Bidirectional and Pos; parallel to the request's tokens).
type rowInput struct {
	embeds []float32
	bidi   bool
	pos    []Position
}

func newScheduler(b Backend, cfg Config, log *slog.Logger) *scheduler {
	budget := b.BatchSize()
	chunk := min(cfg.PrefillChunk, budget)
	ctx, cancel := context.WithCancel(context.Background())
	s := &scheduler{
		b: b, log: log, budget: budget, chunk: chunk, maxSeqs: cfg.MaxSequences,
		wake: make(chan struct{}, 1), stop: cancel, stopCtx: ctx, loopDone: make(chan struct{}),
	}
	s.counters.MaxSequences = cfg.MaxSequences
	s.counters.PositionCapacity = cfg.MaxSequences * s.maxLen()
	go s.loop()
	return s
}

// maxLen is the context length of the backend's caches (probed once).
func (s *scheduler) maxLen() int {
	c, err := s.b.NewCache()
	if err != nil {
		return 0
	}
	defer c.Close()
	return c.MaxLen()
}

// admit waits for a place among the sequences computed together. The
// returned function gives it back.
func (s *scheduler) admit(ctx context.Context) (func(), error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if s.members < s.maxSeqs && len(s.queue) == 0 {
		s.members++
		s.mu.Unlock()
		return s.leave, nil
	}
	ch := make(chan struct{})
	s.queue = append(s.queue, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			s.leave()
			return nil, ErrClosed
		}
		return s.leave, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, w := range s.queue {
			if w == ch {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				return nil, ctx.Err()
			}
		}
		// The place was handed over just now: pass it on.
		s.leaveLocked()
		return nil, ctx.Err()
	}
}

func (s *scheduler) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaveLocked()
}

// leaveLocked gives a place back, to the first waiter if there is one (the
// member count then stays the same).
func (s *scheduler) leaveLocked() {
	if len(s.queue) > 0 && !s.closed {
		close(s.queue[0])
		s.queue = s.queue[1:]
		return
	}
	s.members--
	if s.members == 0 {
		s.counters.CachedPositions = 0
	}
	s.notify() // the loop may be waiting for this member's request
}

func (s *scheduler) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// prefill computes the next piece of a prompt: tokens is what is left of
// it, logits receives the last token's logits when this step reaches the
// end. It returns how many tokens were computed.
func (s *scheduler) prefill(ctx context.Context, c Cache, tokens []int32, logits []float32) (int, error) {
	return s.prefillInput(ctx, c, tokens, logits, rowInput{})
}

// prefillInput is prefill with rows given besides the tokens: an image
// chunk's (in.embeds, taken whole in one step) or the rows' positions.
func (s *scheduler) prefillInput(ctx context.Context, c Cache, tokens []int32, logits []float32, in rowInput) (int, error) {
	return s.prefillInputHidden(ctx, c, tokens, logits, in, nil, 0)
}

// prefillInputHidden is prefillInput that also writes the final hidden
// state of every row computed (rows of dim) to hidden, when not nil (for
// the MTP block): it must have room for all of tokens.
func (s *scheduler) prefillInputHidden(ctx context.Context, c Cache, tokens []int32, logits []float32, in rowInput, hidden []float32, dim int) (int, error) {
	r := &request{ctx: ctx, cache: c, tokens: tokens, logits: logits, prefill: true, in: in,
		hidden: hidden, hiddenAll: hidden != nil, hiddenDim: dim, done: make(chan error, 1)}
	err := s.do(r)
	return r.took, err
}

// prefillHidden is prefill for an embedding: no logits, and the hidden
// states of every row computed (all) or of the last token (hidden holds
// one row, written when the step reaches the end). It returns how many
// tokens were computed.
func (s *scheduler) prefillHidden(ctx context.Context, c Cache, tokens []int32, hidden []float32, dim int, all bool) (int, error) {
	r := &request{ctx: ctx, cache: c, tokens: tokens, prefill: true, hidden: hidden, hiddenAll: all, hiddenDim: dim, done: make(chan error, 1)}
	err := s.do(r)
	return r.took, err
}

// decode computes tokens (a sampled token and any draft after it) and
// writes the logits asked for.
func (s *scheduler) decode(ctx context.Context, c Cache, tokens []int32, logits []float32) error {
	return s.decodeAt(ctx, c, tokens, logits, nil)
}

// decodeAt is decode with the rows' rotary positions (nil: their places).
func (s *scheduler) decodeAt(ctx context.Context, c Cache, tokens []int32, logits []float32, pos []Position) error {
	return s.decodeHidden(ctx, c, tokens, logits, pos, nil, 0)
}

// decodeHidden is decodeAt that also writes every row's final hidden
// state (rows of dim) to hidden, when not nil (for the MTP block).
func (s *scheduler) decodeHidden(ctx context.Context, c Cache, tokens []int32, logits []float32, pos []Position, hidden []float32, dim int) error {
	return s.do(&request{ctx: ctx, cache: c, tokens: tokens, logits: logits, in: rowInput{pos: pos},
		hidden: hidden, hiddenAll: hidden != nil, hiddenDim: dim, done: make(chan error, 1)})
}

func (s *scheduler) do(r *request) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.pending = append(s.pending, r)
	s.mu.Unlock()
	s.notify()
	select {
	case err := <-r.done:
		return err
	case <-r.ctx.Done():
		s.mu.Lock()
		for i, p := range s.pending {
			if p == r {
				s.pending = append(s.pending[:i], s.pending[i+1:]...)
				s.mu.Unlock()
				return r.ctx.Err()
			}
		}
		s.mu.Unlock()
		// It is in the running step, which owns the cache until it ends
		// (and stops early if every request in it is cancelled).
		if err := <-r.done; err != nil {
			return err
		}
		return r.ctx.Err()
	}
}

// close fails waiting and future requests with ErrClosed, stops a running
// step and waits for the loop to end.
func (s *scheduler) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.loopDone
		return
	}
	s.closed = true
	for _, r := range s.pending {
		r.done <- ErrClosed
	}
	s.pending = nil
	for _, w := range s.queue {
		close(w)
	}
	s.queue = nil
	s.mu.Unlock()
	s.stop()
	s.notify()
	<-s.loopDone
}

func (s *scheduler) occupancy() Occupancy {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.counters
	l.Sequences, l.Waiting = s.members, len(s.queue)
	return l
}

func (s *scheduler) loop() {
	defer close(s.loopDone)
	// A fault in the weights' memory (a model file truncated or replaced
	// while it is mapped: SIGBUS) becomes a panic on this goroutine, which
	// step turns into an error for the generations of that step, instead
	// of killing the process. (Backends that fan a step out to worker
	// goroutines carry the fault back to this one; see tensor.Pool.)
	debug.SetPanicOnFault(true)
	for {
		<-s.wake
		for {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				return
			}
			if len(s.pending) == 0 {
				s.mu.Unlock()
				break
			}
			s.waitForMembersLocked()
			if s.closed || len(s.pending) == 0 {
				s.mu.Unlock()
				continue
			}
			reqs := s.pickLocked()
			s.mu.Unlock()
			s.run(reqs)
		}
	}
}

// waitForMembersLocked gives the members that have not submitted their
// request yet (they are sampling or streaming their last token) a short
// while, so that the step computes them too instead of leaving them for
// the next one. The wait is bounded: a member whose caller is slow to take
// its events joins a later step.
func (s *scheduler) waitForMembersLocked() {
	if len(s.pending) >= s.members {
		return
	}
	// Up to a twentieth of the last step (at most 250 ms): sampling and
	// streaming a token take a millisecond or two per member over a large
	// vocabulary, more on a busy machine, and a member that misses a long
	// step (a prompt chunk) waits a whole step more for its token.
	grace := 200*time.Microsecond + s.lastStep/20
	deadline := time.Now().Add(min(grace, 250*time.Millisecond))
	for len(s.pending) < s.members && !s.closed {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-time.After(left):
		}
		s.mu.Lock()
	}
}

// pickLocked chooses the requests of the next step and removes them from
// pending: every decode request that fits the token budget, then prompt
// chunks: one chunk of one prompt if any member decodes (here or not), else
// as many whole chunks of as many prompts as fit.
func (s *scheduler) pickLocked() []*request {
	reqs := s.running[:0]
	left := s.budget
	for _, r := range s.pending {
		if !r.prefill && len(r.tokens) <= left {
			reqs = append(reqs, r)
			left -= len(r.tokens)
		}
	}
	// A member that is not here with a prompt chunk is decoding, even if
	// its request missed this step (it was still sampling or streaming):
	// its next token must not wait behind many chunks either.
	prompts := 0
	for _, r := range s.pending {
		if r.prefill {
			prompts++
		}
	}
	decoding := len(reqs) > 0 || s.members > prompts
	for _, r := range s.pending {
		if !r.prefill {
			continue
		}
		r.took = s.chunkSize(len(r.tokens), left, decoding)
		if r.in.embeds != nil {
			// An image chunk runs whole, in one step.
			r.took = 0
			if len(r.tokens) <= left {
				r.took = len(r.tokens)
			}
		}
		if r.took > 0 {
			reqs = append(reqs, r)
			left -= r.took
			if decoding {
				break
			}
		}
	}
	if len(reqs) == 0 {
		// Nothing fits the budget (a decode request with a draft longer
		// than the budget: the engine never makes one); take the first.
		r := s.pending[0]
		r.took = min(len(r.tokens), s.budget)
		reqs = append(reqs, r)
	}
	keep := s.pending[:0]
	for _, r := range s.pending {
		if !slices.Contains(reqs, r) {
			keep = append(keep, r)
		}
	}
	clear(s.pending[len(keep):])
	s.pending = keep
	s.running = reqs
	return reqs
}

// chunkSize is how many of a prompt's remaining n tokens a step computes
// with left tokens of budget: while others decode one chunk, else as many
// whole chunks as fit. Every token must land in a step of the same kind
// (at least or fewer than 64 of its sequence's tokens, which decides the
// backend's attention path) as when the prompt is cut into plain chunks, so
// a last piece of fewer than 64 tokens is never merged with whole chunks.
func (s *scheduler) chunkSize(n, left int, decoding bool) int {
	c := s.chunk
	if decoding || n <= c {
		if n = min(n, c); n <= left {
			return n
		}
		return 0
	}
	merge := n // what may go in one step
	if r := n % c; r != 0 && r < 64 {
		merge = n - r
	}
	if merge <= left {
		return merge
	}
	return min(left/c, merge/c) * c
}

// run computes one step and hands out the results.
func (s *scheduler) run(reqs []*request) {
	batch := s.batch[:0]
	ok := reqs[:0:0]
	for _, r := range reqs {
		n := len(r.tokens)
		var logits []float32
		if r.prefill {
			n = r.took
			if n == len(r.tokens) {
				logits = r.logits
			}
		} else {
			logits = r.logits
		}
		if c := r.cache; c.Len()+n > c.MaxLen() {
			r.done <- fmt.Errorf("engine: %d cached + %d new tokens exceed the cache length %d: %w", c.Len(), n, c.MaxLen(), ErrContextFull)
			continue
		}
		var hidden []float32
		if r.hidden != nil {
			if r.hiddenAll {
				hidden = r.hidden[:n*r.hiddenDim]
			} else if n == len(r.tokens) {
				hidden = r.hidden
			}
		}
		seq := Seq{Cache: r.cache, Tokens: r.tokens[:n], Logits: logits, Hidden: hidden, Bidirectional: r.in.bidi}
		if e := r.in.embeds; e != nil {
			seq.Embeds = e[:n*(len(e)/len(r.tokens))]
		}
		if r.in.pos != nil {
			seq.Pos = r.in.pos[:n]
		}
		batch = append(batch, seq)
		ok = append(ok, r)
	}
	s.batch = batch
	if len(batch) == 0 {
		return
	}
	// The step stops early only if every generation in it is cancelled
	// (or the model closes); otherwise cancelled ones wait for it.
	ctx, cancel := context.WithCancel(s.stopCtx)
	var cancelled atomic.Int32
	stops := s.stops[:0]
	for _, r := range ok {
		stops = append(stops, context.AfterFunc(r.ctx, func() {
			if cancelled.Add(1) == int32(len(ok)) {
				cancel()
			}
		}))
	}

	start := time.Now()
	tokens := 0
	for _, q := range batch {
		tokens += len(q.Tokens)
	}
	err := s.step(ctx, batch)
	if err != nil && s.stopCtx.Err() != nil {
		err = ErrClosed // the model closed during the step
	}
	d := time.Since(start)
	positions := 0 // the members' caches are ours until done is sent
	for _, q := range batch {
		positions += q.Cache.Len()
	}
	for _, stop := range stops {
		stop()
	}
	clear(stops)
	s.stops = stops
	cancel()
	s.mu.Lock()
	s.lastStep = d
	s.counters.Steps++
	s.counters.StepTokens += int64(tokens)
	s.counters.StepSequences += int64(len(batch))
	s.counters.StepTime += d
	s.counters.CachedPositions = positions
	s.mu.Unlock()
	for _, r := range ok {
		r.done <- err
	}
	clear(s.batch)
}

// ErrFault is wrapped by the error of a step whose backend faulted: it read
// memory that went away, which for a model whose weights are mapped from
// its file means the file was truncated or overwritten in place while
// loaded. Replace a model file with mv (a new inode), never cp over it.
var ErrFault = errors.New("engine: the backend faulted (was the model file changed while it was loaded? replace model files with mv, not cp)")

// step runs one Backend.Step, turning a panic in it (a fault reading the
// weights, see loop) into an error wrapping ErrFault, so that one bad step
// fails its generations and the model keeps serving.
func (s *scheduler) step(ctx context.Context, batch []Seq) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrFault, p)
			s.log.Error("engine: a forward step faulted", "panic", p)
		}
	}()
	return s.b.Step(ctx, batch)
}

// members is the number of generations holding a place.
func (s *scheduler) active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.members
}
