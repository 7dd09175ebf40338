package engine

import (
	"container/list"
	"fmt"
	"sync"
)

// PromptCache shares computed prompts between the sessions of a Model:
// requests that start the same way (one system prompt for every user, a
// regenerated answer, a conversation resumed by another client or on
// another server slot) compute the common start once. It keeps snapshots
// of prompts' keys and values (Snapshotter.Clone), and a session whose own
// cache holds less of a new prompt than some snapshot copies the longest
// common prefix from it (Snapshotter.CopyFrom) and computes only the rest.
// Any prefix of a snapshot is usable: the keys and values of positions
// [0, n) depend on tokens [0, n) only. Backends whose caches do not
// implement Snapshotter get no prompt cache.
//
// Memory is bounded: snapshots are kept least recently used first out
// until the total is under the bound given to WithPromptCache. A snapshot
// whose tokens are a prefix of a newer one's is replaced by it.
//
// Reused prefixes show in Stats.CachedTokens (and SharedCachedTokens). The
// logits are those of a session that kept the prefix itself, which equal a
// fresh prefill's except where the backend's numbers depend on how a
// prompt is cut into steps (llama's f16 cache attends by another path for
// fewer than 64 new tokens, as llama.cpp's does).
type PromptCache struct {
	maxBytes int64

	mu    sync.Mutex
	lru   *list.List // of *promptEntry, most recently used in front
	bytes int64
	stats PromptCacheStats
}

// PromptCacheStats describes a prompt cache's use.
type PromptCacheStats struct {
	Entries         int
	Bytes, MaxBytes int64
	// Hits counts prompts that reused a snapshot, Misses those that found
	// none longer than their session's own cache; HitTokens is the tokens
	// reused.
	Hits, Misses, HitTokens int
}

type promptEntry struct {
	tokens []int32
	kv     Cache     // exactly len(tokens) positions
	logits []float32 // the prediction after tokens
	bytes  int64
	// refs counts sessions copying from kv right now; an evicted entry's
	// kv is closed when the last of them is done.
	refs    int
	evicted bool
}

func newPromptCache(maxBytes int64) *PromptCache {
	return &PromptCache{maxBytes: maxBytes, lru: list.New()}
}

// Stats returns counters and sizes.
func (pc *PromptCache) Stats() PromptCacheStats {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	st := pc.stats
	st.Entries, st.Bytes, st.MaxBytes = pc.lru.Len(), pc.bytes, pc.maxBytes
	return st
}

// restore makes c hold the longest prefix of prompt that a snapshot shares
// with it, if that is longer than have (the prefix c holds already). It
// returns the length c holds now and the logits after it when the
// snapshot is exactly the whole prompt.
func (pc *PromptCache) restore(c Cache, prompt []int32, have int) (int, []float32, error) {
	dst, ok := c.(Snapshotter)
	if !ok {
		return have, nil, nil
	}
	e, n := pc.lookup(prompt, have)
	if e == nil {
		return have, nil, nil
	}
	if !canRewind(e.kv, n) {
		// A sliding-window snapshot keeps only its last positions:
		// another prefix of it is not there any more.
		pc.done(e)
		return have, nil, nil
	}
	from := min(have, c.Len())
	if !canRewind(c, from) {
		from = 0 // c cannot keep its own prefix: copy the whole of it
	}
	err := dst.CopyFrom(e.kv, from, n)
	pc.done(e)
	if err != nil {
		return have, nil, err
	}
	var logits []float32
	if n == len(e.tokens) && n == len(prompt) {
		logits = e.logits
	}
	return n, logits, nil
}

// lookup returns the snapshot sharing the longest prefix with prompt, and
// that length, if it is longer than have; the snapshot is marked used.
// Snapshots are immutable, so the caller copies from it without the lock.
func (pc *PromptCache) lookup(prompt []int32, have int) (*promptEntry, int) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var best *list.Element
	bestN := have
	for el := pc.lru.Front(); el != nil; el = el.Next() {
		e := el.Value.(*promptEntry)
		if len(e.tokens) <= bestN || len(prompt) <= bestN {
			continue
		}
		if n := commonPrefix(e.tokens, prompt); n > bestN {
			best, bestN = el, n
		}
	}
	if best == nil {
		pc.stats.Misses++
		return nil, 0
	}
	pc.lru.MoveToFront(best)
	pc.stats.Hits++
	pc.stats.HitTokens += bestN - have
	e := best.Value.(*promptEntry)
	e.refs++
	return e, bestN
}

// done ends a copy from e that lookup started.
func (pc *PromptCache) done(e *promptEntry) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if e.refs--; e.refs == 0 && e.evicted {
		e.kv.Close()
	}
}

// save keeps a snapshot of the first len(prompt) positions of c, whose
// prediction after them is logits, unless a snapshot covers it already.
func (pc *PromptCache) save(c Cache, prompt []int32, logits []float32) error {
	src, ok := c.(Snapshotter)
	if !ok || len(prompt) == 0 || !canRewind(c, len(prompt)) {
		return nil
	}
	pc.mu.Lock()
	for el := pc.lru.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*promptEntry); len(e.tokens) >= len(prompt) && commonPrefix(e.tokens, prompt) == len(prompt) {
			pc.lru.MoveToFront(el)
			pc.mu.Unlock()
			return nil
		}
	}
	pc.mu.Unlock()

	kv, err := src.Clone(len(prompt)) // outside the lock: copying takes a while
	if err != nil {
		return fmt.Errorf("engine: snapshot of %d prompt tokens: %w", len(prompt), err)
	}
	// The cache's Bytes counts allocated room, so only the snapshot's own
	// size says whether it fits.
	size := kv.Bytes() + int64(4*len(logits)) + int64(4*len(prompt))
	if size > pc.maxBytes {
		kv.Close()
		return nil
	}
	e := &promptEntry{tokens: append([]int32(nil), prompt...), kv: kv, logits: append([]float32(nil), logits...), bytes: size}

	pc.mu.Lock()
	defer pc.mu.Unlock()
	for el := pc.lru.Front(); el != nil; {
		next := el.Next()
		old := el.Value.(*promptEntry)
		switch n := commonPrefix(old.tokens, prompt); {
		case n == len(prompt):
			kv.Close()
			return nil // another session saved it meanwhile
		case n == len(old.tokens):
			pc.remove(el) // superseded: the new snapshot covers it
		}
		el = next
	}
	pc.lru.PushFront(e)
	pc.bytes += e.bytes
	for pc.bytes > pc.maxBytes {
		pc.remove(pc.lru.Back())
	}
	return nil
}

func (pc *PromptCache) remove(el *list.Element) {
	e := pc.lru.Remove(el).(*promptEntry)
	pc.bytes -= e.bytes
	e.evicted = true
	if e.refs == 0 {
		e.kv.Close()
	}
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// canRewind reports whether cache c can still go back to n positions (a
// Rewinder's MinRewind; every other cache can).
func canRewind(c Cache, n int) bool {
	r, ok := c.(Rewinder)
	return !ok || n == 0 || n >= c.Len() || n >= r.MinRewind()
}
