package llama

import (
	"math"

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
// An f32 cache (KVF32) always takes the second, all-f32 route. This file
// holds the orchestration (which positions, the online softmax, the
// per-(token, head) work units); the dot products and accumulator updates
// are package tensor's attention kernels (DotF16, DotsF16, MadF16,
// MadSeqF16, DotF32, DotsF32x4, WeightedSumF32), in assembly where the CPU
// allows.

// tileKV is the KV tile width of the tiled path, and also the batch size
// from which llama.cpp switches to it.
const tileKV = 64

// maxStackHead is the largest head size served from stack buffers.
const maxStackHead = 256

type attnJob struct {
	m      *CPU
	kv     kvStore // the layer's keys and values
	ring   int     // the layer's ring size (0: slot = position)
	window int     // the layer's attention window (0: every earlier position)
	pos, n int
	bidi   bool // the n rows see each other both ways (Seq.Bidirectional)
	q, out []float32
	qq     []byte // KVQ8_0: the queries rounded to Q8_0 (q8KV.prepare)
	scale  float32
	tiled  bool
	runM   []float32 // tiled path: running max per (token, head)
	runS   []float32 // tiled path: running sum per (token, head)
	sinks  []float32 // per query head: its sink logit (Attention.Sinks), nil without
}

// noSink is the sink logit of a head without one.
var noSink = float32(math.Inf(-1))

// sink returns query head h's sink logit, or noSink.
func (j *attnJob) sink(h int) float32 {
	if j.sinks == nil {
		return noSink
	}
	return j.sinks[h]
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

// first is the first position a query at position p sees: 0, or the start
// of its window.
func (j *attnJob) first(p int) int {
	if j.window > 0 {
		return max(0, p-j.window+1)
	}
	return 0
}

// last is the last position a query at position p sees: p itself
// (causal), or the last row of the job when its rows attend both ways.
func (j *attnJob) last(p int) int {
	if j.bidi {
		return j.pos + j.n - 1
	}
	return p
}

// segs appends the slots of positions [lo, hi) to dst: one run, or two
// where a ring wraps.
func (j *attnJob) segs(dst []seg, lo, hi int) []seg {
	if j.ring == 0 {
		return append(dst, seg{lo, hi - lo})
	}
	for lo < hi {
		s := lo % j.ring
		n := min(hi-lo, j.ring-s)
		dst = append(dst, seg{s, n})
		lo += n
	}
	return dst
}

func (j *attnJob) Do(lo, hi int) {
	cfg := &j.m.Config
	hd, Q := cfg.HeadDim, cfg.QDim()
	group := cfg.Heads / cfg.KVHeads
	var segBuf [2]seg
	for u := lo; u < hi; u++ {
		if j.tiled {
			j.tiledBlock(u/cfg.KVHeads, u%cfg.KVHeads)
			continue
		}
		t, h := u/cfg.Heads, u%cfg.Heads
		q := j.q[t*Q+h*hd : t*Q+(h+1)*hd]
		out := j.out[t*Q+h*hd : t*Q+(h+1)*hd]
		p := j.pos + t // causal: positions first(p)..p (..last(p) both ways)
		var qq []byte
		if j.qq != nil {
			hb := hd / q8Block * q8Bytes
			qq = j.qq[(t*cfg.Heads+h)*hb : (t*cfg.Heads+h+1)*hb]
		}
		online(j.kv, out, q, qq, h/group, j.segs(segBuf[:0], j.first(p), j.last(p)+1), j.scale, j.sink(h))
	}
}

// onlineF16 is llama.cpp's flash-attention path for small batches over an
// f16 cache: one query head q against the positions of segs, in order, of
// the head at offset off (stride values between positions). The running
// max M, sum S and accumulator (kept in float16 precision, as llama.cpp's
// VKQ16) follow the positions in order; onlineF16Blocked computes exactly
// the same numbers faster.
func onlineF16(out, q []float32, kc, vc []uint16, off, stride int, segs []seg, scale, sink float32) {
	if hd := len(q); blockedDecode && hd%64 == 0 && hd <= maxStackHead {
		onlineF16Blocked(out, q, kc, vc, off, stride, segs, scale, sink)
		return
	}
	onlineF16Go(out, q, kc, vc, off, stride, segs, scale, sink)
}

// attnBlock is how many positions onlineF16Blocked scores at a time.
const attnBlock = 256

// blockedDecode is whether decode attention takes the blocked passes
// (onlineF16Blocked, q8KV.onlineBlocked), read once at start-up: only where
// package tensor runs its assembly kernels. Elsewhere the one-position loops
// run, as they always have: over tensor's Go twins the blocked passes give
// the loops' bits only where the compiler fuses no multiply-add, and on
// arm64 it does (in onlineF16Go, s := dot*scale followed by mold-s or s-M
// compiles to one FMSUBS or FNMSUBS; the blocked passes store the scores
// first), so the two differ there in the last bits.
var blockedDecode = tensor.Path() == "avx2"

// onlineF16Blocked is onlineF16Go reordered for speed, with bit-identical
// results: for each block of positions it first computes all the scores
// (independent dot products, tensor.DotsF16), then the running max and sum
// with the per-position factors ms (rescale of the accumulator at a new
// maximum) and vs (weight of the value row), and last the accumulator
// updates (tensor.MadSeqF16, which keeps the accumulator in registers).
// Every float operation is the one onlineF16Go does, in the same order per
// element.
func onlineF16Blocked(out, q []float32, kc, vc []uint16, off, stride int, segs []seg, scale, sink float32) {
	hd := len(q)
	var qbuf, accBuf [maxStackHead]float32
	var sc, ms, vs [attnBlock]float32
	qh, acc := qbuf[:hd], accBuf[:hd]
	for i, v := range q {
		qh[i] = tensor.RoundF16(v)
	}
	M := float32(math.Inf(-1))
	var S float32
	for _, g := range segs {
		for p0 := g.slot; p0 < g.slot+g.n; p0 += attnBlock {
			np := min(attnBlock, g.slot+g.n-p0)
			tensor.DotsF16(sc[:np], kc[p0*stride+off:], stride, qh, scale)
			M, S = onlineFactors(sc[:np], ms[:np], vs[:np], M, S)
			tensor.MadSeqF16(acc, vc[p0*stride+off:], stride, vs[:np], ms[:np])
		}
	}
	finishOnline(out, acc, M, S, sink)
}

// finishOnline writes the online softmax's result acc/S to out (zeros
// where no position was seen), after the head's sink logit joins the sum
// (sinkCorrection).
func finishOnline(out, acc []float32, M, S, sink float32) {
	S = sinkCorrection(acc, M, S, sink)
	inv := float32(0)
	if S != 0 {
		inv = 1 / S
	}
	for i := range out {
		out[i] = acc[i] * inv
	}
}

// sinkCorrection adds a sink logit to an online softmax's running max M
// and sum S as llama.cpp's flash attention does once every position is
// in: a sink above M rescales the accumulator acc and counts 1, else it
// counts e^(sink-M). It returns the new sum; noSink changes nothing.
func sinkCorrection(acc []float32, M, S, sink float32) float32 {
	if sink == noSink {
		return S
	}
	if sink > M {
		ms := expf(M - sink)
		for i := range acc {
			acc[i] *= ms
		}
		return S*ms + 1
	}
	return S + expf(sink-M)
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
func onlineF16Go(out, q []float32, kc, vc []uint16, off, stride int, segs []seg, scale, sink float32) {
	hd := len(q)
	var qbuf, accBuf [maxStackHead]float32
	qh, acc := qbuf[:], accBuf[:]
	if hd > maxStackHead {
		qh, acc = make([]float32, hd), make([]float32, hd)
	}
	qh, acc = qh[:hd], acc[:hd]
	for i, v := range q {
		qh[i] = tensor.RoundF16(v)
		acc[i] = 0
	}
	M := float32(math.Inf(-1))
	var S float32
	for _, g := range segs {
		for p := g.slot; p < g.slot+g.n; p++ {
			krow := kc[p*stride+off : p*stride+off+hd]
			s := tensor.DotF16(krow, qh) * scale
			ms, vs := float32(1), float32(1)
			if s > M {
				mold := M
				M = s
				ms = expf(mold - M)
				for i, a := range acc {
					acc[i] = tensor.RoundF16(a * ms)
				}
			} else {
				vs = expf(s - M)
			}
			tensor.MadF16(acc, vc[p*stride+off:p*stride+off+hd], vs)
			S = S*ms + vs
		}
	}
	finishOnline(out, acc, M, S, sink)
}

// tiledBlock attends query tile qt (tokens qt*64 ...) of the query heads
// that share KV head kvh, in f32 over tiles of tileKV positions: each KV tile
// is widened to f32 once, then every (token, head) pair of the block updates
// its running max, sum and output (online softmax at tile granularity). In a
// sliding-window layer the tiles start at the window of the block's first
// token, and each query skips the positions before its own window.
//
// The pairs are scored four at a time (tensor.DotsF32x4 loads each key once
// for the four queries), whatever the number of heads per KV head: a group
// of two (Qwen3) or three (Phi-4-mini) takes pairs of two tokens. Each
// score is the DotF32 of its key and query, and each pair's updates run in
// tile order, so the results are those of scoring the pairs one by one.
func (j *attnJob) tiledBlock(qt, kvh int) {
	cfg := &j.m.Config
	hd, Q := cfg.HeadDim, cfg.QDim()
	group := cfg.Heads / cfg.KVHeads
	t0, t1 := qt*tileKV, min((qt+1)*tileKV, j.n)
	var kb, vb, qb [tileKV * maxStackHead]float32
	kt, vt, qs := kb[:], vb[:], qb[:4*hd]
	if hd > maxStackHead {
		kt, vt, qs = make([]float32, tileKV*hd), make([]float32, tileKV*hd), make([]float32, 4*hd)
	}
	var sc [4 * tileKV]float32
	var segBuf [2]seg
	off := kvh * hd
	for t := t0; t < t1; t++ {
		for h := kvh * group; h < (kvh+1)*group; h++ {
			clear(j.out[t*Q+h*hd : t*Q+(h+1)*hd])
			j.runM[t*cfg.Heads+h] = float32(math.Inf(-1))
			j.runS[t*cfg.Heads+h] = 0
		}
	}
	kvEnd := j.last(j.pos+t1-1) + 1 // KV positions needed by the last token of the tile
	for k0 := j.first(j.pos + t0); k0 < kvEnd; k0 += tileKV {
		k1 := min(k0+tileKV, kvEnd)
		d := 0
		for _, g := range j.segs(segBuf[:0], k0, k1) {
			widen(j.kv, kt[d*hd:], vt[d*hd:], g.slot, g.n, off, hd)
			d += g.n
		}
		// The (token, head) pairs with positions in this tile, four at a
		// time; a last group of fewer repeats its last pair.
		var pairs [4]tilePair
		np := 0
		for i := 0; i < (t1-t0)*group; i++ {
			t, h := t0+i/group, kvh*group+i%group
			p := j.pos + t
			start, end := max(k0, j.first(p)), min(k1, j.last(p)+1) // window and causal mask
			if end <= start {
				continue
			}
			pairs[np] = tilePair{t, h, start, end}
			if np++; np == 4 {
				j.tilePairs(&pairs, &sc, qs, kt, vt, k0)
				np = 0
			}
		}
		if np > 0 {
			for i := np; i < 4; i++ {
				pairs[i] = pairs[np-1]
			}
			j.tilePairs(&pairs, &sc, qs, kt, vt, k0)
		}
	}
	for t := t0; t < t1; t++ {
		for h := kvh * group; h < (kvh+1)*group; h++ {
			out := j.out[t*Q+h*hd : t*Q+(h+1)*hd]
			S := sinkCorrection(out, j.runM[t*cfg.Heads+h], j.runS[t*cfg.Heads+h], j.sink(h))
			inv := float32(0)
			if S != 0 {
				inv = 1 / S
			}
			for i := range out {
				out[i] *= inv
			}
		}
	}
}

// tilePair is one (token, head) query of a KV tile and the positions of
// the tile it attends to, [start, end).
type tilePair struct{ t, h, start, end int }

// tilePairs scores the four pairs against the widened keys kt of the tile
// starting at position k0 (sc, qs: scratch), then updates each pair's
// running max, sum and output with its own positions. A pair repeated to
// fill the four is updated once.
//
// The four pairs' scalar steps (scaling and the tile's max, the sum of the
// exponentials) run side by side, four independent chains, each in its own
// positions' order: the bits of doing the pairs one after another, without
// waiting on each addition's latency.
func (j *attnJob) tilePairs(pairs *[4]tilePair, sc *[4 * tileKV]float32, qs, kt, vt []float32, k0 int) {
	cfg := &j.m.Config
	hd, Q := cfg.HeadDim, cfg.QDim()
	lo, hi := pairs[0].start, pairs[0].end
	for i, pr := range pairs {
		lo, hi = min(lo, pr.start), max(hi, pr.end)
		copy(qs[i*hd:(i+1)*hd], j.q[pr.t*Q+pr.h*hd:pr.t*Q+(pr.h+1)*hd])
	}
	tensor.DotsF32x4(sc[:], tileKV, kt[(lo-k0)*hd:(hi-k0)*hd], qs)
	var e [4][]float32
	n := tileKV // the positions all four pairs have
	for i, pr := range pairs {
		e[i] = sc[i*tileKV+pr.start-lo : i*tileKV+pr.end-lo]
		n = min(n, len(e[i]))
	}
	inf := float32(math.Inf(-1))
	tmax := [4]float32{inf, inf, inf, inf}
	e0, e1, e2, e3 := e[0][:n], e[1][:n], e[2][:n], e[3][:n]
	for k := range e0 {
		e0[k] *= j.scale
		e1[k] *= j.scale
		e2[k] *= j.scale
		e3[k] *= j.scale
		tmax[0], tmax[1] = max(tmax[0], e0[k]), max(tmax[1], e1[k])
		tmax[2], tmax[3] = max(tmax[2], e2[k]), max(tmax[3], e3[k])
	}
	var S, M [4]float32
	for i, pr := range pairs {
		for k := n; k < len(e[i]); k++ {
			e[i][k] *= j.scale
			tmax[i] = max(tmax[i], e[i][k])
		}
		r := pr.t*cfg.Heads + pr.h
		M[i] = max(j.runM[r], tmax[i])
		S[i] = j.runS[r]
		if M[i] != j.runM[r] { // a new max: rescale what the pair has
			ms := tensor.Expf(j.runM[r] - M[i])
			S[i] *= ms
			if i == 0 || pr != pairs[i-1] {
				out := j.out[pr.t*Q+pr.h*hd : pr.t*Q+(pr.h+1)*hd]
				for k := range out {
					out[k] *= ms
				}
			}
		}
		tensor.ExpShift(e[i], M[i]) // e^(s - M), vectorized
	}
	for k := range e0 {
		S[0] += e0[k]
		S[1] += e1[k]
		S[2] += e2[k]
		S[3] += e3[k]
	}
	for i, pr := range pairs {
		if i > 0 && pr == pairs[i-1] {
			break // the repeated last pair
		}
		for _, pv := range e[i][n:] {
			S[i] += pv
		}
		tensor.WeightedSumF32(j.out[pr.t*Q+pr.h*hd:pr.t*Q+(pr.h+1)*hd], vt[(pr.start-k0)*hd:], e[i])
		r := pr.t*cfg.Heads + pr.h
		j.runM[r], j.runS[r] = M[i], S[i]
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
