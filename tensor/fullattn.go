package tensor

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/smolgo/smolgo/gguf"
)

// FullAttentionScratch is the number of floats of scratch FullAttention
// needs for n keys of hd values.
func FullAttentionScratch(n, hd int) int {
	nk := (n + packRows - 1) / packRows * packRows
	hp := (hd + packRows - 1) / packRows * packRows
	return nk*hd + n*hp + packTile*nk + packTile*hd + packTile*packRows
}

// FullAttention is one head of an encoder's attention, in which every
// token of a sequence sees every other: for each of the nq query rows q_i
// (qs floats apart in q),
//
//	out_i = Σ_j softmax_j(q_i·k_j · scale) v_j
//
// over the n key and value rows (kvs floats apart in k and v), hd values
// each, written os floats apart in out. Keys and values must hold float16
// values (RoundF16s): llama.cpp's flash attention casts an encoder's keys
// and values to float16, having no cache to keep them in. Scores, softmax
// and sums are float32, as llama.cpp's tiled kernel for 64 queries or
// more.
//
// Both products run on the packed GEMM's micro-kernel (see Packed): the
// keys are copied into slabs of 32 keys (one slab column per element of a
// head), and the value rows, 32 elements wide, are slabs already; scores
// and outputs are FMA chains in index order, the weighted sum taken with
// exp(s - max) and divided by their sum at the end. scratch holds
// FullAttentionScratch(n, hd) floats. It runs on the calling goroutine
// (run many heads in parallel on a Pool).
//
// Without the packed kernels (no AVX-512) the products are DotF32 and
// AxpyF32 instead, the same sums in another order: the micro-kernel's Go
// twin, which gives its bits, is far too slow to run a model on.
func FullAttention(out []float32, os int, q []float32, qs, nq int, k, v []float32, kvs, n, hd int, scale float32, scratch []float32) error {
	mode := attnSlabs
	if !havePackedKernels {
		mode = attnDots
	}
	return fullAttention(out, os, q, qs, nq, k, v, kvs, n, hd, scale, scratch, mode)
}

// The ways fullAttention computes its products.
const (
	attnSlabs = iota // the packed micro-kernel (the assembly where the CPU has it, else its Go twin)
	attnDots         // DotF32 and AxpyF32, row by row
)

func fullAttention(out []float32, os int, q []float32, qs, nq int, k, v []float32, kvs, n, hd int, scale float32, scratch []float32, mode int) error {
	if n <= 0 || nq <= 0 || hd <= 0 {
		return fmt.Errorf("tensor: attention of %d queries over %d keys of %d values", nq, n, hd)
	}
	if len(scratch) < FullAttentionScratch(n, hd) {
		return fmt.Errorf("tensor: attention scratch of %d floats, want %d", len(scratch), FullAttentionScratch(n, hd))
	}
	if len(q) < (nq-1)*qs+hd || len(k) < (n-1)*kvs+hd || len(v) < (n-1)*kvs+hd || len(out) < (nq-1)*os+hd {
		return fmt.Errorf("tensor: attention buffers too short for %d queries and %d keys of %d values", nq, n, hd)
	}
	if mode == attnDots {
		attentionDots(out, os, q, qs, nq, k, v, kvs, n, hd, scale, scratch[:n])
		return nil
	}
	nk := (n + packRows - 1) / packRows * packRows
	hp := (hd + packRows - 1) / packRows * packRows
	ks, scratch := scratch[:nk*hd], scratch[nk*hd:]
	vs, scratch := scratch[:n*hp], scratch[n*hp:]
	sc, scratch := scratch[:packTile*nk], scratch[packTile*nk:]
	qt, scratch := scratch[:packTile*hd], scratch[packTile*hd:]
	tmp := scratch[:packTile*packRows]
	// Key slab b holds keys 32b..32b+31: element d of key 32b+l at
	// [b][d][l]; the keys past n are zero.
	clear(ks)
	for j := range n {
		b, l := j/packRows, j%packRows
		slab := ks[b*packRows*hd:]
		for d, x := range k[j*kvs : j*kvs+hd] {
			slab[d*packRows+l] = x
		}
	}
	// Value slab g holds elements 32g..32g+31 of every value row:
	// element 32g+l of row j at [g][j][l]; the elements past hd are zero.
	for g := range hp / packRows {
		slab := vs[g*n*packRows : (g+1)*n*packRows]
		lanes := min(packRows, hd-g*packRows)
		for j := range n {
			r := slab[j*packRows : (j+1)*packRows]
			copy(r, v[j*kvs+g*packRows:j*kvs+g*packRows+lanes])
			clear(r[lanes:])
		}
	}
	clear(sc)
	var inv [packTile]float32
	for i0 := 0; i0 < nq; i0 += packTile {
		ntok := min(packTile, nq-i0)
		x, xs := q[i0*qs:], qs
		if ntok < packTile || len(x) < (packTile-1)*qs+hd {
			clear(qt)
			for i := range ntok {
				copy(qt[i*hd:(i+1)*hd], q[(i0+i)*qs:(i0+i)*qs+hd])
			}
			x, xs = qt, hd
		}
		for b := range nk / packRows {
			floatKernel(ks[b*packRows*hd:(b+1)*packRows*hd], x, xs, hd, sc[b*packRows:], nk, ntok)
		}
		n8 := (n + 7) &^ 7 // ExpShift's vector loop takes 8 at a time
		for i := range ntok {
			s := sc[i*nk : i*nk+n8]
			m := float32(math.Inf(-1))
			for j := range s[:n] {
				v := s[j] * scale
				s[j] = v
				if v > m { // not max(): no NaN to propagate, and no branches for it
					m = v
				}
			}
			// The padding gets a value whose exponential is tiny but normal
			// (the vector path takes it; -Inf would send the group to the
			// slow one), and is then zeroed.
			for j := n; j < n8; j++ {
				s[j] = m - 64
			}
			ExpShift(s, m)
			clear(s[n:])
			var sum float32
			for _, e := range s[:n] {
				sum += e
			}
			inv[i] = 1 / sum
		}
		for g := range hp / packRows {
			slab := vs[g*n*packRows : (g+1)*n*packRows]
			lanes := min(packRows, hd-g*packRows)
			if lanes == packRows {
				floatKernel(slab, sc, nk, n, out[i0*os+g*packRows:], os, ntok)
				continue
			}
			floatKernel(slab, sc, nk, n, tmp, packRows, ntok)
			for i := range ntok {
				copy(out[(i0+i)*os+g*packRows:(i0+i)*os+g*packRows+lanes], tmp[i*packRows:])
			}
		}
		for i := range ntok {
			o := out[(i0+i)*os : (i0+i)*os+hd]
			for d := range o {
				o[d] *= inv[i]
			}
		}
	}
	return nil
}

// attentionDots is fullAttention's products one row at a time: scores by
// DotF32, the weighted sum by AxpyF32 in key order. s holds n floats.
func attentionDots(out []float32, os int, q []float32, qs, nq int, k, v []float32, kvs, n, hd int, scale float32, s []float32) {
	for i := range nq {
		qi := q[i*qs : i*qs+hd]
		m := float32(math.Inf(-1))
		for j := range s {
			x := DotF32(qi, k[j*kvs:j*kvs+hd]) * scale
			s[j] = x
			if x > m {
				m = x
			}
		}
		ExpShift(s, m)
		var sum float32
		for _, e := range s {
			sum += e
		}
		o := out[i*os : i*os+hd]
		clear(o)
		for j, e := range s {
			AxpyF32(o, v[j*kvs:j*kvs+hd], e)
		}
		inv := 1 / sum
		for d := range o {
			o[d] *= inv
		}
	}
}

// floatKernel is the packed micro-kernel over an F32 slab held in floats:
// 32 rows of k columns against 12 activation rows xs floats apart, ntok of
// them written os floats apart.
func floatKernel(w, x []float32, xs, k int, out []float32, os, ntok int) {
	wb := unsafe.Slice((*byte)(unsafe.Pointer(&w[:packRows*k][0])), packRows*k*4)
	packedKernel(gguf.TypeF32, wb, x, xs, k, out, os, ntok)
}
