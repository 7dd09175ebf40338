package llama

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
)

// saveLoad saves a cache and loads the bytes into a fresh cache of opts.
func saveLoad(t *testing.T, m *CPU, c *Cache, opts CacheOptions) (*Cache, []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := c.SaveTo(&b); err != nil {
		t.Fatal(err)
	}
	d := newCache(t, m, opts)
	if err := d.LoadFrom(bytes.NewReader(b.Bytes()), c.Len()); err != nil {
		t.Fatal(err)
	}
	return d, b.Bytes()
}

// A cache saved and loaded into another (as the prompt cache on disk does
// across a restart) continues exactly as the original does, for every
// element type, whether the original is a live cache or a snapshot (Clone),
// and the bytes are the keys and values and no more.
func TestSaveLoad(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-Q4_K_M", Options{Threads: 2})
	seq := randTokens(90, m.Config.Vocab, 7)
	p, rest := seq[:70], seq[70:]
	for _, typ := range []KVType{KVF16, KVF32, KVQ8_0} {
		opts := CacheOptions{KVType: typ}
		orig := newCache(t, m, opts)
		forward(t, m, orig, p, false)
		snap, err := orig.Clone(50)
		if err != nil {
			t.Fatal(err)
		}
		want := forward(t, m, orig, rest, true)

		// The snapshot copied (as the prompt cache in memory does) and
		// the snapshot saved and loaded continue alike.
		copied := newCache(t, m, opts)
		if err := copied.CopyFrom(snap, 0, 50); err != nil {
			t.Fatal(err)
		}
		forward(t, m, copied, p[50:], false)
		wantCopied := forward(t, m, copied, rest, true)
		loaded, raw := saveLoad(t, m, snap, opts)
		if n := int64(len(raw)); n != m.Config.KVBytes(typ, 50)+8*int64(m.Config.Layers) {
			t.Errorf("%v: %d bytes saved for 50 positions, want the keys and values (%d) and a count per layer", typ, n, m.Config.KVBytes(typ, 50))
		}
		if loaded.Len() != 50 || loaded.Layout() != orig.Layout() {
			t.Fatalf("%v: loaded %d positions, layout %q against %q", typ, loaded.Len(), loaded.Layout(), orig.Layout())
		}
		forward(t, m, loaded, p[50:], false)
		if d := maxDiff(forward(t, m, loaded, rest, true), wantCopied); d != 0 {
			t.Errorf("%v: resumed from a loaded snapshot: logits differ by %g", typ, d)
		}
		// A live cache (memory for more than it holds) saves what it holds.
		live := newCache(t, m, opts)
		forward(t, m, live, p, false)
		again, _ := saveLoad(t, m, live, opts)
		if d := maxDiff(forward(t, m, again, rest, true), want); d != 0 {
			t.Errorf("%v: resumed from a loaded live cache: logits differ by %g", typ, d)
		}
	}
	if a, b := newCache(t, m, CacheOptions{KVType: KVF16}).Layout(), newCache(t, m, CacheOptions{KVType: KVQ8_0}).Layout(); a == b {
		t.Errorf("f16 and q8_0 caches have one layout %q", a)
	}
}

// A sliding-window layer's ring, wrapped, is saved and loaded whole: the
// loaded cache resumes exactly and knows how far it can rewind.
func TestSaveLoadWindow(t *testing.T) {
	m := openWindowed(t, 4)
	seq := randTokens(100, m.Config.Vocab, 5)
	next := []int32{42}
	for _, typ := range []KVType{KVF32, KVF16, KVQ8_0} {
		if typ == KVQ8_0 && m.Config.HeadDim%q8Block != 0 {
			continue
		}
		opts := CacheOptions{KVType: typ}
		c := newCache(t, m, opts)
		decodeAll(t, m, c, seq)
		if !strings.Contains(c.Layout(), "ring0=32/36") {
			t.Errorf("%v: layout %q does not name the ring", typ, c.Layout())
		}
		d, _ := saveLoad(t, m, c, opts)
		if d.MinRewind() != c.MinRewind() || d.Len() != c.Len() {
			t.Errorf("%v: loaded %d positions rewinding to %d, saved %d to %d", typ, d.Len(), d.MinRewind(), c.Len(), c.MinRewind())
		}
		want := forward(t, m, c, next, false)
		if diff := maxDiff(forward(t, m, d, next, false), want); diff != 0 {
			t.Errorf("%v: a loaded wrapped ring differs by %g", typ, diff)
		}
	}
}

// Damaged input is an error, never a panic, and leaves the cache empty
// and usable: a cut at every length, lost counts that no cache could hold,
// more positions than the cache takes. (Bytes of another layout are the
// caller's to refuse: see Layout.)
func TestLoadHostile(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-Q4_K_M", Options{Threads: 2})
	c := newCache(t, m, CacheOptions{})
	forward(t, m, c, randTokens(20, m.Config.Vocab, 2), false)
	var b bytes.Buffer
	if err := c.SaveTo(&b); err != nil {
		t.Fatal(err)
	}
	raw := bytes.Clone(b.Bytes())
	d := newCache(t, m, CacheOptions{})
	check := func(name string, data []byte, n int) {
		t.Helper()
		if err := d.LoadFrom(bytes.NewReader(data), n); err == nil {
			t.Errorf("%s: no error", name)
		}
		if d.Len() != 0 || d.Bytes() != 0 {
			t.Errorf("%s: the failed load left %d positions in %d bytes", name, d.Len(), d.Bytes())
		}
	}
	for cut := 0; cut < len(raw); cut += max(1, len(raw)/97) {
		check("truncated", raw[:cut], 20)
	}
	check("more positions than saved", raw, 21)
	check("beyond MaxLen", raw, c.MaxLen()+1)
	check("negative", raw, -1)
	bad := bytes.Clone(raw)
	binary.LittleEndian.PutUint64(bad, 3) // an ordinary layer cannot have lost positions
	check("lost positions in an ordinary layer", bad, 20)

	w := openWindowed(t, 4)
	wc := newCache(t, w, CacheOptions{})
	decodeAll(t, w, wc, randTokens(60, w.Config.Vocab, 3))
	b.Reset()
	if err := wc.SaveTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		lost uint64
		n    int
	}{
		{"lost beyond the window", 59, 60},
		{"lost beyond the length", 1 << 62, 60},
		{"a ring that never wrapped holding more than the ring", 0, 60},
	} {
		bad := bytes.Clone(b.Bytes())
		binary.LittleEndian.PutUint64(bad, tc.lost)
		wd := newCache(t, w, CacheOptions{})
		if err := wd.LoadFrom(bytes.NewReader(bad), tc.n); err == nil || wd.Len() != 0 {
			t.Errorf("%s: error %v, %d positions", tc.name, err, wd.Len())
		}
	}
	// After all that the cache still works.
	if err := d.LoadFrom(bytes.NewReader(raw), 20); err != nil || d.Len() != 20 {
		t.Errorf("a good load after bad ones: %v, %d positions", err, d.Len())
	}
}

// The backend's caches, windowed or not, are backend.Persisters, and a
// closed one refuses.
func TestBackendPersister(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-Q4_K_M", Options{Threads: 2})
	for _, cpu := range []*CPU{m, openWindowed(t, 4)} {
		b, err := cpu.AsBackend(CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := b.NewCache()
		if err != nil {
			t.Fatal(err)
		}
		p, ok := c.(backend.Persister)
		if !ok {
			t.Fatalf("%s: the backend's cache is not a Persister", cpu.Arch.Name)
		}
		var buf bytes.Buffer
		if err := p.SaveTo(&buf); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if err := p.SaveTo(&buf); err == nil {
			t.Errorf("%s: saving a closed cache: no error", cpu.Arch.Name)
		}
		if err := p.LoadFrom(bytes.NewReader(buf.Bytes()), 0); err == nil {
			t.Errorf("%s: loading into a closed cache: no error", cpu.Arch.Name)
		}
	}
}
