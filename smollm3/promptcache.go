package smollm3

import (
	"container/list"
	"sync"

	"github.com/smolgo/smolgo/llama"
)

// PromptCache shares computed prompts between the sessions of a Model:
// requests that start the same way (one system prompt for every user, a
// regenerated answer, a conversation resumed by another client or on
// another server slot) compute the common start once. It keeps snapshots
// of prompts' keys and values (llama.Cache.Clone), and a session whose
// own cache holds less of a new prompt than some snapshot copies the
// longest common prefix from it (llama.Cache.CopyFrom) and computes only
// the rest. Any prefix of a snapshot is usable: the keys and values of
// positions [0, n) depend on tokens [0, n) only.
//
// Memory is bounded: snapshots are kept least recently used first out
// until the total is under the bound given to WithPromptCache. A snapshot
// whose tokens are a prefix of a newer one's is replaced by it.
//
// Reused prefixes show in Stats.CachedTokens (and SharedCachedTokens). The
// logits are those of a session that kept the prefix itself, which equal a
// fresh prefill's except where batching changes the rounding: with an f16
// or q8_0 cache a remainder of fewer than 64 tokens attends by the f16
// online path where a fresh prefill of 64 or more takes the f32 tiled one
// (as in llama.cpp, whose prompt cache behaves the same); an f32 cache
// always takes the tiled path and gives identical logits.
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
	kv     *llama.Cache // exactly len(tokens) positions
	logits []float32    // the prediction after tokens
	bytes  int64
}

// newPromptCache returns a cache bounded by maxBytes of snapshots.
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
		n := commonPrefix(e.tokens, prompt)
		if n > bestN {
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
	return best.Value.(*promptEntry), bestN
}

// save keeps a snapshot of the first len(prompt) positions of c, whose
// prediction after them is logits, unless a snapshot covers it already.
// kvBytes is the snapshot's size (llama.Config.KVBytes).
func (pc *PromptCache) save(prompt []int32, c *llama.Cache, kvBytes int64, logits []float32) error {
	size := kvBytes + int64(4*len(logits)) + int64(4*len(prompt))
	if size > pc.maxBytes {
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

	kv, err := c.Clone(len(prompt)) // outside the lock: copying takes a while
	if err != nil {
		return err
	}
	e := &promptEntry{tokens: append([]int32(nil), prompt...), kv: kv, logits: append([]float32(nil), logits...), bytes: size}

	pc.mu.Lock()
	defer pc.mu.Unlock()
	for el := pc.lru.Front(); el != nil; {
		next := el.Next()
		old := el.Value.(*promptEntry)
		switch n := commonPrefix(old.tokens, prompt); {
		case n == len(prompt):
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
	pc.bytes -= pc.lru.Remove(el).(*promptEntry).bytes
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
