package llama

import (
	"math"

	"github.com/x448/float16"

	"github.com/smolgo/smolgo/tensor"
)

// Attention mirrors llama.cpp's CPU flash-attention kernel
// (ggml_compute_forward_flash_attn_ext_f16), which is what llama.cpp runs by
// default, so that our logits agree with its to float noise:
//
//   - Fewer than 64 new tokens (decode, short prompts): the query is rounded
//     to f16, each score is an f16·f16 dot product summed in f32 in the
//     order of ggml's AVX-512 kernel, softmax is online (running max M and
//     sum S, expf), and the weighted sum of V lives in an f16 buffer rounded
//     after every KV position.
//   - 64 or more new tokens (a long prefill): tiles of 64 KV positions,
//     keys and values widened to f32, the query kept f32, per-tile softmax
//     with ggml's SIMD exp, V accumulated in f32.
//
// An f32 cache (KVF32) always takes the second, all-f32 route.

// tileKV is the KV tile width of the tiled path, and also the batch size
// from which llama.cpp switches to it.
const tileKV = 64

// maxStackHead is the largest head size served from stack buffers.
const maxStackHead = 256

type attnJob struct {
	m      *Model
	c      *Cache
	layer  int
	pos, n int
	q, out []float32
	qq     []byte // KVQ8_0: the queries rounded to Q8_0 (quantizeQueries)
	tiled  bool
	runM   []float32 // tiled path: running max per (token, head)
	runS   []float32 // tiled path: running sum per (token, head)
}

// units is the number of independent pieces of work: one per (token, head)
// for the online path, one per (64-token query tile, KV head) for the tiled
// path, where a tile of keys and values is widened once for all its queries.
func (j *attnJob) units() int {
	cfg := &j.m.Config
	if j.tiled {
		return (j.n + tileKV - 1) / tileKV * cfg.KVHeads
	}
	return j.n * cfg.Heads
}

func (j *attnJob) Do(lo, hi int) {
	cfg := &j.m.Config
	hd, Q, KV := cfg.HeadDim, cfg.QDim(), cfg.KVDim()
	group := cfg.Heads / cfg.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	for u := lo; u < hi; u++ {
		if j.tiled {
			j.tiledBlock(u/cfg.KVHeads, u%cfg.KVHeads, scale)
			continue
		}
		t, h := u/cfg.Heads, u%cfg.Heads
		q := j.q[t*Q+h*hd : t*Q+(h+1)*hd]
		out := j.out[t*Q+h*hd : t*Q+(h+1)*hd]
		off := (h / group) * hd
		kvLen := j.pos + t + 1 // causal: positions 0..pos+t
		if j.c.typ == KVQ8_0 {
			hb := hd / q8Block * q8Bytes
			j.c.onlineQ8(out, j.qq[(t*cfg.Heads+h)*hb:(t*cfg.Heads+h+1)*hb], j.layer, h/group, kvLen, scale)
			continue
		}
		onlineF16(out, q, j.c.k16[j.layer], j.c.v16[j.layer], off, KV, kvLen, scale)
	}
}

// onlineF16 is llama.cpp's flash-attention path for small batches over an
// f16 cache: one query head q against KV positions [0, kvLen) of the head at
// offset off (stride floats between positions). The running max M, sum S
// and accumulator (kept in float16 precision, as llama.cpp's VKQ16) follow
// the positions in order; onlineF16Blocked computes exactly the same numbers
// faster.
func onlineF16(out, q []float32, kc, vc []uint16, off, stride, kvLen int, scale float32) {
	if hd := len(q); haveF16Kernels && hd%64 == 0 && hd <= maxStackHead {
		onlineF16Blocked(out, q, kc, vc, off, stride, kvLen, scale)
		return
	}
	onlineF16Go(out, q, kc, vc, off, stride, kvLen, scale)
}

// attnBlock is how many positions onlineF16Blocked scores at a time.
const attnBlock = 256

// onlineF16Blocked is onlineF16Go reordered for speed, with bit-identical
// results: for each block of positions it first computes all the scores
// (independent dot products), then the running max and sum with the
// per-position factors ms (rescale of the accumulator at a new maximum) and
// vs (weight of the value row), and last the accumulator updates in
// assembly with the accumulator in registers. Every float operation is the
// one onlineF16Go does, in the same order per element.
func onlineF16Blocked(out, q []float32, kc, vc []uint16, off, stride, kvLen int, scale float32) {
	hd := len(q)
	var qbuf, accBuf [maxStackHead]float32
	var sc, ms, vs [attnBlock]float32
	qh, acc := qbuf[:hd], accBuf[:hd]
	for i, v := range q {
		qh[i] = roundF16(v)
	}
	M := float32(math.Inf(-1))
	var S float32
	for p0 := 0; p0 < kvLen; p0 += attnBlock {
		np := min(attnBlock, kvLen-p0)
		_ = kc[(p0+np-1)*stride+off+hd-1]
		dotsF16x64(&kc[p0*stride+off], stride, np, &qh[0], hd, scale, &sc[0])
		M, S = onlineFactors(sc[:np], ms[:np], vs[:np], M, S)
		_ = vc[(p0+np-1)*stride+off+hd-1]
		madSeqF16x64(&acc[0], &vc[p0*stride+off], stride, &vs[0], &ms[0], np, hd)
	}
	inv := float32(0)
	if S != 0 {
		inv = 1 / S
	}
	for i := range out {
		out[i] = acc[i] * inv
	}
}

// onlineFactors is the scalar step of the blocked online softmax: for each
// score in sc it sets ms[i], the factor that rescales the accumulator (not 1
// only at a new maximum), and vs[i], the weight of the value row, exactly as
// onlineF16Go's loop computes them, and returns the updated running max M
// and sum S.
func onlineFactors(sc, ms, vs []float32, M, S float32) (float32, float32) {
	for i, s := range sc {
		m, v := float32(1), float32(1)
		if s > M {
			mold := M
			M = s
			m = expf(mold - M)
		} else {
			v = expf(s - M)
		}
		ms[i], vs[i] = m, v
		S = S*m + v
	}
	return M, S
}

// onlineF16Go is the reference (and fallback) of onlineF16: the loop as
// llama.cpp writes it, one position at a time.
func onlineF16Go(out, q []float32, kc, vc []uint16, off, stride, kvLen int, scale float32) {
	hd := len(q)
	var qbuf, accBuf [maxStackHead]float32
	qh, acc := qbuf[:], accBuf[:]
	if hd > maxStackHead {
		qh, acc = make([]float32, hd), make([]float32, hd)
	}
	qh, acc = qh[:hd], acc[:hd]
	for i, v := range q {
		qh[i] = roundF16(v)
		acc[i] = 0
	}
	M := float32(math.Inf(-1))
	var S float32
	for p := range kvLen {
		krow := kc[p*stride+off : p*stride+off+hd]
		s := dotF16(krow, qh) * scale
		ms, vs := float32(1), float32(1)
		if s > M {
			mold := M
			M = s
			ms = expf(mold - M)
			for i, a := range acc {
				acc[i] = roundF16(a * ms)
			}
		} else {
			vs = expf(s - M)
		}
		madF16(acc, vc[p*stride+off:p*stride+off+hd], vs)
		S = S*ms + vs
	}
	inv := float32(0)
	if S != 0 {
		inv = 1 / S
	}
	for i := range out {
		out[i] = acc[i] * inv
	}
}

// tiledBlock attends query tile qt (tokens qt*64 ...) of the query heads
// that share KV head kvh, in f32 over tiles of tileKV positions: each KV tile
// is widened to f32 once, then every (token, head) pair of the block updates
// its running max, sum and output (online softmax at tile granularity).
func (j *attnJob) tiledBlock(qt, kvh int, scale float32) {
	cfg := &j.m.Config
	hd, Q, KV := cfg.HeadDim, cfg.QDim(), cfg.KVDim()
	group := cfg.Heads / cfg.KVHeads
	t0, t1 := qt*tileKV, min((qt+1)*tileKV, j.n)
	var kb, vb [tileKV * maxStackHead]float32
	kt, vt := kb[:], vb[:]
	if hd > maxStackHead {
		kt, vt = make([]float32, tileKV*hd), make([]float32, tileKV*hd)
	}
	var sc [4][tileKV]float32
	off := kvh * hd
	for t := t0; t < t1; t++ {
		for h := kvh * group; h < (kvh+1)*group; h++ {
			clear(j.out[t*Q+h*hd : t*Q+(h+1)*hd])
			j.runM[t*cfg.Heads+h] = float32(math.Inf(-1))
			j.runS[t*cfg.Heads+h] = 0
		}
	}
	kvEnd := j.pos + t1 // KV positions needed by the last token of the tile
	for k0 := 0; k0 < kvEnd; k0 += tileKV {
		k1 := min(k0+tileKV, kvEnd)
		for p := k0; p < k1; p++ {
			i, d := p*KV+off, (p-k0)*hd
			if j.c.typ == KVF32 {
				copy(kt[d:d+hd], j.c.k32[j.layer][i:i+hd])
				copy(vt[d:d+hd], j.c.v32[j.layer][i:i+hd])
				continue
			}
			ks, vs := j.c.k16[j.layer][i:i+hd], j.c.v16[j.layer][i:i+hd]
			for e := range hd {
				kt[d+e] = fromF16(ks[e])
				vt[d+e] = fromF16(vs[e])
			}
		}
		for t := t0; t < t1; t++ {
			end := min(k1, j.pos+t+1) // causal mask
			if end <= k0 {
				continue
			}
			np := end - k0
			for h0 := kvh * group; h0 < (kvh+1)*group; h0 += 4 {
				nh := min(4, (kvh+1)*group-h0)
				scoresF32(&sc, kt, j.q[t*Q+h0*hd:t*Q+(h0+nh)*hd], hd, np, nh, scale)
				for i := range nh {
					h := h0 + i
					out := j.out[t*Q+h*hd : t*Q+(h+1)*hd]
					e := sc[i][:np]
					tmax := float32(math.Inf(-1))
					for _, s := range e {
						tmax = max(tmax, s)
					}
					M, S := j.runM[t*cfg.Heads+h], j.runS[t*cfg.Heads+h]
					mnew := max(M, tmax)
					ms := tensor.Expf(M - mnew)
					S *= ms
					for i := range out {
						out[i] *= ms
					}
					tensor.ExpShift(e, mnew) // e^(s - mnew), vectorized
					for _, pv := range e {
						S += pv
					}
					weightedSum(out, vt, e)
					j.runM[t*cfg.Heads+h], j.runS[t*cfg.Heads+h] = mnew, S
				}
			}
		}
	}
	for t := t0; t < t1; t++ {
		for h := kvh * group; h < (kvh+1)*group; h++ {
			S := j.runS[t*cfg.Heads+h]
			inv := float32(0)
			if S != 0 {
				inv = 1 / S
			}
			out := j.out[t*Q+h*hd : t*Q+(h+1)*hd]
			for i := range out {
				out[i] *= inv
			}
		}
	}
}

// scoresF32 sets sc[i][p] = dotF32(key p, query i) * scale for nh <= 4
// queries (q holds them back to back) and np keys (k holds them back to
// back), all hd floats long. Four queries go through one kernel call that
// loads each key once; the sums are the same as dotF32's.
func scoresF32(sc *[4][tileKV]float32, k, q []float32, hd, np, nh int, scale float32) {
	if haveF16Kernels && nh == 4 && hd > 0 && hd%8 == 0 && np > 0 {
		_, _ = k[np*hd-1], q[4*hd-1]
		dotsF32x4(&k[0], np, &q[0], hd, &sc[0][0], tileKV*4)
		for i := range 4 {
			for p := range np {
				sc[i][p] *= scale
			}
		}
		return
	}
	for i := range nh {
		for p := range np {
			sc[i][p] = dotF32(k[p*hd:(p+1)*hd], q[i*hd:(i+1)*hd]) * scale
		}
	}
}

// weightedSum adds w[p]·(row p of v) to out for each p in order (rows of
// len(out) floats back to back), as len(w) axpyF32 calls would.
func weightedSum(out, v, w []float32) {
	hd := len(out)
	if haveF16Kernels && hd > 0 && hd%64 == 0 && len(w) > 0 {
		_ = v[len(w)*hd-1]
		pvF32x64(&out[0], &v[0], &w[0], len(w), hd)
		return
	}
	for p, pv := range w {
		axpyF32(out, v[p*hd:(p+1)*hd], pv)
	}
}

// dotF16 is ggml_vec_dot_f16 on AVX-512 for a key row k (f16) and a query
// already rounded to f16 (held as f32): 64 f32 lanes each accumulate every
// 64th product (exact, since f16·f16 fits in f32), the four 16-lane
// accumulators are added pairwise, then the 16 lanes are reduced as
// _mm512_reduce_add_ps does; leftover elements are added in float64.
func dotF16(k []uint16, q []float32) float32 {
	if n := len(q); haveF16Kernels && n > 0 && n%64 == 0 && len(k) >= n {
		return dotF16x64(&k[0], &q[0], n)
	}
	return dotF16Go(k, q)
}

// dotF16Go is the reference (and fallback) of dotF16.
func dotF16Go(k []uint16, q []float32) float32 {
	n := len(q)
	k = k[:n]
	np := n &^ 63
	if np == 0 {
		var s float64
		for i := range n {
			s += float64(fromF16(k[i]) * q[i])
		}
		return float32(s)
	}
	var lanes [64]float32
	for i := 0; i < np; i += 64 {
		kk, qq := k[i:i+64], q[i:i+64]
		for l := range 64 {
			lanes[l] += fromF16(kk[l]) * qq[l]
		}
	}
	var r [16]float32
	for i := range 16 {
		r[i] = (lanes[i] + lanes[32+i]) + (lanes[16+i] + lanes[48+i])
	}
	var t3 [8]float32
	for i := range 8 {
		t3[i] = r[i+8] + r[i]
	}
	var t6 [4]float32
	for i := range 4 {
		t6[i] = t3[i+4] + t3[i]
	}
	sum := float64((t6[0] + t6[2]) + (t6[1] + t6[3]))
	for i := np; i < n; i++ {
		sum += float64(fromF16(k[i]) * q[i])
	}
	return float32(sum)
}

// dotF32 is the f32 dot product of the tiled path: eight FMA lanes (one
// AVX register) reduced pairwise, then the tail.
func dotF32(a, b []float32) float32 {
	n8 := len(a) &^ 7
	if haveF16Kernels && n8 > 0 && len(b) >= len(a) {
		s := dotF32x8(&a[0], &b[0], n8)
		for i := n8; i < len(a); i++ {
			s = fma32(a[i], b[i], s)
		}
		return s
	}
	return dotF32Go(a, b)
}

// dotF32Go is the reference (and fallback) of dotF32.
func dotF32Go(a, b []float32) float32 {
	b = b[:len(a)]
	n8 := len(a) &^ 7
	var l [8]float32
	for i := 0; i < n8; i += 8 {
		for j := range 8 {
			l[j] = fma32(a[i+j], b[i+j], l[j])
		}
	}
	t0, t1, t2, t3 := l[0]+l[4], l[1]+l[5], l[2]+l[6], l[3]+l[7]
	s := (t0 + t2) + (t1 + t3)
	for i := n8; i < len(a); i++ {
		s = fma32(a[i], b[i], s)
	}
	return s
}

// axpyF32 sets y[i] = fma(x[i], a, y[i]).
func axpyF32(y, x []float32, a float32) {
	n8 := len(y) &^ 7
	if haveF16Kernels && n8 > 0 && len(x) >= len(y) {
		axpyF32x8(&y[0], &x[0], a, n8)
		for i := n8; i < len(y); i++ {
			y[i] = fma32(x[i], a, y[i])
		}
		return
	}
	axpyF32Go(y, x, a)
}

// axpyF32Go is the reference (and fallback) of axpyF32.
func axpyF32Go(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] = fma32(x[i], a, y[i])
	}
}

// expf is e^x rounded to float32, like the C library's expf (correctly
// rounded in all but astronomically rare cases): e^x = 2^(k/64) · e^r with
// k = round(x·64/ln 2) and |r| <= ln2/128, 2^(j/64) from a table and e^r
// from a degree-5 polynomial, all in float64 (relative error about 1e-16),
// then rounded once. It returns the same bits as float32(math.Exp(float64(x)))
// (TestExpf checks a million inputs) in a fraction of the time.
func expf(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > 88.8:
		return float32(math.Inf(1))
	case x < -104:
		return 0
	}
	const (
		n        = 64
		invLn2N  = n / math.Ln2
		ln2hiByN = 6.93147180369123816490e-01 / n
		ln2loByN = 1.90821492927058770002e-10 / n
	)
	xf := float64(x)
	k := math.Floor(xf*invLn2N + 0.5)
	r := (xf - k*ln2hiByN) - k*ln2loByN
	p := ((((r*(1/120.0)+1/24.0)*r+1/6.0)*r+0.5)*r+1)*r + 1
	ki := int64(k)
	scale := math.Float64frombits(uint64((ki>>6)+1023) << 52)
	return float32(p * exp2Table[ki&(n-1)] * scale)
}

// exp2Table[j] = 2^(j/64), filled once at start-up.
var exp2Table = func() (t [64]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 64)
	}
	return t
}()

func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

func toF16(x float32) uint16   { return float16.Fromfloat32(x).Bits() }
func fromF16(h uint16) float32 { return f16Table[h] }

// f16Table widens every float16 bit pattern to float32 (exact). It is
// filled once at start-up and only read afterwards.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = float16.Frombits(uint16(i)).Float32()
	}
	return &t
}()

// roundF16 rounds x to the nearest float16 value (ties to even) and returns
// it as float32: float16(x) widened back. Values in float16's normal range
// take a fast path that rounds the float32 significand to 10 bits in place;
// zeros, subnormals, overflow and NaN go through the exact conversion.
func roundF16(x float32) float32 {
	b := math.Float32bits(x)
	if e := (b >> 23) & 0xff; e-(127-14) <= 29 { // e in [113, 142]: a normal float16
		b += 0xfff + (b>>13)&1 // round to nearest even at bit 13
		b &^= 0x1fff
		if (b>>23)&0xff <= 127+15 {
			return math.Float32frombits(b)
		}
	}
	return roundF16Slow(x)
}

// madF16 is ggml_vec_mad_f16 for an accumulator held as float16 values in
// float32: acc[i] = float16(fma(v[i], s, acc[i])), the rounding of roundF16
// written out so that the loop has no calls on its fast path.
func madF16(acc []float32, v []uint16, s float32) {
	if n := len(acc); haveF16Kernels && n > 0 && n%8 == 0 && len(v) >= n {
		madF16x8(&acc[0], &v[0], s, n)
		return
	}
	madF16Go(acc, v, s)
}

// madF16Go is the reference (and fallback) of madF16.
func madF16Go(acc []float32, v []uint16, s float32) {
	v = v[:len(acc)]
	for i, a := range acc {
		y := float32(math.FMA(float64(f16Table[v[i]]), float64(s), float64(a)))
		b := math.Float32bits(y)
		if e := (b >> 23) & 0xff; e-(127-14) <= 29 {
			b += 0xfff + (b>>13)&1
			b &^= 0x1fff
			if (b>>23)&0xff <= 127+15 {
				acc[i] = math.Float32frombits(b)
				continue
			}
		}
		acc[i] = roundF16Slow(y)
	}
}

func roundF16Slow(x float32) float32 {
	if math.Float32bits(x)<<1 == 0 {
		return x // ±0
	}
	return fromF16(toF16(x))
}
