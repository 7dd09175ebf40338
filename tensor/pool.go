package tensor

import (
	"runtime"
	"sync"
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
// goroutines (each Run waits only for its own work), and Close it when done.
type Pool struct {
	threads int
	work    chan chunk
	wgs     sync.Pool
	close   sync.Once
}

type chunk struct {
	job    Job
	lo, hi int
	wg     *sync.WaitGroup
}

// NewPool starts a pool of the given number of threads; threads <= 0 means
// runtime.NumCPU(). The calling goroutine of Run counts as one of the
// threads, so NewPool(1) starts no goroutine at all.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &Pool{threads: threads, work: make(chan chunk, 4*threads)}
	p.wgs.New = func() any { return new(sync.WaitGroup) }
	for i := 1; i < threads; i++ {
		go p.worker()
	}
	return p
}

// Threads reports how many threads share the work of one Run.
func (p *Pool) Threads() int { return p.threads }

func (p *Pool) worker() {
	for c := range p.work {
		c.job.Do(c.lo, c.hi)
		c.wg.Done()
	}
}

// Run calls job.Do over [0, n) split into at most Threads() ranges of
// roughly equal size, each a multiple of grain (except the last), and
// returns when all of them are done. grain <= 0 means 1. Small n runs inline.
func (p *Pool) Run(n, grain int, job Job) {
	if n <= 0 {
		return
	}
	if grain <= 0 {
		grain = 1
	}
	units := (n + grain - 1) / grain
	parts := min(p.threads, units)
	if parts <= 1 {
		job.Do(0, n)
		return
	}
	wg := p.wgs.Get().(*sync.WaitGroup)
	per := (units + parts - 1) / parts
	lo := 0
	var first [2]int
	for i := 0; lo < n; i++ {
		hi := min(n, lo+per*grain)
		if i == 0 {
			first = [2]int{lo, hi}
		} else {
			wg.Add(1)
			p.work <- chunk{job, lo, hi, wg}
		}
		lo = hi
	}
	job.Do(first[0], first[1])
	wg.Wait()
	p.wgs.Put(wg)
}

// Close stops the worker goroutines. The pool must not be used afterwards.
// Close is safe to call more than once.
func (p *Pool) Close() {
	p.close.Do(func() { close(p.work) })
}
