package llama

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tensor"
)

// randTokens returns n pseudo-random token ids below vocab (fixed seed).
func randTokens(n, vocab int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(vocab))
	}
	return out
}

func rmsDiff(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}

// runLogits prefills tokens in one batch (all rows) and then decodes the
// forced tokens one by one, returning every row of logits.
func runLogits(t *testing.T, m *CPU, typ KVType, tokens, forced []int32) []float32 {
	t.Helper()
	c := newCache(t, m, CacheOptions{KVType: typ})
	out := forward(t, m, c, tokens, true)
	for _, tok := range forced {
		out = append(out, forward(t, m, c, []int32{tok}, false)...)
	}
	return out
}

// A Q8_0 cache moves the logits of an F16 cache by no more than the golden
// tolerance of a quantized model (selfcheck.json: max abs 0.6, RMS 0.2),
// on a short prompt (the online attention path) and on a long one (the tiled
// path for the prefill, then decode steps over 600+ positions).
//
// The Q4_K_M model gets its own row of the table (0.9 / 0.2): its
// activations are quantized too, and llama.cpp's q8_0 cache moves its
// logits by up to 0.59 from its f16 one on the golden prompts.
func TestQ8CacheMatchesF16(t *testing.T) {
	cases := []struct {
		model          string
		layers, n      int
		tolMax, tolRMS float64
	}{
		{"smollm3-tinyq-F32", 8, 12, 0.6, 0.2},
		{"smollm3-tinyq-F32", 8, 600, 0.6, 0.2},
		{"smollm3-tinyq-Q4_K_M", 8, 12, 0.9, 0.2},
		{"smollm3-tinyq-Q4_K_M", 8, 600, 0.9, 0.2},
		{"smollm3-tinyyarn-F32", 4, 200, 0.6, 0.2},
	}
	for _, tc := range cases {
		tolMax, tolRMS := tc.tolMax, tc.tolRMS
		_, m := openModel(t, tc.model, Options{Threads: 2}, rope.EveryNth(tc.layers, 4))
		tokens := randTokens(tc.n, m.Config.Vocab, uint64(tc.n))
		forced := randTokens(16, m.Config.Vocab, 99)
		want := runLogits(t, m, KVF16, tokens, forced)
		got := runLogits(t, m, KVQ8_0, tokens, forced)
		dmax, drms := maxDiff(got, want), rmsDiff(got, want)
		t.Logf("%s, %d tokens + 16 decode steps: q8_0 vs f16 KV max %.4g, RMS %.4g", tc.model, tc.n, dmax, drms)
		if dmax > tolMax || drms > tolRMS {
			t.Errorf("%s, %d tokens: q8_0 KV logits differ from f16 KV by max %g, RMS %g (tolerance %g / %g)",
				tc.model, tc.n, dmax, drms, tolMax, tolRMS)
		}
		if dmax == 0 {
			t.Errorf("%s: q8_0 and f16 caches gave identical logits: the q8_0 path was not used", tc.model)
		}
	}
}

// The online Q8_0 attention is softmax(q·K/√d)·V over the cached (rounded)
// keys and values with q rounded to Q8_0: compare it with that formula in
// float64.
func TestOnlineQ8MatchesFormula(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-F32", Options{Threads: 1})
	c := newCache(t, m, CacheOptions{KVType: KVQ8_0})
	forward(t, m, c, randTokens(40, m.Config.Vocab, 7), false)
	hd := m.Config.HeadDim
	r := rand.New(rand.NewPCG(3, 4))
	q := make([]float32, hd)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	qq := make([]byte, hd/q8Block*q8Bytes)
	tensor.QuantizeQ8_0(qq, q)
	qr := make([]float32, hd)
	tensor.DequantizeQ8_0(qr, qq)
	scale := float32(1 / math.Sqrt(float64(hd)))
	for _, layer := range []int{0, 3} {
		for kvh := range m.Config.KVHeads {
			for _, kvLen := range []int{1, 17, 40} {
				got := make([]float32, hd)
				st := c.kv[layer].(*q8KV)
				st.online(got, qq, kvh, []seg{{0, kvLen}}, scale, noSink)
				// float64 reference
				k, v := make([]float32, hd), make([]float32, hd)
				s := make([]float64, kvLen)
				mx := math.Inf(-1)
				for p := range kvLen {
					tensor.DequantizeQ8_0(k, st.head(st.k, p, kvh))
					for i := range k {
						s[p] += float64(k[i]) * float64(qr[i])
					}
					s[p] *= float64(scale)
					mx = max(mx, s[p])
				}
				want := make([]float64, hd)
				var sum float64
				for p := range kvLen {
					w := math.Exp(s[p] - mx)
					sum += w
					tensor.DequantizeQ8_0(v, st.head(st.v, p, kvh))
					for i := range v {
						want[i] += w * float64(v[i])
					}
				}
				for i := range want {
					want[i] /= sum
					if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*(1+math.Abs(want[i])) {
						t.Fatalf("layer %d head %d len %d: out[%d] = %g, formula %g", layer, kvh, kvLen, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// A head size that is not a multiple of 32 cannot be cut into Q8_0 blocks.
func TestQ8CacheNeedsWholeBlocks(t *testing.T) {
	_, m := openModel(t, "llama-tiny-F32", Options{Threads: 1}) // head size 16
	if _, err := m.NewCache(CacheOptions{KVType: KVQ8_0}); err == nil {
		t.Error("q8_0 cache for head size 16: no error")
	}
}

// The cache's memory is what Config.KVBytes says, and a q8_0 cache takes
// 17/32 of an f16 one.
func TestKVMemory(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-F32", Options{Threads: 2})
	tokens := randTokens(300, m.Config.Vocab, 5)
	perTok := map[KVType]int64{}
	for _, typ := range []KVType{KVF32, KVF16, KVQ8_0} {
		c := newCache(t, m, CacheOptions{KVType: typ})
		if c.Bytes() != 0 {
			t.Errorf("%v: empty cache holds %d bytes", typ, c.Bytes())
		}
		forward(t, m, c, tokens, false)
		if c.Cap() < c.Len() || c.Cap() > 2*c.Len() {
			t.Errorf("%v: %d positions allocated for %d", typ, c.Cap(), c.Len())
		}
		if got, want := c.Bytes(), m.Config.KVBytes(typ, c.Cap()); got != want {
			t.Errorf("%v: cache holds %d bytes, KVBytes says %d", typ, got, want)
		}
		perTok[typ] = m.Config.KVBytes(typ, 1)
	}
	// 8 layers × 2 (K, V) × 128 values: f32 8192, f16 4096, q8_0 4 blocks × 34 × 16 = 2176.
	want := map[KVType]int64{KVF32: 8192, KVF16: 4096, KVQ8_0: 2176}
	for typ, w := range want {
		if perTok[typ] != w {
			t.Errorf("%v: %d bytes per token, want %d", typ, perTok[typ], w)
		}
	}
}

// SmolLM3-3B's shape with a 65,536-token q8_0 cache fits in 24 GB next to
// its Q4_K_M weights (bounded above as if every weight were q6_K).
func TestKVMemory3B(t *testing.T) {
	cfg := Config{Layers: 36, Embd: 2048, FFN: 11008, Heads: 16, KVHeads: 4, HeadDim: 128, Vocab: 128256}
	const ctx = 65536
	perTok := map[KVType]int64{KVF32: 147456, KVF16: 73728, KVQ8_0: 39168}
	for typ, w := range perTok {
		if got := cfg.KVBytes(typ, 1); got != w {
			t.Errorf("3B %v: %d bytes per token, want %d (36 layers × 2 × 512 values)", typ, got, w)
		}
	}
	q8, f16 := cfg.KVBytes(KVQ8_0, ctx), cfg.KVBytes(KVF16, ctx)
	if q8 != 2_566_914_048 || f16 != 4_831_838_208 {
		t.Errorf("64K context: q8_0 %d bytes, f16 %d bytes", q8, f16)
	}
	if float64(q8)/float64(f16) > 0.54 {
		t.Errorf("q8_0 cache is %.3f of f16, want about half", float64(q8)/float64(f16))
	}
	params := int64(cfg.Vocab*cfg.Embd) + int64(cfg.Layers)*int64(
		2*cfg.Embd*cfg.QDim()+2*cfg.Embd*cfg.KVDim()+3*cfg.Embd*cfg.FFN)
	weights := params * 6_5625 / 8_0000 // q6_K's 6.5625 bits: above Q4_K_M's mix of q4_K and q6_K
	// Work buffers of a 512-token batch: activations, FFN, all-row logits.
	buffers := int64(512) * int64(6*cfg.Embd+2*cfg.FFN+cfg.Vocab) * 4
	total := weights + q8 + buffers
	t.Logf("3B: %.2f G parameters, weights <= %.2f GB, 64K q8_0 KV %.2f GB (f16 %.2f GB), buffers %.2f GB, total %.2f GB",
		float64(params)/1e9, float64(weights)/1e9, float64(q8)/1e9, float64(f16)/1e9, float64(buffers)/1e9, float64(total)/1e9)
	if total > 24e9 {
		t.Errorf("3B with a 64K q8_0 context needs %d bytes, more than 24 GB", total)
	}
}

// BenchmarkKVMemory reports the KV cache memory per 1,000 tokens of
// SmolLM3-3B's shape for each cache type (arithmetic: no time is measured).
func BenchmarkKVMemory(b *testing.B) {
	cfg := Config{Layers: 36, KVHeads: 4, HeadDim: 128}
	for _, typ := range []KVType{KVF32, KVF16, KVQ8_0} {
		b.Run(typ.String(), func(b *testing.B) {
			for range b.N {
				_ = cfg.KVBytes(typ, 1000)
			}
			b.ReportMetric(float64(cfg.KVBytes(typ, 1000))/1e6, "MB/1Ktok-3B")
			b.ReportMetric(float64(cfg.KVBytes(typ, 65536))/1e9, "GB/64Ktok-3B")
		})
	}
}

// BenchmarkAttentionDecodeQ8 is BenchmarkAttentionDecode over a Q8_0 cache:
// one query head of 128 against 1,024 positions.
func BenchmarkAttentionDecodeQ8(b *testing.B) {
	const hd, n = 128, 1024
	st := newQ8KV(hd, hd)
	r := rand.New(rand.NewPCG(1, 1))
	k, v := make([]float32, hd*n), make([]float32, hd*n)
	for i := range k {
		k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	st.grow(n, 0)
	st.put(0, k, v)
	q, out := make([]float32, hd), make([]float32, hd)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	qq := make([]byte, hd/q8Block*q8Bytes)
	tensor.QuantizeQ8_0(qq, q)
	for b.Loop() {
		st.online(out, qq, 0, []seg{{0, n}}, 0.088, noSink)
	}
}

// hadamard is multiplication by Sylvester's orthonormal Walsh-Hadamard
// matrix (entry (i, j) = (-1)^popcount(i&j) / sqrt(n)), chunk by chunk, and
// is its own inverse.
func TestHadamard(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for _, n := range []int{64, 128} {
		x := make([]float32, 3*n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		y := append([]float32(nil), x...)
		hadamard(y, n)
		for c := 0; c < 3; c++ {
			for i := range n {
				var want float64
				for j := range n {
					s := 1.0
					if bits.OnesCount(uint(i&j))%2 == 1 {
						s = -1
					}
					want += s * float64(x[c*n+j])
				}
				want /= math.Sqrt(float64(n))
				if d := math.Abs(float64(y[c*n+i]) - want); d > 1e-5 {
					t.Fatalf("n %d chunk %d: y[%d] = %g, the matrix gives %g", n, c, i, y[c*n+i], want)
				}
			}
		}
		hadamard(y, n)
		if d := maxDiff(y, x); d > 1e-5 {
			t.Errorf("n %d: applying it twice is off the identity by %g", n, d)
		}
	}
	z := []float32{1, 2}
	hadamard(z, 0)
	if z[0] != 1 || z[1] != 2 {
		t.Error("hadamard(x, 0) changed x")
	}
}

// TestOnlineQ8BlockedMatchesGo checks the blocked decode attention over a
// Q8_0 cache against llama.cpp's one-position loop, bit for bit: head sizes
// 64 to 256, the middle of three KV heads, lengths around the block size,
// random keys and keys whose scores rise at every position (so the
// accumulator is rescaled each time).
func TestOnlineQ8BlockedMatchesGo(t *testing.T) {
	if !blockedDecode {
		t.Skip("no assembly kernels in tensor on this CPU or build (purego); onlineQ8Go is what runs")
	}
	r := rand.New(rand.NewPCG(31, 32))
	for _, hd := range []int{64, 128, 256} {
		const heads, n = 3, 700
		st := newQ8KV(heads*hd, hd)
		for _, shape := range []string{"random", "rising"} {
			kv := heads * hd
			k, v := make([]float32, kv*n), make([]float32, kv*n)
			q := make([]float32, hd)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			for i := range k {
				k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64()*100)
			}
			if shape == "rising" {
				for p := range n {
					for i := range hd {
						k[p*kv+hd+i] = q[i] * float32(p) / n * 4
					}
				}
			}
			st.release()
			st.grow(n, 0)
			st.put(0, k, v)
			qq := make([]byte, hd/q8Block*q8Bytes)
			tensor.QuantizeQ8_0(qq, q)
			for _, kvLen := range []int{1, 3, 255, 256, 257, 700} {
				want, got := make([]float32, hd), make([]float32, hd)
				st.onlineGo(make([]float32, hd), qq, 1, []seg{{0, kvLen}}, 0.088, noSink, want)
				st.onlineBlocked(make([]float32, hd), qq, 1, []seg{{0, kvLen}}, 0.088, noSink, got)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("hd %d, %s, %d positions: out[%d] = %g, Go loop %g", hd, shape, kvLen, i, got[i], want[i])
					}
				}
			}
		}
	}
}
