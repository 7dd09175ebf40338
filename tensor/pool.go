package tensor

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// A Job is work that can be split into index ranges and run in parallel.
// Do is called with disjoint half-open ranges [lo, hi) that together cover
// [0, n) of the Pool.Run call; it must be safe to call concurrently.
//
// Jobs are passed as interfaces so that a caller can keep its job value in a
// reusable buffer: converting a pointer to an interface does not allocate,
// which keeps the decode loop free of per-token allocations.
type Job interface {
	Do(lo, hi int)
}

// Pool is a fixed set of worker goroutines reused by every operation that
// runs on it. Create one with NewPool, share it between any number of
// goroutines, and Close it when done.
//
// A decode step runs a few hundred short products, so what matters is how
// fast the workers join each one and how evenly the work ends:
//
//   - Run cuts [0, n) into many small chunks that the calling goroutine and
//     the workers take one at a time (an atomic counter), so a worker that
//     wakes late, or a core that the operating system lends to another
//     process for a while, costs only its share of the remaining chunks,
//     never a whole half of the product.
//   - A worker that has just finished spins for a short while
//     (spinFor) watching for the next job before it parks, so back-to-back
//     products in a layer do not pay a futex wake-up each.
//
// One Run at a time uses the workers; a Run that finds them busy with
// another goroutine's job does its own work alone on the calling goroutine,
// so callers never wait for each other.
type Pool struct {
	threads int
	spin    bool
	mu      sync.Mutex // held by the Run that owns the workers
	cur     atomic.Pointer[task]
	t       task
	workers []*worker
	closed  atomic.Bool
	close   sync.Once
}

// task is one parallel Run: chunks of size chunk over [0, n).
type task struct {
	gen     atomic.Uint64 // which Run this is (workers join each one once)
	job     Job
	n       int
	chunk   int
	nchunks int64
	next    atomic.Int64 // next chunk index to take
	done    atomic.Int64 // chunks finished
	refs    atomic.Int32 // workers looking at the task
	waiting atomic.Bool  // the caller sleeps on wake until done == nchunks
	wake    chan struct{}
	// fault is the first panic of a chunk (a fault reading memory that
	// went away, such as a truncated mapped file), re-raised on Run's
	// goroutine once every chunk is accounted for.
	fault atomic.Pointer[any]
}

type worker struct {
	sleeping atomic.Bool
	wake     chan struct{}
}

// spinFor is how long an idle worker (and a Run waiting for its last
// chunks) polls before blocking. A layer's products follow each other
// within a few microseconds; a whole decode step is tens of milliseconds.
const spinFor = 50 * time.Microsecond

// chunksPerThread is how many pieces each thread's share of a Run is cut
// into (each still at least grain units).
const chunksPerThread = 16

// NewPool starts a pool of the given number of threads; threads <= 0 means
// runtime.NumCPU(). The calling goroutine of Run counts as one of the
// threads, so NewPool(1) starts no goroutine at all.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &Pool{threads: threads}
	// Spinning only pays when every thread has a processor of its own;
	// with more threads than GOMAXPROCS a spinning worker would hold up
	// the goroutine it waits for.
	p.spin = threads <= runtime.GOMAXPROCS(0)
	p.t.wake = make(chan struct{}, 1)
	for i := 1; i < threads; i++ {
		w := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go p.work(w)
	}
	return p
}

// Threads reports how many threads share the work of one Run.
func (p *Pool) Threads() int { return p.threads }

// Run calls job.Do over [0, n) split into pieces that are each a multiple
// of grain (except the last) and returns when all of them are done.
// grain <= 0 means 1. Work of a single grain runs inline.
func (p *Pool) Run(n, grain int, job Job) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	units := (n + grain - 1) / grain
	if p.threads <= 1 || units <= 1 || !p.mu.TryLock() {
		job.Do(0, n)
		return
	}
	defer p.mu.Unlock()
	t := &p.t
	// A worker from an earlier Run may still hold a reference; it touches
	// nothing once it sees that the task is no longer current.
	for t.refs.Load() != 0 {
		runtime.Gosched()
	}
	per := max(1, units/(p.threads*chunksPerThread))
	t.gen.Add(1)
	t.job, t.n, t.chunk = job, n, per*grain
	t.nchunks = int64((n + t.chunk - 1) / t.chunk)
	t.next.Store(0)
	t.done.Store(0)
	t.waiting.Store(false)
	p.cur.Swap(t) // a full fence before reading the sleeping flags
	for _, w := range p.workers {
		if w.sleeping.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
	t.runChunks()
	// Wait for the chunks other threads took: spin briefly, then sleep.
	if t.done.Load() != t.nchunks {
		deadline := time.Now().Add(spinFor)
		for i := 0; t.done.Load() != t.nchunks; i++ {
			if i%64 == 63 && time.Now().After(deadline) {
				// Swap, not Store: the flag and done form a Dekker pair
				// (we set waiting then read done; the last finisher adds
				// to done then reads waiting). Go's atomics are
				// sequentially consistent, but qemu-user emulates arm64's
				// STLR-then-LDAR with a plain x86 store and load that the
				// host may reorder, so one side could miss the other and
				// both would sleep. A read-modify-write is a full fence
				// everywhere.
				t.waiting.Swap(true)
				for t.done.Load() != t.nchunks {
					<-t.wake
				}
				break
			}
		}
	}
	p.cur.Store(nil)
	t.job = nil
	select { // drop a wake-up sent after we saw done
	case <-t.wake:
	default:
	}
	if f := t.fault.Swap(nil); f != nil {
		panic(*f)
	}
}

// runChunks takes chunks until none are left.
func (t *task) runChunks() {
	for {
		c := t.next.Add(1) - 1
		if c >= t.nchunks {
			return
		}
		lo := int(c) * t.chunk
		t.do(lo, min(t.n, lo+t.chunk))
		if t.done.Add(1) == t.nchunks && t.waiting.Load() {
			select {
			case t.wake <- struct{}{}:
			default:
			}
		}
	}
}

// do runs one chunk; a panic in it is recorded for Run to re-raise (the
// chunk still counts as done, so that Run returns).
func (t *task) do(lo, hi int) {
	defer func() {
		if r := recover(); r != nil {
			t.recordFault(r)
		}
	}()
	t.job.Do(lo, hi)
}

func (t *task) recordFault(r any) {
	p := new(any)
	*p = r
	t.fault.CompareAndSwap(nil, p)
}

func (p *Pool) work(w *worker) {
	// A fault reading mapped memory (a model file truncated under us)
	// panics instead of killing the process; do passes it to Run.
	debug.SetPanicOnFault(true)
	var last uint64 // generation of the last task this worker joined
	idleSince := time.Now()
	for i := 0; ; i++ {
		if t := p.cur.Load(); t != nil {
			t.refs.Add(1)
			// Once the task is confirmed current its fields are stable:
			// Run rewrites them only after unpublishing it and seeing no
			// references.
			fresh := p.cur.Load() == t && t.gen.Load() != last
			if fresh {
				last = t.gen.Load()
				t.runChunks()
			}
			t.refs.Add(-1)
			if fresh {
				idleSince, i = time.Now(), 0
				continue
			}
		}
		if p.closed.Load() {
			return
		}
		if !p.spin || (i%64 == 63 && time.Since(idleSince) > spinFor) {
			w.sleeping.Swap(true) // a full fence before reading cur, as in Run's wait
			if t := p.cur.Load(); (t != nil && t.gen.Load() != last) || p.closed.Load() {
				if !w.sleeping.CompareAndSwap(true, false) {
					<-w.wake // Run or Close claimed us and sends a wake-up
				}
			} else {
				<-w.wake
			}
			idleSince, i = time.Now(), 0
		} else if i%64 == 63 {
			runtime.Gosched()
		}
	}
}

// Close stops the worker goroutines. The pool must not be used afterwards.
// Close is safe to call more than once.
func (p *Pool) Close() {
	p.close.Do(func() {
		p.closed.Store(true)
		for _, w := range p.workers {
			if w.sleeping.CompareAndSwap(true, false) {
				w.wake <- struct{}{}
			}
		}
	})
}
