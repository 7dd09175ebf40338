package vision

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/tensor"
	"github.com/smolgo/smolgo/vision/pixels"
)

// qwen25Params are Qwen2.5-VL-3B's preprocessing parameters (patch 14,
// merge 2, 8 to 4096 merged rows, window attention every 8th block full).
func qwen25Params() *params {
	p := &params{typ: Qwen25VL, patch: 14, merge: 2, waPattern: 8, window: 112}
	area := p.patch * p.patch * p.merge * p.merge
	p.minPixels, p.maxPixels = 8*area, 4096*area
	return p
}

// TestQwenSize: smart_resize's sizes (transformers' values for a few
// images), the area within [minPixels, maxPixels] for any size up to the
// aspect limit, and sides in a ratio over 200 refused.
func TestQwenSize(t *testing.T) {
	p := qwen25Params()
	for _, c := range []struct{ w, h, ww, wh int }{
		{1024, 768, 1036, 756},   // 37 × 27 merged rows
		{64, 64, 84, 84},         // below 8 rows: scaled up
		{8192, 4096, 2520, 1260}, // over 4096 rows: scaled down
		{200, 1, 1120, 28},
	} {
		w, h, err := p.qwenSize(c.w, c.h)
		if err != nil || w != c.ww || h != c.wh {
			t.Errorf("%dx%d: %dx%d, %v; want %dx%d", c.w, c.h, w, h, err, c.ww, c.wh)
		}
	}
	f := p.patch * p.merge
	sides := []int{1, 2, 3, 7, 27, 28, 29, 100, 199, 200, 201, 999, 5000, 20000, 40000, 1 << 20, 1 << 25}
	for _, w := range sides {
		for _, h := range sides {
			rw, rh, err := p.qwenSize(w, h)
			if max(w, h) > 200*min(w, h) {
				if err == nil || !strings.Contains(err.Error(), "ratio over 200") {
					t.Errorf("%dx%d: %dx%d, %v; want it refused", w, h, rw, rh, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%dx%d: %v", w, h, err)
				continue
			}
			if rw%f != 0 || rh%f != 0 || rw*rh > p.maxPixels || rw*rh < p.minPixels {
				t.Errorf("%dx%d resizes to %dx%d: not whole %d px, or an area outside [%d, %d]", w, h, rw, rh, f, p.minPixels, p.maxPixels)
			}
		}
	}
}

// TestQwenLayout: the ViT's patch order holds every patch once, each merge
// group's 4 patches together; with windows, each window's groups are
// consecutive and within one window square, and the groups' output rows
// are every merged row once.
func TestQwenLayout(t *testing.T) {
	for _, wa := range []int{0, 8} {
		for _, g := range [][2]int{{1, 1}, {4, 4}, {5, 3}, {9, 13}, {37, 27}} {
			p := qwen25Params()
			p.waPattern = wa
			pr := &Projector{p: *p}
			pw, ph := 2*g[0], 2*g[1]
			if err := pr.qwenLayout(pw, ph); err != nil {
				t.Fatal(err)
			}
			b := &pr.buf
			if got := slices.Sorted(slices.Values(b.order)); !slices.Equal(got, seq(pw*ph)) {
				t.Fatalf("wa %d, %dx%d: the order is not a permutation of the patches", wa, pw, ph)
			}
			if got := slices.Sorted(slices.Values(b.groups)); !slices.Equal(got, seq(g[0]*g[1])) {
				t.Fatalf("wa %d, %dx%d: the groups are not a permutation of the rows", wa, pw, ph)
			}
			for s, pi := range b.order {
				r := b.groups[s/4]
				if gy, gx := (pi/pw)/2, (pi%pw)/2; gy*g[0]+gx != r {
					t.Fatalf("wa %d: slot %d holds patch %d, outside its group's row %d", wa, s, pi, r)
				}
			}
			if wa == 0 {
				if len(b.wins) != 0 || !slices.Equal(b.groups, seq(g[0]*g[1])) {
					t.Fatalf("no windows: %d windows, groups %v", len(b.wins), b.groups)
				}
				continue
			}
			side := p.window / p.patch / p.merge
			next := 0
			for _, w := range b.wins {
				if w.lo != next || w.hi <= w.lo || (w.hi-w.lo)%4 != 0 {
					t.Fatalf("%dx%d: windows %v do not tile the slots", pw, ph, b.wins)
				}
				next = w.hi
				r0 := b.groups[w.lo/4]
				for s := w.lo; s < w.hi; s += 4 {
					r := b.groups[s/4]
					if r/g[0]/side != r0/g[0]/side || r%g[0]/side != r0%g[0]/side {
						t.Fatalf("%dx%d: window %v holds rows %d and %d of different squares", pw, ph, w, r0, r)
					}
				}
			}
			if next != pw*ph {
				t.Fatalf("%dx%d: windows end at %d of %d slots", pw, ph, next, pw*ph)
			}
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestQwenHostileSizes: a picture of sides in a ratio over 200 is refused
// before any resize (a 10⁶ × 1 strip would otherwise become 10⁶ × 16 px),
// and a large one is resized within the 4096 merged rows.
func TestQwenHostileSizes(t *testing.T) {
	pr, err := Open(sharedtest.Path(t, "golden-vision/models/mmproj-qwen2vl-F32.gguf"), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if _, err := pr.PreparePixels(pixels.New(1_000_000, 1)); err == nil || !strings.Contains(err.Error(), "ratio over 200") {
		t.Errorf("a 1000000x1 picture: %v; want it refused", err)
	}
	img, err := pr.PreparePixels(pixels.New(3000, 2000))
	if err != nil {
		t.Fatal(err)
	}
	c := img.Chunks[1]
	if c.Rows > 4096 || c.Rows < 4000 || c.TilePx[0]*c.TilePx[1] > pr.p.maxPixels {
		t.Errorf("a 3000x2000 picture: %d rows of a %v px tile; want at most 4096 (and near it)", c.Rows, c.TilePx)
	}
}

// TestWindowAttention: attention within windows (Qwen2.5-VL's windowed
// blocks) on both of ggml's paths (tiled from 64 queries, one query at a
// time below) agrees with a float64 softmax over each window's keys (the
// keys and values rounded to float16 as the encoder casts them).
func TestWindowAttention(t *testing.T) {
	const E, heads = 64, 4
	for _, c := range []struct {
		n    int
		wins []span
		tol  float64
	}{
		{128, []span{{0, 16}, {16, 48}, {48, 52}, {52, 128}}, 1e-5},
		{40, []span{{0, 4}, {4, 36}, {36, 40}}, 2e-3}, // float16 accumulators
	} {
		pr := &Projector{p: params{embd: E, heads: heads, headDim: E / heads}, pool: tensor.NewPool(2)}
		seed := uint32(c.n)
		rnd := func() float32 {
			seed = seed*1664525 + 1013904223
			return float32(seed>>8)/(1<<24)*2 - 1
		}
		q, k, v := make([]float32, c.n*E), make([]float32, c.n*E), make([]float32, c.n*E)
		for i := range q {
			q[i], k[i], v[i] = 2*rnd(), 2*rnd(), rnd()
		}
		k16, v16 := make([]float32, len(k)), make([]float32, len(v))
		tensor.RoundF16s(k16, k)
		tensor.RoundF16s(v16, v)
		out := make([]float32, c.n*E)
		if err := pr.attention(&pr.buf, out, q, slices.Clone(k), slices.Clone(v), c.n, c.wins); err != nil {
			t.Fatal(err)
		}
		hd := E / heads
		var worst float64
		for _, w := range c.wins {
			for i := w.lo; i < w.hi; i++ {
				for h := range heads {
					o := h * hd
					s := make([]float64, w.hi-w.lo)
					m := math.Inf(-1)
					for j := w.lo; j < w.hi; j++ {
						var d float64
						for e := range hd {
							d += float64(q[i*E+o+e]) * float64(k16[j*E+o+e])
						}
						s[j-w.lo] = d / math.Sqrt(float64(hd))
						m = max(m, s[j-w.lo])
					}
					var sum float64
					for j := range s {
						s[j] = math.Exp(s[j] - m)
						sum += s[j]
					}
					for e := range hd {
						var want float64
						for j := w.lo; j < w.hi; j++ {
							want += s[j-w.lo] / sum * float64(v16[j*E+o+e])
						}
						worst = max(worst, math.Abs(want-float64(out[i*E+o+e])))
					}
				}
			}
		}
		pr.pool.Close()
		if worst > c.tol {
			t.Errorf("%d queries in windows %v: max |Δ| %.3g from the float64 reference, want ≤ %g", c.n, c.wins, worst, c.tol)
		}
	}
}
