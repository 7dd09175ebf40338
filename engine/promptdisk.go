package engine

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The prompt cache on disk (Config.PromptCacheDir) keeps every snapshot the
// prompt cache takes in a file as well, so that a restarted process finds
// the prompts it had computed: a long system prompt, a coding agent's
// conversation, a document asked about again. Memory stays the working
// set; the disk is the larger, slower tier behind it.
//
//   - Files live in a subdirectory named by a hash of the model's identity
//     (Config.ModelID: the weights, not the file's name) and the caches'
//     layout (Persister.Layout: element type, layers, widths, rings), so
//     that each model and KV type has its own and a changed -kv or -ctx
//     does not read the old ones. Each file holds one snapshot: its tokens,
//     the logits after them and the cache's positions, under a header that
//     repeats the identity and layout, with a CRC-32C of everything.
//   - A snapshot is written by one background goroutine after it is taken
//     (never on the path to the first token), to a temporary name that is
//     synced and then renamed, so a crash leaves the old file or the new
//     one, never half of one. Model.Close waits for the writes queued.
//   - At start the directory is indexed from the files' headers. A lookup
//     that finds a longer prefix on disk than in memory reads that file
//     into a new cache, checking the checksum, the identity, the layout,
//     the tokens and the exact length as it reads; only then is it used
//     (and kept in memory). A file that fails any check is never used and
//     is logged: a foreign one (another model, layout or format) is left
//     alone, a damaged one of ours is removed.
//   - The files are bounded in bytes (Config.PromptCacheDiskBytes), least
//     recently used out first; use is remembered in the files' modification
//     times, so the order survives restarts. A file whose tokens are a
//     prefix of a newer one's is removed, as in memory.
//   - A prompt is not written when a file holds 7/8 of it already (a
//     sibling: another question after the same long system prompt), so
//     that a stream of such requests does not write the shared part again
//     and again; a prompt that extends a file (a conversation's next turn)
//     is written and replaces it.
//   - A file is read only when the prefix it gives is at least 1/32 of its
//     length: reading a position costs far less than computing it (about
//     0.1 ms against several on a CPU), but not nothing.
//
// Several processes may share a directory (replicas on one volume): each
// indexes what it finds at start and what it writes itself, a file another
// removed is a miss, and the bound is each one's own.

// File format, little-endian:
//
//	"SMOLGOPC"      magic
//	uint32          diskVersion
//	uint32          header length H (at most maxDiskHeader)
//	H bytes         diskHeader as JSON
//	tokens × int32  the snapshot's tokens
//	logits × f32    the prediction after them (0 or the vocabulary)
//	...             the cache's positions (Persister.SaveTo)
//	uint32          CRC-32C (Castagnoli) of everything above
const (
	diskMagic     = "SMOLGOPC"
	diskVersion   = 1
	maxDiskHeader = 64 << 10
	diskExt       = ".kvc"
	// diskWriteQueue bounds the snapshots waiting to be written; more are
	// kept in memory only.
	diskWriteQueue = 8
	// staleTemp is the age after which a temporary file left by a crash is
	// removed at start.
	staleTemp = 10 * time.Minute
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// diskHeader says what a file holds.
type diskHeader struct {
	Model  string `json:"model"`
	Layout string `json:"layout"`
	Tokens int    `json:"tokens"`
	Logits int    `json:"logits"`
}

// diskStore is a prompt cache's directory.
type diskStore struct {
	dir      string // the model's subdirectory
	model    string
	layout   string
	maxBytes int64
	vocab    int
	maxLen   int
	log      *slog.Logger
	newCache func() (Cache, error)

	mu      sync.Mutex
	entries map[string]*diskEntry // by file name
	bytes   int64
	stats   diskStats

	// reading holds the files being read (by name), each closed when its
	// read ends: a second request for the same file waits for it instead
	// of reading it again. No lock is held across the I/O.
	reading map[string]chan struct{}
	doomed  []string // files to remove once the lock is released (removeLocked)
	// readTimeout, when set, replaces readDeadline (for tests).
	readTimeout time.Duration

	queue   chan *promptEntry
	written chan struct{} // closed when the writer has stopped
}

type diskStats struct {
	hits, hitTokens, writes, ignored int
}

// diskEntry is a file in the index.
type diskEntry struct {
	name   string
	tokens []int32
	size   int64
	used   time.Time
}

// diskSubdir is the subdirectory of model and layout.
func diskSubdir(model, layout string) string {
	h := sha256.Sum256([]byte(model + "\x00" + layout))
	return hex.EncodeToString(h[:8])
}

// diskName is the file of a snapshot of tokens.
func diskName(tokens []int32) string {
	h := sha256.New()
	binary.Write(h, binary.LittleEndian, tokens)
	return hex.EncodeToString(h.Sum(nil)[:16]) + diskExt
}

// openDisk makes (if need be) and indexes the directory of a model whose
// caches have the given layout, and starts its writer; write is what the
// writer does with each snapshot queued.
func openDisk(cfg *Config, layout string, vocab, maxLen int, newCache func() (Cache, error), write func(*diskStore)) (*diskStore, error) {
	d := &diskStore{
		dir:   filepath.Join(cfg.PromptCacheDir, diskSubdir(cfg.ModelID, layout)),
		model: cfg.ModelID, layout: layout, maxBytes: cfg.PromptCacheDiskBytes,
		vocab: vocab, maxLen: maxLen, log: cfg.Logger, newCache: newCache,
		entries: make(map[string]*diskEntry), reading: make(map[string]chan struct{}),
		queue: make(chan *promptEntry, diskWriteQueue), written: make(chan struct{}),
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: prompt cache directory: %w", err)
	}
	if err := d.scan(); err != nil {
		return nil, fmt.Errorf("engine: prompt cache directory: %w", err)
	}
	d.mu.Lock()
	d.evictLocked()
	d.mu.Unlock()
	d.removeDoomed()
	go func() {
		defer close(d.written)
		write(d)
	}()
	return d, nil
}

// scan indexes the directory from the files' headers.
func (d *diskStore) scan() error {
	list, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	var junk struct {
		n, removed int
		first      string
		reason     error
	}
	for _, de := range list {
		name := de.Name()
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue // a FIFO or a device is never opened
		}
		switch {
		case strings.HasSuffix(name, ".tmp"):
			if time.Since(info.ModTime()) > staleTemp {
				os.Remove(filepath.Join(d.dir, name)) // a write a crash cut short
			}
			continue
		case !strings.HasSuffix(name, diskExt):
			continue
		}
		tokens, err := d.readIndex(name)
		if err != nil {
			d.stats.ignored++
			path := filepath.Join(d.dir, name)
			// This directory is this model's and layout's (diskSubdir):
			// a file here that another build wrote (errForeign) is left
			// alone, anything else unreadable is junk or damage, removed.
			if !errors.Is(err, errForeign) && !errors.Is(err, errNotRegular) && os.Remove(path) == nil {
				junk.removed++
			}
			if junk.n++; junk.n == 1 {
				junk.first, junk.reason = path, err
			}
			d.log.Debug("prompt cache: ignoring a file", "file", path, "reason", err)
			continue
		}
		d.entries[name] = &diskEntry{name: name, tokens: tokens, size: info.Size(), used: info.ModTime()}
		d.bytes += info.Size()
	}
	if junk.n > 0 {
		// One line, however many: a directory of 20,000 junk files must not
		// write 20,000 lines at every start.
		d.log.Warn("prompt cache: ignoring a file it cannot use", "dir", d.dir, "files", junk.n, "removed", junk.removed,
			"first", junk.first, "reason", junk.reason)
	}
	if n := len(d.entries); n > 0 {
		d.log.Info("prompt cache: snapshots on disk", "dir", d.dir, "files", n, "bytes", d.bytes)
	}
	return nil
}

// errForeign marks a file that belongs to another model, layout or
// format: left alone, not removed.
var errForeign = errors.New("written for another model, cache layout or format")

// readHeader reads a file's magic, header and tokens, checking them
// against this store.
func (d *diskStore) readHeader(r io.Reader) (diskHeader, []int32, error) {
	var fixed [16]byte
	var h diskHeader
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return h, nil, fmt.Errorf("truncated header: %w", err)
	}
	if string(fixed[:8]) != diskMagic {
		return h, nil, errors.New("not a prompt-cache file")
	}
	if v := binary.LittleEndian.Uint32(fixed[8:]); v != diskVersion {
		return h, nil, fmt.Errorf("format version %d, this build reads %d: %w", v, diskVersion, errForeign)
	}
	hl := binary.LittleEndian.Uint32(fixed[12:])
	if hl > maxDiskHeader {
		return h, nil, fmt.Errorf("a header of %d bytes", hl)
	}
	raw := make([]byte, hl)
	if _, err := io.ReadFull(r, raw); err != nil {
		return h, nil, fmt.Errorf("truncated header: %w", err)
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, nil, fmt.Errorf("header: %w", err)
	}
	switch {
	case h.Model != d.model:
		return h, nil, fmt.Errorf("model %.16s…, this is %.16s…: %w", h.Model, d.model, errForeign)
	case h.Layout != d.layout:
		return h, nil, fmt.Errorf("cache layout %q, this is %q: %w", h.Layout, d.layout, errForeign)
	case h.Tokens < 1 || h.Tokens > d.maxLen:
		return h, nil, fmt.Errorf("%d tokens, the context is %d", h.Tokens, d.maxLen)
	case h.Logits != 0 && h.Logits != d.vocab:
		return h, nil, fmt.Errorf("%d logits for a vocabulary of %d", h.Logits, d.vocab)
	}
	tokens := make([]int32, h.Tokens)
	if err := binary.Read(r, binary.LittleEndian, tokens); err != nil {
		return h, nil, fmt.Errorf("truncated tokens: %w", err)
	}
	for i, t := range tokens {
		if int(t) >= d.vocab { // a negative id is an image row's placeholder
			return h, nil, fmt.Errorf("token %d at %d is outside the vocabulary", t, i)
		}
	}
	return h, tokens, nil
}

// errNotRegular marks a name in the directory that is not a regular file
// (a FIFO, a device, a directory): never read, and left alone.
var errNotRegular = errors.New("not a regular file")

// openRegular opens a snapshot file for reading, refusing anything but a
// regular file without waiting on it (openNoWait).
func openRegular(path string) (*os.File, error) {
	f, err := openNoWait(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%w (%v)", errNotRegular, info.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readIndex reads the tokens of a file, for the index.
func (d *diskStore) readIndex(name string) ([]int32, error) {
	f, err := openRegular(filepath.Join(d.dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	_, tokens, err := d.readHeader(bufio.NewReader(f))
	return tokens, err
}

// best returns the indexed file sharing the longest prefix with prompt, if
// that is longer than atLeast and worth reading (1/32 of the file).
func (d *diskStore) best(prompt []int32, atLeast int) (*diskEntry, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var best *diskEntry
	bestN := atLeast
	for _, e := range d.entries {
		if len(e.tokens) <= bestN {
			continue
		}
		if n := commonPrefix(e.tokens, prompt); n > bestN && 32*n >= len(e.tokens) {
			best, bestN = e, n
		}
	}
	return best, bestN
}

// claim marks e's file as being read by the caller (lead, which must call
// the returned end when its read is over) or returns the channel that
// closes when the read already under way ends.
func (d *diskStore) claim(e *diskEntry) (wait <-chan struct{}, lead bool, end func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ch, ok := d.reading[e.name]; ok {
		return ch, false, nil
	}
	ch := make(chan struct{})
	d.reading[e.name] = ch
	return ch, true, func() {
		d.mu.Lock()
		delete(d.reading, e.name)
		d.mu.Unlock()
		close(ch)
	}
}

// readDeadline is how long a read of a file of size bytes may take: a
// second, and a second per 32 MiB (a slow disk reads more than that). A
// read that takes longer (a stalled network volume) is given up: the
// request computes its prompt, the file leaves the index, and the read
// finishes, or not, on its own.
func readDeadline(size int64) time.Duration {
	return time.Second + time.Duration(size>>25)*time.Second
}

// deadline is readDeadline, or readTimeout when set.
func (d *diskStore) deadline(size int64) time.Duration {
	if d.readTimeout > 0 {
		return d.readTimeout
	}
	return readDeadline(size)
}

// load reads e's file into a new cache, checking everything, within ctx
// and readDeadline; on any failure nothing is returned and the file is
// dropped from the index (and removed unless it is foreign or not a
// regular file). end is called when the read is over, which may be after
// load has given up on it.
func (d *diskStore) load(ctx context.Context, e *diskEntry, end func()) (Cache, []float32, error) {
	type result struct {
		kv     Cache
		logits []float32
		err    error
	}
	done := make(chan result, 1)
	var gaveUp atomic.Bool
	go func() {
		defer end()
		kv, logits, err := d.read(e)
		if gaveUp.Load() && kv != nil {
			kv.Close() // nobody waits for it any more
			return
		}
		done <- result{kv, logits, err}
	}()
	limit := d.deadline(e.size)
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var r result
	abandoned := false
	select {
	case r = <-done:
	case <-timer.C:
		r.err, abandoned = fmt.Errorf("reading it took more than %v", limit), true
	case <-ctx.Done():
		r.err, abandoned = ctx.Err(), true
	}
	if abandoned {
		gaveUp.Store(true)
		select {
		case late := <-done: // it finished as we gave up
			if late.kv != nil {
				late.kv.Close()
			}
		default:
		}
	}
	kv, logits, err := r.kv, r.logits, r.err
	if abandoned && ctx.Err() != nil {
		return nil, nil, err // the request ended: the file is not to blame
	}
	if err != nil {
		d.mu.Lock()
		if d.entries[e.name] == e {
			delete(d.entries, e.name)
			d.bytes -= e.size
		}
		d.stats.ignored++
		d.mu.Unlock()
		path := filepath.Join(d.dir, e.name)
		if errors.Is(err, fs.ErrNotExist) {
			d.log.Debug("prompt cache: file gone", "file", path)
		} else {
			if !errors.Is(err, errForeign) && !errors.Is(err, errNotRegular) && !gaveUp.Load() {
				os.Remove(path)
			}
			d.log.Warn("prompt cache: ignoring a file", "file", path, "reason", err)
		}
		return nil, nil, err
	}
	now := time.Now()
	os.Chtimes(filepath.Join(d.dir, e.name), now, now) // remembered across restarts
	d.mu.Lock()
	e.used = now
	d.stats.hits++
	d.mu.Unlock()
	return kv, logits, nil
}

func (d *diskStore) read(e *diskEntry) (Cache, []float32, error) {
	f, err := openRegular(filepath.Join(d.dir, e.name))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	crc := crc32.New(castagnoli)
	br := bufio.NewReaderSize(f, 1<<20)
	r := io.TeeReader(br, crc)
	h, tokens, err := d.readHeader(r)
	if err != nil {
		return nil, nil, err
	}
	if !slices.Equal(tokens, e.tokens) {
		return nil, nil, errors.New("the tokens changed since the file was indexed")
	}
	logits := make([]float32, h.Logits)
	if err := binary.Read(r, binary.LittleEndian, logits); err != nil {
		return nil, nil, fmt.Errorf("truncated logits: %w", err)
	}
	c, err := d.newCache()
	if err != nil {
		return nil, nil, err
	}
	if err := d.readPositions(c, br, r, crc, len(tokens)); err != nil {
		c.Close()
		return nil, nil, err
	}
	for _, l := range logits {
		if math.IsNaN(float64(l)) {
			c.Close()
			return nil, nil, errors.New("NaN logits")
		}
	}
	return c, logits, nil
}

// readPositions reads the cache's positions from r (which feeds crc), then
// the checksum from br, which must end there.
func (d *diskStore) readPositions(c Cache, br *bufio.Reader, r io.Reader, crc hash.Hash32, n int) error {
	p, ok := c.(Persister)
	if !ok {
		return errors.New("the backend's caches cannot be loaded")
	}
	if err := p.LoadFrom(r, n); err != nil {
		return fmt.Errorf("positions: %w", err)
	}
	var sum [4]byte
	if _, err := io.ReadFull(br, sum[:]); err != nil {
		return fmt.Errorf("truncated checksum: %w", err)
	}
	if got, want := crc.Sum32(), binary.LittleEndian.Uint32(sum[:]); got != want {
		return fmt.Errorf("checksum %08x, the file says %08x: damaged", got, want)
	}
	if n, _ := br.Read(sum[:1]); n != 0 {
		return errors.New("bytes after the checksum")
	}
	return nil
}

// write stores e in a new file (temporary name, synced, renamed), indexes
// it, removes the files it supersedes and evicts down to the bound.
func (d *diskStore) write(e *promptEntry) error {
	name := diskName(e.tokens)
	d.mu.Lock()
	for _, old := range d.entries {
		// A file that holds most of this prompt already (a sibling: the
		// same long system prompt or document, another question) gives a
		// restarted server nearly as much: writing the whole prompt again
		// would cost its full size for a few tokens. A longer prompt that
		// extends a file is written, and replaces it.
		if n := commonPrefix(old.tokens, e.tokens); n < len(old.tokens) || n == len(e.tokens) {
			if 8*n >= 7*len(e.tokens) {
				old.used = time.Now()
				d.mu.Unlock()
				return nil
			}
		}
	}
	d.mu.Unlock()
	p, ok := e.kv.(Persister)
	if !ok {
		return errors.New("the backend's caches cannot be saved")
	}
	f, err := os.CreateTemp(d.dir, name+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(f, 1<<20)
	w := io.MultiWriter(bw, crc)
	hdr, _ := json.Marshal(diskHeader{Model: d.model, Layout: d.layout, Tokens: len(e.tokens), Logits: len(e.logits)})
	var fixed [16]byte
	copy(fixed[:], diskMagic)
	binary.LittleEndian.PutUint32(fixed[8:], diskVersion)
	binary.LittleEndian.PutUint32(fixed[12:], uint32(len(hdr)))
	for _, part := range []any{fixed[:], hdr, e.tokens, e.logits} {
		if err = binary.Write(w, binary.LittleEndian, part); err != nil {
			return err
		}
	}
	if err = p.SaveTo(w); err != nil {
		return err
	}
	if err = binary.Write(bw, binary.LittleEndian, crc.Sum32()); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if info.Size() > d.maxBytes {
		os.Remove(tmp)
		return nil // larger than the whole bound: memory only
	}
	if err = os.Rename(tmp, filepath.Join(d.dir, name)); err != nil {
		return err
	}
	defer d.removeDoomed()
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.entries[name]; ok {
		d.bytes -= old.size
	}
	d.entries[name] = &diskEntry{name: name, tokens: slices.Clone(e.tokens), size: info.Size(), used: time.Now()}
	d.bytes += info.Size()
	d.stats.writes++
	for n, old := range d.entries {
		if n != name && len(old.tokens) < len(e.tokens) && commonPrefix(old.tokens, e.tokens) == len(old.tokens) {
			d.removeLocked(old) // superseded
		}
	}
	d.evictLocked()
	return nil
}

// evictLocked removes least recently used files until the bound holds.
func (d *diskStore) evictLocked() {
	for d.bytes > d.maxBytes {
		var lru *diskEntry
		for _, e := range d.entries {
			if lru == nil || e.used.Before(lru.used) {
				lru = e
			}
		}
		if lru == nil {
			return
		}
		d.removeLocked(lru)
	}
}

// removeLocked drops e from the index; its file is removed by
// removeDoomed, after the lock is released (no I/O under the lock: a
// stalled volume must not stop every lookup).
func (d *diskStore) removeLocked(e *diskEntry) {
	delete(d.entries, e.name)
	d.bytes -= e.size
	d.doomed = append(d.doomed, e.name)
}

// removeDoomed removes the files removeLocked dropped. Call it without
// the lock.
func (d *diskStore) removeDoomed() {
	d.mu.Lock()
	names := d.doomed
	d.doomed = nil
	d.mu.Unlock()
	for _, name := range names {
		if err := os.Remove(filepath.Join(d.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("prompt cache: removing a file", "file", name, "error", err)
		}
	}
}

// addStats adds the store's counters to st.
func (d *diskStore) addStats(st *PromptCacheStats) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st.DiskEntries, st.DiskBytes, st.DiskMaxBytes = len(d.entries), d.bytes, d.maxBytes
	st.DiskHits, st.DiskHitTokens, st.DiskWrites, st.DiskIgnored = d.stats.hits, d.stats.hitTokens, d.stats.writes, d.stats.ignored
}
