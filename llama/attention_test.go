package llama

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/tensor"
)

// BenchmarkAttentionDecode: one query head of 128 against 1024 cached f16
// positions, llama.cpp's small-batch path (ns per position = ns/op / 1024).
func BenchmarkAttentionDecode(b *testing.B) {
	const hd, n = 128, 1024
	r := rand.New(rand.NewPCG(1, 1))
	k, v := make([]uint16, hd*n), make([]uint16, hd*n)
	for i := range k {
		k[i] = tensor.ToF16(float32(r.NormFloat64()))
		v[i] = tensor.ToF16(float32(r.NormFloat64()))
	}
	q, out := make([]float32, hd), make([]float32, hd)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	for b.Loop() {
		onlineF16(out, q, k, v, 0, hd, []seg{{0, n}}, 0.088, noSink)
	}
}

func TestExpf(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	check := func(x float32) bool {
		got, want := expf(x), float32(math.Exp(float64(x)))
		return math.Float32bits(got) == math.Float32bits(want) || (got != got && want != want)
	}
	for _, x := range []float32{0, -0, 1, -1, 88.72, 88.73, 89, -87.3, -103.9, -104, -110, 1e-30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		if !check(x) {
			t.Errorf("expf(%v) = %v, want %v", x, expf(x), float32(math.Exp(float64(x))))
		}
	}
	bad := 0
	for range 1_000_000 {
		x := float32(-r.Float64() * 30) // attention's range: s - M <= 0
		if r.IntN(4) == 0 {
			x = float32(r.Float64()*200 - 110)
		}
		if !check(x) {
			bad++
			if bad < 5 {
				t.Logf("expf(%v) = %v, math.Exp gives %v", x, expf(x), float32(math.Exp(float64(x))))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of a million inputs differ from float32(math.Exp)", bad)
	}
}

// TestOnlineF16BlockedMatchesGo checks that the blocked decode attention
// (scores first, then the running max and sum, then the accumulator in
// assembly) gives the same bits as llama.cpp's one-position-at-a-time loop:
// head sizes 64, 128 and 256, a head at an offset inside wider rows, lengths
// around the block size, and scores that rise (a new maximum at every
// position, so the accumulator is rescaled each time), fall, or are large
// enough to overflow float16 in the accumulator.
func TestOnlineF16BlockedMatchesGo(t *testing.T) {
	if !blockedDecode {
		t.Skip("no assembly kernels in tensor on this CPU or build (purego); onlineF16Go is what runs")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, hd := range []int{64, 128, 256} {
		for _, kvLen := range []int{1, 2, 63, 255, 256, 257, 700, 1300} {
			for _, shape := range []string{"random", "rising", "falling", "huge"} {
				const heads = 3
				stride, off := heads*hd, hd // the middle head of three
				k, v := make([]uint16, stride*kvLen), make([]uint16, stride*kvLen)
				for i := range k {
					k[i] = tensor.ToF16(float32(r.NormFloat64()))
					x := r.NormFloat64()
					if shape == "huge" {
						x *= 3e4
					}
					v[i] = tensor.ToF16(float32(x))
				}
				q := make([]float32, hd)
				for i := range q {
					q[i] = float32(r.NormFloat64())
				}
				if shape == "rising" || shape == "falling" {
					// Make row p's key p·q/|q|² (scaled) so the score is monotone in p.
					var qq float64
					for _, x := range q {
						qq += float64(x) * float64(x)
					}
					for p := range kvLen {
						f := float64(p) / float64(kvLen) * 8
						if shape == "falling" {
							f = -f
						}
						for i := range hd {
							k[p*stride+off+i] = tensor.ToF16(float32(f * float64(q[i]) / qq * float64(hd)))
						}
					}
				}
				want, got := make([]float32, hd), make([]float32, hd)
				onlineF16Go(want, q, k, v, off, stride, []seg{{0, kvLen}}, 0.088, noSink)
				onlineF16Blocked(got, q, k, v, off, stride, []seg{{0, kvLen}}, 0.088, noSink)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("hd %d, %d positions, %s: out[%d] = %g, Go loop %g", hd, kvLen, shape, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// tiledPairByPair is the tiled path as it was written first, one (token,
// head) pair at a time, each scored with DotF32: the reference for
// tiledBlock, which scores four pairs at once and runs their scalar steps
// side by side.
func tiledPairByPair(j *attnJob, qt, kvh int) {
	cfg := &j.m.Config
	hd, Q := cfg.HeadDim, cfg.QDim()
	group := cfg.Heads / cfg.KVHeads
	t0, t1 := qt*tileKV, min((qt+1)*tileKV, j.n)
	kt, vt := make([]float32, tileKV*hd), make([]float32, tileKV*hd)
	for t := t0; t < t1; t++ {
		for h := kvh * group; h < (kvh+1)*group; h++ {
			clear(j.out[t*Q+h*hd : t*Q+(h+1)*hd])
			j.runM[t*cfg.Heads+h], j.runS[t*cfg.Heads+h] = float32(math.Inf(-1)), 0
		}
	}
	for k0 := j.first(j.pos + t0); k0 < j.pos+t1; k0 += tileKV {
		k1 := min(k0+tileKV, j.pos+t1)
		d := 0
		for _, g := range j.segs(nil, k0, k1) {
			widen(j.kv, kt[d*hd:], vt[d*hd:], g.slot, g.n, kvh*hd, hd)
			d += g.n
		}
		for t := t0; t < t1; t++ {
			p := j.pos + t
			start, end := max(k0, j.first(p)), min(k1, p+1)
			for h := kvh * group; h < (kvh+1)*group && start < end; h++ {
				e := make([]float32, end-start)
				tmax := float32(math.Inf(-1))
				for i := range e {
					e[i] = tensor.DotF32(kt[(start-k0+i)*hd:(start-k0+i+1)*hd], j.q[t*Q+h*hd:]) * j.scale
					tmax = max(tmax, e[i])
				}
				r, out := t*cfg.Heads+h, j.out[t*Q+h*hd:t*Q+(h+1)*hd]
				mnew := max(j.runM[r], tmax)
				ms := tensor.Expf(j.runM[r] - mnew)
				S := j.runS[r] * ms
				for i := range out {
					out[i] *= ms
				}
				tensor.ExpShift(e, mnew)
				for _, pv := range e {
					S += pv
				}
				tensor.WeightedSumF32(out, vt[(start-k0)*hd:], e)
				j.runM[r], j.runS[r] = mnew, S
			}
		}
	}
	for t := t0; t < t1; t++ {
		for h := kvh * group; h < (kvh+1)*group; h++ {
			inv := float32(0)
			if S := j.runS[t*cfg.Heads+h]; S != 0 {
				inv = 1 / S
			}
			for i := range j.out[t*Q+h*hd : t*Q+(h+1)*hd] {
				j.out[t*Q+h*hd+i] *= inv
			}
		}
	}
}

// TestTiledAttentionMatchesPairByPair holds the tiled prefill attention to
// tiledPairByPair bit for bit: one to seven query heads per KV head (so
// groups of four pairs that span two or more tokens, and a last group
// padded with a repeated pair), head sizes 64 and 128, prompts that start
// at position 0 or after earlier tokens, a sliding window on a ring, and
// f16 and f32 caches.
func TestTiledAttentionMatchesPairByPair(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, tc := range []struct {
		heads, kvHeads, hd, pos, n, window, ring int
	}{
		{2, 2, 64, 0, 64, 0, 0},
		{4, 2, 128, 0, 130, 0, 0},
		{6, 2, 64, 37, 100, 0, 0},
		{8, 2, 64, 0, 129, 0, 0},
		{7, 1, 64, 5, 70, 0, 0},
		{4, 1, 128, 0, 200, 0, 0},
		{4, 2, 64, 90, 150, 96, 256},
		{6, 2, 64, 0, 190, 70, 128},
	} {
		for _, kvType := range []string{"f16", "f32"} {
			cfg := Config{Heads: tc.heads, KVHeads: tc.kvHeads, HeadDim: tc.hd}
			kvDim := tc.kvHeads * tc.hd
			slots := tc.pos + tc.n
			if tc.ring > 0 {
				slots = tc.ring
			}
			var store kvStore = &f32KV{kv: kvDim}
			if kvType == "f16" {
				store = &f16KV{kv: kvDim}
			}
			store.grow(slots, 0)
			k, v := make([]float32, kvDim), make([]float32, kvDim)
			for p := range tc.pos + tc.n {
				for i := range k {
					k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				}
				slot := p
				if tc.ring > 0 {
					slot = p % tc.ring
				}
				store.put(slot, k, v)
			}
			if tc.ring > 0 && tc.pos+tc.n-tc.window >= tc.ring {
				t.Fatalf("case %+v: the ring does not hold the window", tc)
			}
			q := make([]float32, tc.n*cfg.QDim())
			for i := range q {
				q[i] = float32(r.NormFloat64() * 3)
			}
			job := func() *attnJob {
				return &attnJob{m: &CPU{Config: cfg}, kv: store, ring: tc.ring, window: tc.window, pos: tc.pos, n: tc.n,
					q: q, out: make([]float32, len(q)), scale: 0.125, tiled: true,
					runM: make([]float32, tc.n*cfg.Heads), runS: make([]float32, tc.n*cfg.Heads)}
			}
			got, want := job(), job()
			got.Do(0, got.units())
			for u := range want.units() {
				tiledPairByPair(want, u/cfg.KVHeads, u%cfg.KVHeads)
			}
			for i := range want.out {
				if math.Float32bits(got.out[i]) != math.Float32bits(want.out[i]) {
					t.Fatalf("%s cache, %+v: out[%d] (token %d) = %g, pair by pair %g", kvType, tc, i, i/cfg.QDim(), got.out[i], want.out[i])
				}
			}
		}
	}
}

// A sink logit joins the softmax's denominator as a position without a
// value (gpt-oss's attn_sinks): the online path's output against a float64
// softmax over the same f16 keys and values, with the sink below and above
// every score, and with no position at all.
func TestOnlineSink(t *testing.T) {
	const hd, n = 64, 40
	r := rand.New(rand.NewPCG(3, 4))
	k, v := make([]uint16, hd*n), make([]uint16, hd*n)
	for i := range k {
		k[i] = tensor.ToF16(float32(r.NormFloat64()))
		v[i] = tensor.ToF16(float32(r.NormFloat64()))
	}
	q := make([]float32, hd)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	const scale = 0.125
	scores := make([]float64, n)
	top := math.Inf(-1)
	for p := range n {
		for i := range hd {
			scores[p] += float64(tensor.FromF16(k[p*hd+i])) * float64(tensor.RoundF16(q[i]))
		}
		scores[p] *= scale
		top = max(top, scores[p])
	}
	for _, sink := range []float32{noSink, float32(top - 3), float32(top + 2)} {
		want := make([]float64, hd)
		den := 0.0
		if sink != noSink {
			den = math.Exp(float64(sink) - top)
		}
		for p := range n {
			e := math.Exp(scores[p] - top)
			den += e
			for i := range hd {
				want[i] += e * float64(tensor.FromF16(v[p*hd+i]))
			}
		}
		for _, f := range []func(out, q []float32, kc, vc []uint16, off, stride int, segs []seg, scale, sink float32){onlineF16Go, onlineF16Blocked} {
			out := make([]float32, hd)
			f(out, q, k, v, 0, hd, []seg{{0, n}}, scale, sink)
			for i := range out {
				if d := math.Abs(float64(out[i]) - want[i]/den); d > 2e-3 {
					t.Fatalf("sink %v: out[%d] = %v, want %v", sink, i, out[i], want[i]/den)
				}
			}
		}
	}
	// No position (a window past everything) with a sink: zeros, as ggml.
	out := []float32{1, 2}
	if S := sinkCorrection(out, noSink, 0, 0.5); S != 1 || out[0] != 0 || out[1] != 0 {
		t.Errorf("sink over no position: sum %v, acc %v", S, out)
	}
}
