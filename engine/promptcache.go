package engine

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
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
// With Config.PromptCacheDir the snapshots are written to disk as well and
// survive a restart: see promptdisk.go for the files, their checks and
// their bound. Snapshots read back from disk show in Stats.CachedTokens
// like any other.
//
// A model with a draft model (Config.Draft) whose own Model has no prompt
// cache keeps the draft's snapshots here too, under the same bound, marked
// as the draft's: a session's draft restores the prefix its target does,
// instead of computing it again. A model drafting with its MTP block
// (Config.MTP) keeps the block's snapshots here the same way, each with the
// model's hidden state at the prompt's last position (see mtp.go). Both
// stay in memory, never on disk, and their lookups are not counted in
// Stats.Hits and Misses (they follow the model's own).
//
// Reused prefixes show in Stats.CachedTokens (and SharedCachedTokens). The
// logits are those of a session that kept the prefix itself, which equal a
// fresh prefill's except where the backend's numbers depend on how a
// prompt is cut into steps (llama's f16 cache attends by another path for
// fewer than 64 new tokens, as llama.cpp's does).
type PromptCache struct {
	maxBytes int64

	mu     sync.Mutex
	lru    *list.List // of *promptEntry, most recently used in front
	bytes  int64
	stats  PromptCacheStats
	closed bool

	disk *diskStore // nil without Config.PromptCacheDir
}

// PromptCacheStats describes a prompt cache's use.
type PromptCacheStats struct {
	// Entries and Bytes count every snapshot, a draft model's and the MTP
	// block's too.
	Entries         int
	Bytes, MaxBytes int64
	// Hits counts the model's prompts that reused a snapshot, Misses those
	// that found none longer than their session's own cache; HitTokens is
	// the tokens reused.
	Hits, Misses, HitTokens int

	// With Config.PromptCacheDir: the files and their bound; DiskHits
	// counts the snapshots read from disk (they count as Hits too) and
	// DiskHitTokens the tokens they gave, DiskWrites the files written,
	// DiskIgnored the files refused (foreign, damaged or gone).
	DiskEntries                         int
	DiskBytes, DiskMaxBytes             int64
	DiskHits, DiskHitTokens, DiskWrites int
	DiskIgnored                         int
}

// snapshotOwner says whose caches a prompt-cache entry holds, so that
// lookups and saves see only entries a cache can copy from (caches of the
// same backend): nil is the prompt cache's own model; a draft model
// (*Model) keeps its entries under itself, and so does the model's MTP
// block (*mtpHead). Only the nil owner's entries go to disk.
type snapshotOwner interface{ ownsSnapshots() }

func (*Model) ownsSnapshots()   {}
func (*mtpHead) ownsSnapshots() {}

type promptEntry struct {
	owner  snapshotOwner // nil: the cache's own model
	tokens []int32
	kv     Cache // exactly len(tokens) positions
	// logits is the row the position after tokens starts from: the
	// prediction after tokens for a model's entries; for the MTP block's,
	// the model's hidden state at the last of tokens, the block's input
	// at the next position.
	logits []float32
	bytes  int64
	// refs counts sessions copying from kv right now (and the disk writer
	// saving it); an evicted entry's kv is closed when the last of them is
	// done.
	refs    int
	evicted bool
}

func newPromptCache(maxBytes int64) *PromptCache {
	return &PromptCache{maxBytes: maxBytes, lru: list.New()}
}

// Stats returns counters and sizes.
func (pc *PromptCache) Stats() PromptCacheStats {
	pc.mu.Lock()
	st := pc.stats
	st.Entries, st.Bytes, st.MaxBytes = pc.lru.Len(), pc.bytes, pc.maxBytes
	pc.mu.Unlock()
	if pc.disk != nil {
		pc.disk.addStats(&st)
	}
	return st
}

// openDisk gives the cache a directory (Config.PromptCacheDir) for the
// caches of b, if they can be saved.
func (pc *PromptCache) openDisk(cfg *Config, b Backend) error {
	if cfg.ModelID == "" {
		return fmt.Errorf("engine: a prompt cache on disk (%s) needs Config.ModelID, the identity of the weights", cfg.PromptCacheDir)
	}
	probe, err := b.NewCache()
	if err != nil {
		return err
	}
	p, ok := probe.(Persister)
	layout, maxLen := "", probe.MaxLen()
	if ok {
		layout = p.Layout()
	}
	probe.Close()
	if !ok {
		cfg.Logger.Warn("prompt cache: the backend's caches cannot be saved; the prompt cache stays in memory", "dir", cfg.PromptCacheDir)
		return nil
	}
	pc.disk, err = openDisk(cfg, layout, b.Vocab(), maxLen, b.NewCache, pc.writeQueued)
	return err
}

// writeQueued is the disk writer: it writes the snapshots save queues,
// until close.
func (pc *PromptCache) writeQueued(d *diskStore) {
	for e := range d.queue {
		if err := d.write(e); err != nil {
			d.log.Warn("prompt cache: writing a snapshot", "dir", d.dir, "tokens", len(e.tokens), "error", err)
		}
		pc.done(e)
	}
}

// close stops the disk writer once the snapshots queued are written.
func (pc *PromptCache) close() {
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return
	}
	pc.closed = true
	pc.mu.Unlock()
	if pc.disk != nil {
		close(pc.disk.queue)
		<-pc.disk.written
	}
}

// restore makes c hold the longest prefix of prompt that a snapshot shares
// with it, if that is longer than have (the prefix c holds already). It
// returns the length c holds now and the snapshot's row (the logits after
// it; see promptEntry) when the snapshot is exactly the whole prompt.
// owner is whose cache c is (see snapshotOwner).
func (pc *PromptCache) restore(ctx context.Context, owner snapshotOwner, c Cache, prompt []int32, have int) (int, []float32, error) {
	dst, ok := c.(Snapshotter)
	if !ok {
		return have, nil, nil
	}
	e, n := pc.lookup(owner, prompt, have)
	fromDisk := false
	if pc.disk != nil && owner == nil {
		if d, dn := pc.fromDisk(ctx, prompt, max(n, have)); d != nil {
			if e != nil {
				pc.done(e)
			}
			e, n, fromDisk = d, dn, true
		}
	}
	if owner == nil {
		pc.count(e != nil, n-have, fromDisk)
	}
	if e == nil {
		return have, nil, nil
	}
	if n = floor(e.kv, n); n <= have {
		// A sliding-window snapshot keeps only its last positions, a
		// recurrent one its state at its checkpoints: that prefix of it
		// is not there.
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
func (pc *PromptCache) lookup(owner snapshotOwner, prompt []int32, have int) (*promptEntry, int) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var best *list.Element
	bestN := have
	for el := pc.lru.Front(); el != nil; el = el.Next() {
		e := el.Value.(*promptEntry)
		if e.owner != owner || len(e.tokens) <= bestN || len(prompt) <= bestN {
			continue
		}
		if n := commonPrefix(e.tokens, prompt); n > bestN {
			best, bestN = el, n
		}
	}
	if best == nil {
		return nil, 0
	}
	pc.lru.MoveToFront(best)
	e := best.Value.(*promptEntry)
	e.refs++
	return e, bestN
}

// count counts a lookup: a hit that gained tokens, or a miss.
func (pc *PromptCache) count(hit bool, gained int, fromDisk bool) {
	pc.mu.Lock()
	if hit {
		pc.stats.Hits++
		pc.stats.HitTokens += gained
	} else {
		pc.stats.Misses++
	}
	pc.mu.Unlock()
	if fromDisk {
		pc.disk.mu.Lock()
		pc.disk.stats.hitTokens += gained
		pc.disk.mu.Unlock()
	}
}

// fromDisk reads the file sharing the longest prefix with prompt, if that
// is longer than atLeast, into a snapshot kept in memory, and returns it
// marked used (done ends the use) with the prefix's length. A file that
// another request is reading is waited for, not read again; a read that
// does not finish in time (diskStore.load) or outlives ctx is a miss.
func (pc *PromptCache) fromDisk(ctx context.Context, prompt []int32, atLeast int) (*promptEntry, int) {
	de, n := pc.disk.best(prompt, atLeast)
	if de == nil {
		return nil, 0
	}
	wait, lead, end := pc.disk.claim(de)
	if !lead {
		timer := time.NewTimer(pc.disk.deadline(de.size))
		defer timer.Stop()
		select {
		case <-wait:
		case <-timer.C:
			return nil, 0
		case <-ctx.Done():
			return nil, 0
		}
		// The other request read it (or failed to).
		if e, m := pc.lookup(nil, prompt, atLeast); e != nil {
			if m >= n {
				return e, m
			}
			pc.done(e)
		}
		return nil, 0
	}
	// Another session may have read it before this one claimed it.
	if e, m := pc.lookup(nil, prompt, atLeast); e != nil {
		if m >= n {
			end()
			return e, m
		}
		pc.done(e)
	}
	kv, logits, err := pc.disk.load(ctx, de, end)
	if err != nil {
		return nil, 0
	}
	e := &promptEntry{tokens: slices.Clone(de.tokens), kv: kv, logits: logits, refs: 1}
	e.bytes = kv.Bytes() + int64(4*len(logits)) + int64(4*len(e.tokens))
	pc.mu.Lock()
	if e.bytes > pc.maxBytes || !pc.insertLocked(e) {
		e.evicted = true // used once, then closed
	}
	pc.mu.Unlock()
	return e, n
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
// prediction after them is logits (the row restore gives back; see
// promptEntry), unless a snapshot covers it already. owner is as for
// restore.
func (pc *PromptCache) save(owner snapshotOwner, c Cache, prompt []int32, logits []float32) error {
	src, ok := c.(Snapshotter)
	if !ok || len(prompt) == 0 || !canRewind(c, len(prompt)) {
		return nil
	}
	pc.mu.Lock()
	for el := pc.lru.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*promptEntry); e.owner == owner && len(e.tokens) >= len(prompt) && commonPrefix(e.tokens, prompt) == len(prompt) {
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
	e := &promptEntry{owner: owner, tokens: append([]int32(nil), prompt...), kv: kv, logits: append([]float32(nil), logits...), bytes: size}

	pc.mu.Lock()
	defer pc.mu.Unlock()
	if !pc.insertLocked(e) {
		kv.Close()
		return nil // another session saved it meanwhile
	}
	if pc.disk != nil && owner == nil && !pc.closed && !e.evicted {
		e.refs++ // the writer's; it calls done
		select {
		case pc.disk.queue <- e:
		default:
			e.refs-- // the writer is behind: this one stays in memory only
		}
	}
	return nil
}

// insertLocked adds e unless a snapshot covers its tokens already (then it
// returns false), replacing the snapshots it covers, and evicts down to the
// bound.
func (pc *PromptCache) insertLocked(e *promptEntry) bool {
	for el := pc.lru.Front(); el != nil; {
		next := el.Next()
		old := el.Value.(*promptEntry)
		if old.owner != e.owner {
			el = next
			continue
		}
		switch n := commonPrefix(old.tokens, e.tokens); {
		case n == len(e.tokens):
			return false
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
	return true
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

// floor is the largest length m <= n that cache c can go back to now (a
// Rewinder's Floor; every other cache goes back anywhere).
func floor(c Cache, n int) int {
	n = min(n, c.Len())
	if r, ok := c.(Rewinder); ok {
		return r.Floor(n)
	}
	return n
}

// canRewind reports whether cache c can still go back to n positions.
func canRewind(c Cache, n int) bool { return n == 0 || n >= c.Len() || floor(c, n) == n }

// checkpoint keeps the state of c at its current length where c keeps
// states only at checkpoints (Checkpointer); other caches need none.
func checkpoint(c Cache) error {
	if cp, ok := c.(Checkpointer); ok {
		return cp.Checkpoint()
	}
	return nil
}
