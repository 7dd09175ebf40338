package llama

import (
	"math"
	"testing"

	"github.com/smolgo/smolgo/rope"
)

// oneLayer cuts a model down to its first layer, whose keys and values
// depend on the token and its position only: there a shifted cache must
// equal a fresh prefill of the shortened sequence.
func oneLayer(m *CPU, nope bool) {
	m.layers = m.layers[:1]
	m.Config.Layers = 1
	m.Arch.Layers = m.Arch.Layers[:1]
	m.layerRope = m.layerRope[:1]
	m.steps = m.steps[:1]
	if nope {
		m.Arch.Layers[0].Attention().Rope = nil
		m.layerRope[0] = -1
		m.steps[0].mixer.(*attentionStep).rope = -1
	}
}

// shiftVsFresh prefills keep+drop+tail tokens, drops the middle with Shift
// and decodes one more token; it returns those logits and those of a fresh
// cache that never saw the dropped tokens.
func shiftVsFresh(t *testing.T, m *CPU, typ KVType, keep, drop, tail int) (shifted, fresh []float32, c *Cache) {
	t.Helper()
	seq := randTokens(keep+drop+tail, m.Config.Vocab, 11)
	next := []int32{42}
	c = newCache(t, m, CacheOptions{KVType: typ})
	forward(t, m, c, seq, false)
	if err := c.Shift(keep, drop); err != nil {
		t.Fatal(err)
	}
	if c.Len() != keep+tail {
		t.Fatalf("Len after Shift = %d, want %d", c.Len(), keep+tail)
	}
	shifted = forward(t, m, c, next, false)
	short := append(append([]int32(nil), seq[:keep]...), seq[keep+drop:]...)
	f := newCache(t, m, CacheOptions{KVType: typ})
	forward(t, m, f, short, false)
	fresh = forward(t, m, f, next, false)
	return shifted, fresh, c
}

// On a one-layer model (context-free keys), shifting equals recomputing:
// to float noise for an f32 cache, to one extra rounding of the keys for
// f16 and q8_0. In a NoPE layer the keys are left exactly as they were,
// so the result is bit for bit that of the fresh run.
func TestShiftEqualsFreshPrefill(t *testing.T) {
	cases := []struct {
		model string
		typ   KVType
		nope  bool
		tol   float64
	}{
		{"smollm3-tinyq-F32", KVF32, false, 1e-4},
		{"smollm3-tinyyarn-F32", KVF32, false, 1e-4},
		{"llama-tiny-F32", KVF32, false, 1e-4},
		{"smollm3-tinyq-F32", KVF32, true, 0},
		{"smollm3-tinyq-F32", KVF16, false, 0.02},
		{"smollm3-tinyq-F32", KVQ8_0, false, 0.2},
	}
	for _, tc := range cases {
		_, m := openModel(t, tc.model, Options{Threads: 2})
		oneLayer(m, tc.nope)
		keep, drop, tail := 7, 40, 30
		if tc.model == "smollm3-tinyyarn-F32" {
			drop = 150 // past YaRN's original context
		}
		shifted, fresh, _ := shiftVsFresh(t, m, tc.typ, keep, drop, tail)
		d := maxDiff(shifted, fresh)
		t.Logf("%s (1 layer, nope %v), %v cache: shifted vs fresh max diff %.3g", tc.model, tc.nope, tc.typ, d)
		if d > tc.tol {
			t.Errorf("%s (1 layer, nope %v), %v cache: shifted vs fresh logits differ by %g (tolerance %g)", tc.model, tc.nope, tc.typ, d, tc.tol)
		}
	}
}

// In the full model, Shift moves NoPE layers' keys and all values
// unchanged and rotates RoPE layers' keys by -drop (checked against a
// float64 rotation); the first layer's keys then match a fresh prefill.
func TestShiftRotatesOnlyRoPELayers(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-F32", Options{Threads: 2}, rope.EveryNth(8, 4))
	const keep, drop, tail = 5, 20, 25
	seq := randTokens(keep+drop+tail, m.Config.Vocab, 11)
	c := newCache(t, m, CacheOptions{KVType: KVF32})
	forward(t, m, c, seq, false)
	kv, hd := m.Config.KVDim(), m.Config.HeadDim
	before := make([][]float32, 8)
	for l := range 8 {
		before[l] = append([]float32(nil), c.kv[l].(*f32KV).k[:c.Len()*kv]...)
	}
	vBefore := append([]float32(nil), c.kv[5].(*f32KV).v[:c.Len()*kv]...)
	if err := c.Shift(keep, drop); err != nil {
		t.Fatal(err)
	}
	base := float64(m.Config.Rope.Base)
	for l := range 8 {
		got := c.kv[l].(*f32KV).k[:c.Len()*kv]
		if maxDiff(got[:keep*kv], before[l][:keep*kv]) != 0 {
			t.Errorf("layer %d: the kept prefix changed", l)
		}
		moved, old := got[keep*kv:], before[l][(keep+drop)*kv:]
		if (l+1)%4 == 0 {
			if d := maxDiff(moved, old); d != 0 {
				t.Errorf("NoPE layer %d: moved keys differ from the originals by %g; they must not be rotated", l, d)
			}
			continue
		}
		var worst float64
		for p := range tail {
			for h := range m.Config.KVHeads {
				x := old[p*kv+h*hd : p*kv+(h+1)*hd]
				y := moved[p*kv+h*hd : p*kv+(h+1)*hd]
				for i := 0; i < hd; i += 2 {
					th := -float64(drop) * math.Pow(base, -float64(i)/float64(hd))
					s, co := math.Sincos(th)
					w0 := float64(x[i])*co - float64(x[i+1])*s
					w1 := float64(x[i])*s + float64(x[i+1])*co
					worst = max(worst, math.Abs(float64(y[i])-w0), math.Abs(float64(y[i+1])-w1))
				}
			}
		}
		if worst > 1e-4 {
			t.Errorf("RoPE layer %d: moved keys are off a rotation by -%d by %g", l, drop, worst)
		}
	}
	if d := maxDiff(c.kv[5].(*f32KV).v[keep*kv:c.Len()*kv], vBefore[(keep+drop)*kv:]); d != 0 {
		t.Errorf("values changed when moved: %g", d)
	}
	// Layer 0's keys depend on token and position only.
	f := newCache(t, m, CacheOptions{KVType: KVF32})
	forward(t, m, f, append(append([]int32(nil), seq[:keep]...), seq[keep+drop:]...), false)
	if d := maxDiff(c.kv[0].(*f32KV).k[:c.Len()*kv], f.kv[0].(*f32KV).k[:f.Len()*kv]); d > 1e-4 {
		t.Errorf("layer 0 keys after Shift differ from a fresh prefill by %g", d)
	}
	// The full model after a shift: not a recomputation (measured, not bounded
	// tightly: the kept tokens still carry the dropped ones in later layers).
	shifted, fresh, _ := shiftVsFresh(t, m, KVF32, keep, drop, tail)
	t.Logf("8 layers: shifted vs fresh prefill max diff %.3g, RMS %.3g (context the kept tokens saw)", maxDiff(shifted, fresh), rmsDiff(shifted, fresh))
}

func TestShiftErrors(t *testing.T) {
	_, m := openModel(t, "llama-tiny-F32", Options{Threads: 1})
	c := newCache(t, m, CacheOptions{})
	forward(t, m, c, prompt, false)
	for _, kd := range [][2]int{{-1, 2}, {0, -1}, {10, 3}, {0, 13}} {
		if err := c.Shift(kd[0], kd[1]); err == nil {
			t.Errorf("Shift(%d, %d) on %d positions: no error", kd[0], kd[1], c.Len())
		}
	}
	if err := c.Shift(12, 0); err != nil || c.Len() != 12 {
		t.Errorf("Shift(12, 0): %v, Len %d", err, c.Len())
	}
	if err := c.Shift(2, 10); err != nil || c.Len() != 2 {
		t.Errorf("Shift(2, 10) (drop the tail): %v, Len %d", err, c.Len())
	}
}
