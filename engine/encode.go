package engine

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// encodeQueue batches the sequences of every Embed call on an encoder
// model: a goroutine packs whole sequences into passes of at most the
// encoder's BatchSize tokens and runs them. An encoder has no chat traffic
// to share with, so this is its whole scheduler.
//
// Fairness: a pass takes one sequence of each waiting call in turn, round
// after round, until the next one does not fit; so a call of 10,000 inputs
// does not hold a call of one input back for more than about a pass, and
// each call's sequences go in order. Passes never split a sequence (an
// encoder attends in both directions, over the whole sequence at once).
type encodeQueue struct {
	enc Encoder
	log *slog.Logger

	mu       sync.Mutex
	closed   bool
	calls    []*encodeCall // waiting, in order of arrival
	turn     int           // the call whose sequence goes first in the next pass
	wake     chan struct{}
	counters Occupancy

	stop     context.CancelFunc
	stopCtx  context.Context
	loopDone chan struct{}
	batch    []EncodeSeq   // reused
	owners   []*encodeCall // the call of each sequence in batch
}

// encodeCall is one EmbedTokens call's sequences.
type encodeCall struct {
	ctx      context.Context
	seqs     [][]int32
	pool     Pooling
	outs     [][]float32
	next     int           // the first sequence not yet in a pass
	finished int           // sequences computed
	err      error         // why it ended, set with done
	done     chan struct{} // closed when the call is over
}

func newEncodeQueue(enc Encoder, log *slog.Logger) *encodeQueue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &encodeQueue{enc: enc, log: log, wake: make(chan struct{}, 1), stop: cancel, stopCtx: ctx, loopDone: make(chan struct{})}
	go q.loop()
	return q
}

// encode runs seqs, writing each one's pooled vector into outs.
func (q *encodeQueue) encode(ctx context.Context, seqs [][]int32, pool Pooling, outs [][]float32) error {
	c := &encodeCall{ctx: ctx, seqs: seqs, pool: pool, outs: outs, done: make(chan struct{})}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	q.calls = append(q.calls, c)
	q.counters.Waiting++
	q.mu.Unlock()
	q.notify()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		q.mu.Lock()
		q.finishLocked(c, ctx.Err())
		q.mu.Unlock()
		// Sequences already in a pass write into outs, which nobody reads
		// any more; the pass stops early if every call in it is gone.
		return ctx.Err()
	}
}

func (q *encodeQueue) notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *encodeQueue) removeLocked(c *encodeCall) {
	for i, w := range q.calls {
		if w == c {
			q.calls = append(q.calls[:i], q.calls[i+1:]...)
			q.counters.Waiting--
			if q.turn > i {
				q.turn--
			}
			return
		}
	}
}

// finishLocked ends a call with err (nil: every sequence computed), once.
func (q *encodeQueue) finishLocked(c *encodeCall, err error) {
	select {
	case <-c.done:
		return
	default:
	}
	c.err = err
	q.removeLocked(c)
	close(c.done)
}

func (q *encodeQueue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		<-q.loopDone
		return
	}
	q.closed = true
	for _, c := range append([]*encodeCall(nil), q.calls...) {
		q.finishLocked(c, ErrClosed)
	}
	q.mu.Unlock()
	q.stop()
	q.notify()
	<-q.loopDone
}

func (q *encodeQueue) occupancy() Occupancy {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.counters
}

func (q *encodeQueue) loop() {
	defer close(q.loopDone)
	for {
		<-q.wake
		for {
			q.mu.Lock()
			if q.closed {
				q.mu.Unlock()
				return
			}
			n := q.pickLocked()
			q.mu.Unlock()
			if n == 0 {
				break
			}
			q.run()
		}
	}
}

// pickLocked fills q.batch with whole sequences, one of each waiting call
// in turn, and returns how many it took.
func (q *encodeQueue) pickLocked() int {
	q.batch, q.owners = q.batch[:0], q.owners[:0]
	budget := q.enc.BatchSize()
	for progress := true; progress && len(q.calls) > 0; {
		progress = false
		for k := range len(q.calls) {
			c := q.calls[(q.turn+k)%len(q.calls)]
			if c.next >= len(c.seqs) {
				continue
			}
			s := c.seqs[c.next]
			if len(s) > budget {
				if len(q.batch) > 0 {
					continue
				}
				budget = len(s) // never happens: inputs are checked against MaxTokens <= BatchSize
			}
			q.batch = append(q.batch, EncodeSeq{Tokens: s, Pooling: c.pool, Out: c.outs[c.next]})
			q.owners = append(q.owners, c)
			c.next++
			budget -= len(s)
			progress = true
		}
	}
	if len(q.calls) > 0 {
		q.turn = (q.turn + 1) % len(q.calls)
	}
	return len(q.batch)
}

// run computes the picked pass and hands its results to the calls.
func (q *encodeQueue) run() {
	ctx, cancel := context.WithCancel(q.stopCtx)
	// The pass stops early only if every call in it is cancelled.
	var distinct []*encodeCall
	for _, c := range q.owners {
		if !slices.Contains(distinct, c) {
			distinct = append(distinct, c)
		}
	}
	var cancelled atomic.Int32
	var stops []func() bool
	for _, c := range distinct {
		stops = append(stops, context.AfterFunc(c.ctx, func() {
			if int(cancelled.Add(1)) == len(distinct) {
				cancel()
			}
		}))
	}
	tokens := 0
	for _, s := range q.batch {
		tokens += len(s.Tokens)
	}
	start := time.Now()
	err := q.enc.Encode(ctx, q.batch)
	d := time.Since(start)
	for _, stop := range stops {
		stop()
	}
	cancel()
	if err != nil && q.stopCtx.Err() != nil {
		err = ErrClosed
	}
	q.mu.Lock()
	q.counters.Steps++
	q.counters.StepTokens += int64(tokens)
	q.counters.StepSequences += int64(len(q.batch))
	q.counters.StepTime += d
	for _, c := range q.owners {
		if err != nil {
			q.finishLocked(c, err)
			continue
		}
		if c.finished++; c.finished == len(c.seqs) {
			q.finishLocked(c, nil)
		}
	}
	q.mu.Unlock()
	if err != nil {
		q.log.Debug("engine: encoder pass failed", "sequences", len(q.batch), "tokens", tokens, "err", err)
	}
	clear(q.batch)
	clear(q.owners)
}
