package vision

import (
	"math"

	"github.com/smolgo/smolgo/tensor"
)

// The encoder's attention is llama.cpp's CPU flash attention over keys and
// values cast to float16 (clip.cpp casts them; the query stays float32), so
// that our rows agree with mtmd's to float noise. ggml takes one of two
// paths by the number of queries:
//
//   - 64 or more (and a head size that is a multiple of 8): tiles, the keys
//     and values widened back to float32, scores, softmax and the weighted
//     sum in float32 (tensor.FullAttention computes the same sums);
//   - fewer: one query at a time, rounded to float16, each score an
//     f16·f16 dot product, an online softmax, and the weighted sum of the
//     values kept in a float16 accumulator rounded after every key.
//
// A window (Qwen2.5-VL's window attention) limits each query to the keys
// of its own window; ggml masks the others out, which both paths skip.

// tiledMin is the number of queries from which ggml's flash attention
// takes its tiled path.
const tiledMin = 64

// attnJob is one attention call's work for the pool: units are heads
// (tiled) or (query, head) pairs (online).
type attnJob struct {
	n, heads, hd, E int
	q, k, v, out    []float32
	k16, v16        []uint16 // online: the keys and values as float16 bits
	win             []span   // per query: the keys it sees, [lo, hi); nil: all
	scale           float32
	tiled           bool
	scratch         []float32 // tiled: FullAttentionScratch per head
	per             int
	wins            []span // tiled with windows: the distinct windows, in order
	err             error
}

type span struct{ lo, hi int }

func (j *attnJob) Do(lo, hi int) {
	for u := lo; u < hi; u++ {
		if j.tiled {
			j.head(u)
			continue
		}
		t, h := u/j.heads, u%j.heads
		s := span{0, j.n}
		if j.win != nil {
			s = j.win[t]
		}
		onlineF16(j.out[t*j.E+h*j.hd:t*j.E+(h+1)*j.hd], j.q[t*j.E+h*j.hd:t*j.E+(h+1)*j.hd], j.k16, j.v16, h*j.hd, j.E, s, j.scale)
	}
}

// head runs the tiled path for one head, window by window.
func (j *attnJob) head(h int) {
	sc := j.scratch[h*j.per : (h+1)*j.per]
	wins := j.wins
	if wins == nil {
		wins = []span{{0, j.n}}
	}
	o := h * j.hd
	for _, w := range wins {
		m := w.hi - w.lo
		err := tensor.FullAttention(j.out[w.lo*j.E+o:], j.E, j.q[w.lo*j.E+o:], j.E, m,
			j.k[w.lo*j.E+o:], j.v[w.lo*j.E+o:], j.E, m, j.hd, j.scale, sc[:tensor.FullAttentionScratch(m, j.hd)])
		if err != nil && j.err == nil {
			j.err = err
		}
	}
}

// attention computes out (n rows of E = heads·hd) from q, k and v, each
// query over every key, or over its window's keys when wins (sorted,
// covering [0, n)) is not nil. It rounds k and v to float16 in place.
func (pr *Projector) attention(b *buffers, out, q, k, v []float32, n int, wins []span) error {
	p := &pr.p
	E, hd := p.embd, p.headDim
	j := &b.attn
	*j = attnJob{n: n, heads: p.heads, hd: hd, E: E, q: q, k: k, v: v, out: out,
		scale: float32(1 / math.Sqrt(float64(hd))), tiled: n >= tiledMin && hd%8 == 0}
	if j.tiled {
		tensor.RoundF16s(k[:n*E], k[:n*E])
		tensor.RoundF16s(v[:n*E], v[:n*E])
		longest := n
		if wins != nil {
			longest = 0
			for _, w := range wins {
				longest = max(longest, w.hi-w.lo)
			}
			j.wins = wins
		}
		j.per = tensor.FullAttentionScratch(longest, hd)
		b.sc = grow(b.sc, p.heads*j.per)
		j.scratch = b.sc
		pr.pool.Run(p.heads, 1, j)
	} else {
		b.k16 = growU16(b.k16, n*E)
		b.v16 = growU16(b.v16, n*E)
		tensor.ToF16s(b.k16[:n*E], k[:n*E])
		tensor.ToF16s(b.v16[:n*E], v[:n*E])
		j.k16, j.v16 = b.k16, b.v16
		if wins != nil {
			b.qwin = b.qwin[:0]
			for _, w := range wins {
				for range w.hi - w.lo {
					b.qwin = append(b.qwin, w)
				}
			}
			j.win = b.qwin
		}
		pr.pool.Run(n*p.heads, max(1, 64/max(1, n)), j)
	}
	err := j.err
	*j = attnJob{}
	return err
}

// onlineF16 is ggml's one-query flash attention over float16 keys and
// values: the head at offset off (stride values between positions) of the
// keys in s.
func onlineF16(out, q []float32, kc, vc []uint16, off, stride int, s span, scale float32) {
	hd := len(q)
	var qbuf, accBuf [256]float32
	qh, acc := qbuf[:], accBuf[:]
	if hd > len(qbuf) {
		qh, acc = make([]float32, hd), make([]float32, hd)
	}
	qh, acc = qh[:hd], acc[:hd]
	for i, x := range q {
		qh[i] = tensor.RoundF16(x)
		acc[i] = 0
	}
	M := float32(math.Inf(-1))
	var S float32
	for p := s.lo; p < s.hi; p++ {
		sc := tensor.DotF16(kc[p*stride+off:p*stride+off+hd], qh) * scale
		ms, vs := float32(1), float32(1)
		if sc > M {
			old := M
			M = sc
			ms = expf(old - M)
			for i, a := range acc {
				acc[i] = tensor.RoundF16(a * ms)
			}
		} else {
			vs = expf(sc - M)
		}
		tensor.MadF16(acc, vc[p*stride+off:p*stride+off+hd], vs)
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

// expf is the C library's expf: e^x correctly rounded to float32.
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

func growU16(b []uint16, n int) []uint16 {
	if cap(b) < n {
		return make([]uint16, n)
	}
	return b[:n]
}
