package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer collects log lines from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// diskModel opens a fake model whose prompt cache keeps its snapshots in
// dir, logging to log; close it to flush the writes.
func diskModel(t *testing.T, dir, id string, f *fakeBackend, log *lockedBuffer, opts ...Option) *Model {
	t.Helper()
	if log == nil {
		log = &lockedBuffer{}
	}
	cfg, err := NewConfig(append([]Option{WithPromptCache(1 << 20), WithPromptCacheDir(dir, 1<<20), WithModelID(id),
		WithLogger(slog.New(slog.NewTextHandler(log, nil)))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(f, fakeFormat{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

var diskSystem = Message{Role: "system", Content: strings.Repeat("You are kind and brief. ", 12)}

// ask runs one conversation turn in a new session.
func ask(t *testing.T, m *Model, question string) result {
	t.Helper()
	r := collect(m.NewSession(), context.Background(), []Message{diskSystem, {Role: "user", Content: question}}, GenerateOptions{})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r
}

// kvcFiles lists the snapshot files under dir.
func kvcFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*"+diskExt))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A restarted model (a new Model over the same directory and weights)
// finds the prompts the last one computed: the first request reuses them,
// says so in CachedTokens, and answers as without the cache.
func TestPromptCacheDiskRestart(t *testing.T) {
	dir := t.TempDir()
	m := diskModel(t, dir, "weights-1", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, nil)
	first := ask(t, m, "one")
	if first.stats.CachedTokens != 0 {
		t.Fatalf("cold: %+v", first.stats)
	}
	m.Close() // writes what is queued
	if st := m.PromptCache().Stats(); st.DiskWrites != 1 || st.DiskEntries != 1 || st.DiskBytes == 0 {
		t.Fatalf("after the first model: %+v", st)
	}

	m2 := diskModel(t, dir, "weights-1", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, nil)
	if st := m2.PromptCache().Stats(); st.DiskEntries != 1 || st.Entries != 0 {
		t.Fatalf("restarted: %+v, want one file indexed and nothing in memory", st)
	}
	again := ask(t, m2, "two")
	alone := collect(testSession(t, &fakeBackend{ctxLen: 4000, answer: historyAnswer}), context.Background(),
		[]Message{diskSystem, {Role: "user", Content: "two"}}, GenerateOptions{})
	if again.content != alone.content {
		t.Errorf("answer after a restart %q, without a cache %q", again.content, alone.content)
	}
	st := m2.PromptCache().Stats()
	if again.stats.CachedTokens < 250 || st.DiskHits != 1 || st.DiskHitTokens != again.stats.CachedTokens {
		t.Fatalf("after a restart: %+v, prompt cache %+v: want the system prompt read from disk", again.stats, st)
	}
	// Now in memory: the next one does not read the disk again.
	ask(t, m2, "three")
	if st := m2.PromptCache().Stats(); st.DiskHits != 1 || st.Hits != 2 {
		t.Errorf("third request: %+v", st)
	}
}

// A damaged or foreign file is never used: each kind is refused with a log
// line, the request computes its prompt as if there were no file, and a
// damaged or junk file in this model's directory is removed while one
// another build wrote (another model, layout or format version) is left
// alone.
func TestPromptCacheDiskRefuses(t *testing.T) {
	// One good file to spoil.
	src := t.TempDir()
	m := diskModel(t, src, "weights-1", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, nil)
	ask(t, m, "one")
	m.Close()
	files := kvcFiles(t, src)
	if len(files) != 1 {
		t.Fatalf("%d files", len(files))
	}
	good, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	sub, name := filepath.Base(filepath.Dir(files[0])), filepath.Base(files[0])
	// foreign rewrites the header's JSON field old to new (same length).
	foreign := func(old, new string) []byte {
		if len(old) != len(new) || !bytes.Contains(good, []byte(old)) {
			t.Fatalf("cannot replace %q", old)
		}
		return bytes.Replace(bytes.Clone(good), []byte(old), []byte(new), 1)
	}
	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x40
		return b
	}
	hugeHeader := bytes.Clone(good)
	binary.LittleEndian.PutUint32(hugeHeader[12:], 1<<31)
	tests := []struct {
		name    string
		data    []byte
		removed bool // a damaged file of ours is removed
		reason  string
	}{
		{"corrupt payload", flip(len(good) - 40), true, "checksum"},
		{"corrupt checksum", flip(len(good) - 1), true, "checksum"},
		{"truncated in the positions", good[:len(good)-60], true, "positions"},
		{"truncated checksum", good[:len(good)-2], true, "truncated checksum"},
		{"trailing bytes", append(bytes.Clone(good), 0), true, "after the checksum"},
		{"truncated header", good[:20], true, "truncated header"},
		{"empty", nil, true, "truncated header"},
		{"another model", foreign(`"model":"weights-1"`, `"model":"weights-2"`), false, "another model"},
		{"another layout", foreign(`"layout":"fake/1"`, `"layout":"fake/2"`), false, "cache layout"},
		{"another format version", foreign("SMOLGOPC\x01", "SMOLGOPC\x02"), false, "format version"},
		{"not ours at all", []byte("GGUF and other things"), true, "not a prompt-cache file"},
		{"a header claiming 2 GiB", hugeHeader, true, "header of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, sub, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			log := &lockedBuffer{}
			m := diskModel(t, dir, "weights-1", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, log)
			r := ask(t, m, "two")
			st := m.PromptCache().Stats()
			if r.stats.CachedTokens != 0 || st.DiskHits != 0 || st.DiskIgnored != 1 {
				t.Errorf("used: %+v, prompt cache %+v", r.stats, st)
			}
			if !strings.Contains(log.String(), "ignoring a file") || !strings.Contains(log.String(), tc.reason) {
				t.Errorf("log %q does not say %q", log.String(), tc.reason)
			}
			m.Close()
			if _, err := os.Stat(path); os.IsNotExist(err) != tc.removed {
				t.Errorf("file removed: %v, want %v", os.IsNotExist(err), tc.removed)
			}
		})
	}
}

// Files are bounded in bytes, least recently used out first; a snapshot
// that extends another replaces its file; leftovers of a crashed write are
// cleared.
func TestPromptCacheDiskBound(t *testing.T) {
	dir := t.TempDir()
	f := &fakeBackend{ctxLen: 4000, answer: historyAnswer}
	m := diskModel(t, dir, "w", f, nil)
	ask(t, m, "one")
	m.Close()
	size := m.PromptCache().Stats().DiskBytes
	// Room for two files of about that size.
	m = diskModel(t, dir, "w", f, nil, WithPromptCacheDir(dir, 2*size+size/2))
	for _, q := range []string{"two", "three", "four"} {
		r := collect(m.NewSession(), context.Background(), []Message{{Role: "user", Content: strings.Repeat(q, 60)}}, GenerateOptions{})
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	m.Close()
	st := m.PromptCache().Stats()
	if st.DiskBytes > st.DiskMaxBytes || st.DiskEntries != 2 || len(kvcFiles(t, dir)) != 2 {
		t.Fatalf("bound %d: %+v, %d files", st.DiskMaxBytes, st, len(kvcFiles(t, dir)))
	}

	// Siblings (the same system prompt, another question) share one file.
	dir3 := t.TempDir()
	m = diskModel(t, dir3, "w", f, nil)
	ask(t, m, "one")
	ask(t, m, "two")
	m.Close()
	if files := kvcFiles(t, dir3); len(files) != 1 {
		t.Errorf("%d files for two prompts that differ in their last tokens, want one", len(files))
	}

	// A conversation's next turn extends its prompt: one file remains.
	dir2 := t.TempDir()
	m = diskModel(t, dir2, "w", f, nil)
	s := m.NewSession()
	msgs := []Message{diskSystem, {Role: "user", Content: "one"}}
	r := collect(s, context.Background(), msgs, GenerateOptions{})
	msgs = append(msgs, Message{Role: "assistant", Content: r.content}, Message{Role: "user", Content: "two"})
	collect(s, context.Background(), msgs, GenerateOptions{})
	m.Close()
	if files := kvcFiles(t, dir2); len(files) != 1 {
		t.Errorf("%d files after a conversation of two turns, want the longer prompt only", len(files))
	}

	// A stale temporary file is removed at start, a fresh one (another
	// process writing) is not.
	sub := filepath.Dir(kvcFiles(t, dir2)[0])
	stale, fresh := filepath.Join(sub, "x.kvc.1.tmp"), filepath.Join(sub, "y.kvc.2.tmp")
	os.WriteFile(stale, []byte("half"), 0o644)
	os.WriteFile(fresh, []byte("half"), 0o644)
	old := timeVeryOld()
	os.Chtimes(stale, old, old)
	diskModel(t, dir2, "w", f, nil).Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("a stale temporary file survived")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh temporary file was removed")
	}
}

// A backend whose caches cannot be saved keeps its prompt cache in memory,
// and says so; a directory without a model identity is an error.
func TestPromptCacheDiskNeeds(t *testing.T) {
	if _, err := NewConfig(WithPromptCacheDir(t.TempDir(), 0)); err == nil {
		t.Error("a disk cache without a memory cache: no error")
	}
	cfg, _ := NewConfig(WithPromptCache(1<<20), WithPromptCacheDir(t.TempDir(), 0))
	if _, err := New(&fakeBackend{ctxLen: 100}, fakeFormat{}, cfg); err == nil || !strings.Contains(err.Error(), "ModelID") {
		t.Errorf("no model identity: %v", err)
	}
	log := &lockedBuffer{}
	m := diskModel(t, t.TempDir(), "w", &fakeBackend{ctxLen: 100}, log)
	_ = m
	cfg, _ = NewConfig(WithPromptCache(1<<20), WithPromptCacheDir(t.TempDir(), 0), WithModelID("w"), WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	m2, err := New(plainBackend{&fakeBackend{ctxLen: 100}}, fakeFormat{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if !strings.Contains(log.String(), "cannot be saved") {
		t.Errorf("log %q", log.String())
	}
}

// plainBackend's caches are not Persisters.
type plainBackend struct{ *fakeBackend }

func (p plainBackend) NewCache() (Cache, error) {
	c, err := p.fakeBackend.NewCache()
	return plainCache{c}, err
}

type plainCache struct{ Cache }

func timeVeryOld() time.Time { return time.Now().Add(-time.Hour) }

// askWithin is ask that fails the test instead of hanging when the answer
// does not come within d.
func askWithin(t *testing.T, m *Model, question string, d time.Duration) result {
	t.Helper()
	done := make(chan result, 1)
	go func() {
		done <- collect(m.NewSession(), context.Background(), []Message{diskSystem, {Role: "user", Content: question}}, GenerateOptions{})
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	case <-time.After(d):
		t.Fatalf("%q: no answer within %v: the request hangs", question, d)
		return result{}
	}
}

// Issue 39: a FIFO where a snapshot was (or a stalled network volume)
// hung the matching request forever, uncancellable, and every later disk
// read queued behind it. A FIFO is now refused without waiting on it (and
// left alone), and a read that stalls is given up after its deadline: the
// request computes its prompt, and the next ones do not wait for the stuck
// read.
func TestPromptCacheDiskNeverHangs(t *testing.T) {
	src := t.TempDir()
	m := diskModel(t, src, "w", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, nil)
	ask(t, m, "one")
	m.Close()
	files := kvcFiles(t, src)
	if len(files) != 1 {
		t.Fatalf("%d files", len(files))
	}
	t.Run("FIFO", func(t *testing.T) {
		log := &lockedBuffer{}
		m := diskModel(t, src, "w", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, log)
		// Indexed; now a FIFO takes the file's place.
		if err := os.Remove(files[0]); err != nil {
			t.Fatal(err)
		}
		if err := mkfifo(files[0]); err != nil {
			t.Skipf("no FIFOs here: %v", err)
		}
		// The first computes its prompt; the second may find it in memory.
		if r := askWithin(t, m, "two", 10*time.Second); r.stats.CachedTokens != 0 {
			t.Errorf("%+v, want nothing read", r.stats)
		}
		askWithin(t, m, "three", 10*time.Second)
		if !strings.Contains(log.String(), "not a regular file") {
			t.Errorf("log does not say why: %s", log.String())
		}
		m.Close()
		if info, err := os.Lstat(files[0]); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the FIFO was not left alone: %v %v", info, err)
		}
		// A restart with the FIFO there does not hang either.
		done := make(chan struct{})
		go func() {
			m := diskModel(t, src, "w", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, nil)
			askWithin(t, m, "four", 10*time.Second)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a model over a directory with a FIFO did not start")
		}
		os.Remove(files[0])
	})
	t.Run("stalled read", func(t *testing.T) {
		dir := t.TempDir()
		m := diskModel(t, dir, "w", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, nil)
		ask(t, m, "one")
		m.Close()
		stall := make(chan struct{})
		defer close(stall)
		log := &lockedBuffer{}
		m = diskModel(t, dir, "w", &fakeBackend{ctxLen: 4000, answer: historyAnswer, stall: stall}, log)
		m.PromptCache().disk.readTimeout = 50 * time.Millisecond
		if r := askWithin(t, m, "two", 10*time.Second); r.stats.CachedTokens != 0 {
			t.Errorf("%+v, want the stuck file not used", r.stats)
		}
		askWithin(t, m, "three", 10*time.Second)
		if !strings.Contains(log.String(), "took more than") {
			t.Errorf("log does not say why: %s", log.String())
		}
		if st := m.PromptCache().Stats(); st.DiskHits != 0 || st.DiskIgnored != 1 {
			t.Errorf("the stuck file: %+v, want it dropped from the index", st)
		}
	})
}

// Issue 39: 20,000 junk .kvc files wrote 20,006 log lines at every start
// and were never removed. Junk in the model's own directory is now removed,
// with one line for all of it.
func TestPromptCacheDiskJunk(t *testing.T) {
	src := t.TempDir()
	m := diskModel(t, src, "w", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, nil)
	ask(t, m, "one")
	m.Close()
	sub := filepath.Dir(kvcFiles(t, src)[0])
	for i := range 2000 {
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("junk%04d%s", i, diskExt)), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := &lockedBuffer{}
	m = diskModel(t, src, "w", &fakeBackend{ctxLen: 4000, answer: historyAnswer}, log)
	if n := strings.Count(log.String(), "\n"); n > 3 {
		t.Errorf("%d log lines at start:\n%.500s", n, log.String())
	}
	if !strings.Contains(log.String(), "files=2000") || !strings.Contains(log.String(), "removed=2000") {
		t.Errorf("log does not count them: %s", log.String())
	}
	if files := kvcFiles(t, src); len(files) != 1 {
		t.Errorf("%d files left, want the one snapshot", len(files))
	}
	if r := ask(t, m, "two"); r.stats.CachedTokens == 0 {
		t.Errorf("the good snapshot was not used: %+v", r.stats)
	}
}
