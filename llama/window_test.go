package llama

import (
	"errors"
	"math"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/rope"
)

// openWindowed opens ../shared's gemma3-tiny (two layers: a sliding window
// of 32 positions in layer 0, global layer 1) with the window described
// here as gemma3's package does, on a runner whose passes take batch
// tokens, so that layer 0's cache is a ring of 32 + batch positions.
func openWindowed(t *testing.T, batch int) *CPU {
	t.Helper()
	f, err := gguf.Open(sharedtest.Path(t, "golden-families/models/gemma3-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	global := cfg.Rope
	global.Layout = rope.NeoX
	local := rope.Config{Dims: global.Dims, Base: 10000, Layout: rope.NeoX}
	a := Uniform("gemma3", cfg.Layers, Layer{
		Mixer:     &Attention{Rope: &global, QKNorm: true, QueryScale: float32(1 / math.Sqrt(float64(cfg.HeadDim)))},
		FFN:       &GLU{Activation: GELUTanh},
		PostNorms: true,
	})
	a.Layers[0].Attention().Rope, a.Layers[0].Attention().Window = &local, 32
	a.EmbedScale = float32(math.Sqrt(float64(cfg.Embd)))
	w, err := LoadWeights(f, cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewCPU(w, Options{Threads: 2, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// decodeAll feeds tokens one at a time and returns the last logits.
func decodeAll(t *testing.T, m *CPU, c *Cache, tokens []int32) []float32 {
	t.Helper()
	var out []float32
	for _, tok := range tokens {
		out = forward(t, m, c, []int32{tok}, false)
	}
	return out
}

// A sliding-window layer keeps a ring of window + batch positions. Going
// back is possible while the ring still holds the window before the new
// end (MinRewind), and then continues exactly as a cache that never went
// further; going back further is refused. Clone and CopyFrom carry the
// ring, so a snapshot resumes exactly too.
func TestWindowRing(t *testing.T) {
	m := openWindowed(t, 4)
	if r := m.Arch.Layers[0].Attention().Window + 4; r != 36 {
		t.Fatalf("ring %d", r)
	}
	seq := randTokens(100, m.Config.Vocab, 5)
	next := []int32{42}
	for _, typ := range []KVType{KVF32, KVF16, KVQ8_0} {
		if typ == KVQ8_0 && m.Config.HeadDim%q8Block != 0 {
			continue
		}
		c := newCache(t, m, CacheOptions{KVType: typ})
		decodeAll(t, m, c, seq)
		if c.ring[0] != 36 || c.ring[1] != 0 {
			t.Fatalf("%v: rings %v, want [36 0]", typ, c.ring)
		}
		if got := c.kv[0].bytes(); got > 36*c.kv[1].bytes()/int64(c.capLen) {
			t.Errorf("%v: the windowed layer holds %d bytes, more than 36 positions", typ, got)
		}
		lo := c.MinRewind()
		if lo != 100-36+32-1 {
			t.Errorf("%v: MinRewind %d after 100 positions, want %d", typ, lo, 100-36+32-1)
		}
		if err := c.Truncate(lo - 1); err == nil {
			t.Errorf("%v: Truncate(%d) below MinRewind %d: no error", typ, lo-1, lo)
		}
		if _, err := c.Clone(lo - 1); err == nil {
			t.Errorf("%v: Clone(%d) below MinRewind %d: no error", typ, lo-1, lo)
		}
		snap, err := c.Clone(lo)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Truncate(lo); err != nil {
			t.Fatal(err)
		}
		got := forward(t, m, c, next, false)
		fresh := newCache(t, m, CacheOptions{KVType: typ})
		decodeAll(t, m, fresh, seq[:lo])
		want := forward(t, m, fresh, next, false)
		if d := maxDiff(got, want); d != 0 {
			t.Errorf("%v: after Truncate(%d) the logits differ from a fresh cache's by %g", typ, lo, d)
		}
		// The snapshot copied into an empty cache resumes exactly too.
		d := newCache(t, m, CacheOptions{KVType: typ})
		if err := d.CopyFrom(snap, 0, lo); err != nil {
			t.Fatal(err)
		}
		if diff := maxDiff(forward(t, m, d, next, false), want); diff != 0 {
			t.Errorf("%v: a copy of the snapshot differs from a fresh cache by %g", typ, diff)
		}
		// Back to nothing is always possible.
		if err := c.Truncate(0); err != nil || c.MinRewind() != 0 {
			t.Errorf("%v: Truncate(0): %v, MinRewind %d", typ, err, c.MinRewind())
		}
	}
}

// A windowed cache shifts (llama.cpp's context shift) like one whose
// sliding-window layer keeps every position: the ring is rebuilt around the
// dropped stretch, and decoding on gives the logits of a cache without a
// ring shifted the same way. A shift whose new window would need positions
// the ring has overwritten is refused with backend.ErrCannotShift and
// changes nothing. The backend's caches offer Shift and MinRewind.
func TestWindowShift(t *testing.T) {
	m := openWindowed(t, 4) // layer 0: a ring of 32 + 4 positions
	prompt := randTokens(100, m.Config.Vocab, 1)
	more := randTokens(12, m.Config.Vocab, 2)
	for _, typ := range []KVType{KVF16, KVF32, KVQ8_0} {
		// keep+drop ≤ 69: the window after the shift is still in the ring.
		for _, sh := range []struct{ keep, drop int }{{5, 40}, {0, 30}, {20, 49}, {3, 1}} {
			ring := newCache(t, m, CacheOptions{KVType: typ})
			full := newCache(t, m, CacheOptions{KVType: typ, BatchSize: 4096}) // window + batch ≥ MaxLen: no ring
			if ring.ring[0] == 0 || full.ring[0] != 0 {
				t.Fatalf("rings %d and %d: want one and none", ring.ring[0], full.ring[0])
			}
			for _, c := range []*Cache{ring, full} {
				for i := 0; i < len(prompt); i += 4 {
					forward(t, m, c, prompt[i:i+4], false)
				}
				if err := c.Shift(sh.keep, sh.drop); err != nil {
					t.Fatalf("%v: Shift(%d, %d): %v", typ, sh.keep, sh.drop, err)
				}
			}
			if ring.Len() != len(prompt)-sh.drop {
				t.Errorf("%v: %d positions after the shift, want %d", typ, ring.Len(), len(prompt)-sh.drop)
			}
			a, b := decodeAll(t, m, ring, more), decodeAll(t, m, full, more)
			if d := maxDiff(a, b); d > 1e-4 {
				t.Errorf("%v: Shift(%d, %d): the ring's logits differ from the full cache's by %g", typ, sh.keep, sh.drop, d)
			}
		}

		// 100 positions in a ring of 36: positions from 64 on are held.
		// Keeping 70 and dropping 20 leaves 80, whose window needs 49 on.
		c := newCache(t, m, CacheOptions{KVType: typ})
		same := newCache(t, m, CacheOptions{KVType: typ})
		for _, x := range []*Cache{c, same} {
			for i := 0; i < len(prompt); i += 4 {
				forward(t, m, x, prompt[i:i+4], false)
			}
		}
		err := c.Shift(70, 20)
		if !errors.Is(err, backend.ErrCannotShift) {
			t.Fatalf("%v: Shift into overwritten positions: %v, want backend.ErrCannotShift", typ, err)
		}
		if d := maxDiff(decodeAll(t, m, c, more), decodeAll(t, m, same, more)); c.Len() != same.Len() || d != 0 {
			t.Errorf("%v: a refused Shift changed the cache (length %d, logits by %g)", typ, c.Len(), d)
		}
	}

	b, err := m.AsBackend(CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bc, err := b.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := bc.(interface{ Shift(int, int) error }); !ok {
		t.Error("a windowed backend cache does not offer Shift")
	}
	if _, ok := bc.(interface{ MinRewind() int }); !ok {
		t.Error("a windowed backend cache does not say how far it can rewind")
	}
}
