package server

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// errQueueFull is returned by slotQueue.acquire when every slot is busy and
// the waiting line is at its bound.
var errQueueFull = errors.New("server busy: the request queue is full")

// slotQueue hands out a fixed number of generation slots first come, first
// served. Requests that find every slot busy wait in a FIFO line of bounded
// length; a waiter whose context ends leaves the line. Slots are numbered so
// that each can keep its own engine session (and so its KV cache) for
// requests that do not name a session.
type slotQueue struct {
	mu       sync.Mutex
	free     []int      // free slot numbers (a stack)
	waiting  *list.List // of *waiter, oldest first
	maxQueue int
	// affinity remembers the slot that last served each affinity key
	// (prompt_cache_key, user), most recent last, so that a
	// conversation's next turn finds its own KV cache when that slot is
	// free.
	affinity map[string]int
	order    []string
	used     []int64 // per slot: when a keyed request last took it
	clock    int64
}

// maxAffinity bounds the affinity keys remembered.
const maxAffinity = 1024

type waiter struct {
	slot  int
	ready chan struct{} // closed when slot is assigned
}

func newSlotQueue(slots, maxQueue int) *slotQueue {
	s := &slotQueue{waiting: list.New(), maxQueue: maxQueue, affinity: make(map[string]int), used: make([]int64, slots)}
	for i := slots - 1; i >= 0; i-- {
		s.free = append(s.free, i)
	}
	return s
}

// acquire waits for a free slot and returns its number. It fails with
// errQueueFull at once when the line is full, or with ctx's error when ctx
// ends first. The caller must call release(slot) exactly once.
func (s *slotQueue) acquire(ctx context.Context) (int, error) {
	return s.acquireFor(ctx, "")
}

// acquireFor is acquire with an affinity key (prompt_cache_key or user; ""
// for none): when the slot that last served the key is free, the request
// gets that one, whose session holds the conversation's KV cache; a key
// seen for the first time gets the free slot that keyed requests used
// least recently, so that it displaces the oldest conversation. It is a
// hint: a request that has to wait takes the first slot freed, first come,
// first served. A request without a key takes the slot freed last (a
// single client's turns then stay on one slot).
func (s *slotQueue) acquireFor(ctx context.Context, key string) (int, error) {
	s.mu.Lock()
	if n := len(s.free); n > 0 && s.waiting.Len() == 0 {
		i := n - 1
		if key != "" {
			want, known := s.affinity[key]
			for j, f := range s.free {
				if known && f == want {
					i = j
					break
				}
				if !known && s.used[f] < s.used[s.free[i]] {
					i = j
				}
			}
		}
		slot := s.free[i]
		s.free = append(s.free[:i], s.free[i+1:]...)
		s.rememberLocked(key, slot)
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
		s.mu.Lock()
		s.rememberLocked(key, w.slot)
		s.mu.Unlock()
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

// rememberLocked records that slot serves key.
func (s *slotQueue) rememberLocked(key string, slot int) {
	if key == "" {
		return
	}
	s.clock++
	s.used[slot] = s.clock
	if _, ok := s.affinity[key]; !ok {
		s.order = append(s.order, key)
		if len(s.order) > maxAffinity {
			delete(s.affinity, s.order[0])
			s.order = s.order[1:]
		}
	}
	s.affinity[key] = slot
}

// release returns slot, handing it straight to the oldest waiter if any.
func (s *slotQueue) release(slot int) {
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
func (s *slotQueue) load(slots int) (busy, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slots - len(s.free), s.waiting.Len()
}
