package tensor

import (
	"sync/atomic"
	"testing"
)

type jobFunc func(lo, hi int)

func (f jobFunc) Do(lo, hi int) { f(lo, hi) }

type faultJob struct{ at int }

func (j faultJob) Do(lo, hi int) {
	if lo <= j.at && j.at < hi {
		var p *[1 << 20]byte
		_ = p[0] // a runtime fault, as a read of a truncated mapped file is with SetPanicOnFault
	}
}

// TestPoolFaultReachesRun: a fault in a chunk that a worker runs comes back
// as a panic on Run's goroutine (which the engine turns into an error),
// instead of killing the process; the pool keeps working.
func TestPoolFaultReachesRun(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	for _, at := range []int{0, 999, 500} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("fault at %d: Run returned normally", at)
				}
			}()
			p.Run(1000, 1, faultJob{at: at})
		}()
	}
	var n atomic.Int64
	p.Run(1000, 1, jobFunc(func(lo, hi int) { n.Add(int64(hi - lo)) }))
	if n.Load() != 1000 {
		t.Fatalf("after the faults the pool ran %d of 1000", n.Load())
	}
}
