package server

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// errQueueFull is returned by scheduler.acquire when every slot is busy and
// the waiting line is at its bound.
var errQueueFull = errors.New("server busy: the request queue is full")

// scheduler hands out a fixed number of generation slots first come, first
// served. Requests that find every slot busy wait in a FIFO line of bounded
// length; a waiter whose context ends leaves the line. Slots are numbered so
// that each can keep its own engine session (and so its KV cache) for
// requests that do not name a session.
type scheduler struct {
	mu       sync.Mutex
	free     []int      // free slot numbers (a stack)
	waiting  *list.List // of *waiter, oldest first
	maxQueue int
}

type waiter struct {
	slot  int
	ready chan struct{} // closed when slot is assigned
}

func newScheduler(slots, maxQueue int) *scheduler {
	s := &scheduler{waiting: list.New(), maxQueue: maxQueue}
	for i := slots - 1; i >= 0; i-- {
		s.free = append(s.free, i)
	}
	return s
}

// acquire waits for a free slot and returns its number. It fails with
// errQueueFull at once when the line is full, or with ctx's error when ctx
// ends first. The caller must call release(slot) exactly once.
func (s *scheduler) acquire(ctx context.Context) (int, error) {
	s.mu.Lock()
	if n := len(s.free); n > 0 && s.waiting.Len() == 0 {
		slot := s.free[n-1]
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return slot, nil
	}
	if s.waiting.Len() >= s.maxQueue {
		s.mu.Unlock()
		return 0, errQueueFull
	}
	w := &waiter{ready: make(chan struct{})}
	el := s.waiting.PushBack(w)
	s.mu.Unlock()

	select {
	case <-w.ready:
		return w.slot, nil
	case <-ctx.Done():
		s.mu.Lock()
		select {
		case <-w.ready:
			// Granted while we were giving up: pass the slot on.
			s.mu.Unlock()
			s.release(w.slot)
		default:
			s.waiting.Remove(el)
			s.mu.Unlock()
		}
		return 0, ctx.Err()
	}
}

// release returns slot, handing it straight to the oldest waiter if any.
func (s *scheduler) release(slot int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if front := s.waiting.Front(); front != nil {
		w := s.waiting.Remove(front).(*waiter)
		w.slot = slot
		close(w.ready)
		return
	}
	s.free = append(s.free, slot)
}

// load reports busy slots and waiting requests.
func (s *scheduler) load(slots int) (busy, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slots - len(s.free), s.waiting.Len()
}
