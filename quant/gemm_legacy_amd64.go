//go:build gc && !purego

package quant

import (
	"sync"

	"github.com/smolgo/smolgo/gguf"
)

// The prefill GEMM of the 32-quant types q4_0, q4_1, q5_0, q5_1, mxfp4 and
// q8_0 (AVX-512 and AVX2, but q8_0 AVX-512 only: gemm_legacy_avx512_amd64.s,
// gemm_legacy_avx2_amd64.s, written by gen_legacy.go).
//
// It is gemm_amd64.go's scheme for 32-quant blocks: legPack* unpacks 16
// weight rows into a panel (per call, in a pooled buffer) where one 64-byte
// vector holds four quants of each of the 16 rows, and VPDPBUSD meets it
// with four activation bytes broadcast from memory, so a block's integer
// sum lands in one lane per row with no horizontal reduction. The float
// steps then run per lane exactly as the Go twin's (d_w·d_a times the sum,
// plus m·s_a, added to the row's sum, in block order), so the GEMM gives
// the twin's bits: a token's result does not depend on the batch it came
// in.
//
// The activation side is read from the q8_0/q8_1 rows, with the per-block
// scales the micro-kernels broadcast prepared once per call (legPrep*):
// d_a as float32 and, for q8_1, s_a as float32. VPDPBUSD multiplies
// unsigned bytes by signed ones, so the panels of the types with one scale
// d hold their quants plus an offset, unsigned: q4_0's nibbles as they are
// (the value plus 8), q5_0's five bits (plus 16), q8_0's bytes XOR 0x80
// (plus 128), mxfp4's table values plus 12 (its panel's d is 2^(e-128) as
// float32); -offset·Σy, prepared as int32, starts each block's sum and
// takes the offset back, exactly. These four types share one set of
// micro-kernels (legGemmQ_0*). AVX2 has no VNNI: its kernels multiply with
// VPMADDUBSW, whose 16-bit pair sums would saturate on q8_0's 0..255, so
// q8_0 has no AVX2 GEMM.

// Panel layout of one 32-quant block of rows rows (16 with AVX-512, 8 with
// AVX2), and of the activation scales of one block of 8 tokens.
//
//	[8][rows][4]uint8   quants: dword k of row r at 4·rows·k + 4r
//	[rows]float32       d, at 32·rows
//	[rows]float32       m, at 36·rows (q4_1, q5_1)
const (
	legScaleLen = 64 // [8] float32 d_a, then [8] float32 s_a or int32 -offset·Σy
	// legGemmMinTokens is the smallest batch the GEMM takes: two tokens
	// already run about twice as fast as through the x2 kernel, four 2.3
	// times the x4 kernel's speed (BenchmarkLegacyGEMM, Zen 5, weights in
	// the L2 cache or memory alike), whose per-block reduction and scales a
	// few tokens cannot share; one token is a little faster through MatVec.
	// The results are the same bits either way.
	legGemmMinTokens = 2
)

//go:noescape
func legPackQ4_1AVX512(panel, w []byte, rb, nb int)

//go:noescape
func legPackQ5_0AVX512(panel, w []byte, rb, nb int)

//go:noescape
func legPackQ5_1AVX512(panel, w []byte, rb, nb int)

//go:noescape
func legPackQ4_0AVX512(panel, w []byte, rb, nb int)

//go:noescape
func legPackQ8_0AVX512(panel, w []byte, rb, nb int)

//go:noescape
func legPackMXFP4AVX512(panel, w []byte, rb, nb int)

//go:noescape
func legPackMXFP4AVX2(panel, w []byte, rb, nb int)

//go:noescape
func legGemmQ4_1AVX512x8(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ4_1AVX512x4(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ_0AVX512x8(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ_0AVX512x4(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX512x8(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX512x4(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ4_1AVX512x2(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ4_1AVX512x1(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ_0AVX512x2(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ_0AVX512x1(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX512x2(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX512x1(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legPackQ4_1AVX2(panel, w []byte, rb, nb int)

//go:noescape
func legPackQ5_0AVX2(panel, w []byte, rb, nb int)

//go:noescape
func legPackQ5_1AVX2(panel, w []byte, rb, nb int)

//go:noescape
func legPackQ4_0AVX2(panel, w []byte, rb, nb int)

//go:noescape
func legGemmQ4_1AVX2x4(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ4_1AVX2x2(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ4_1AVX2x1(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ_0AVX2x4(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ_0AVX2x2(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ_0AVX2x1(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX2x4(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX2x2(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX2x1(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legPrepQ8_0(a []byte, astride, nb, ntok int, scales []byte, off int)

//go:noescape
func legPrepQ8_1(a []byte, astride, nb, ntok int, scales []byte)

type legGemmKernel func(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

// legGemm is one type's GEMM at one level: its panel of rows rows, packer,
// scale preparation and micro-kernels of toks[i] tokens (largest first,
// then halving down to 1).
type legGemm struct {
	rows int
	pack func(panel, w []byte, rb, nb int)
	prep func(a []byte, astride, nb, ntok int, scales []byte)
	k    []legGemmKernel
	toks []int
}

// prepOffset prepares q8_0 activations' scales for panels that hold their
// quants plus off.
func prepOffset(off int) func(a []byte, astride, nb, ntok int, scales []byte) {
	return func(a []byte, astride, nb, ntok int, scales []byte) {
		legPrepQ8_0(a, astride, nb, ntok, scales, off)
	}
}

// legGemmSet returns level's GEMMs of the 32-quant types.
func legGemmSet(level isaLevel) map[gguf.Type]legGemm {
	if level >= levelAVX512 {
		t := []int{8, 4, 2, 1}
		q1 := []legGemmKernel{legGemmQ4_1AVX512x8, legGemmQ4_1AVX512x4, legGemmQ4_1AVX512x2, legGemmQ4_1AVX512x1}
		q0 := []legGemmKernel{legGemmQ_0AVX512x8, legGemmQ_0AVX512x4, legGemmQ_0AVX512x2, legGemmQ_0AVX512x1}
		q51 := []legGemmKernel{legGemmQ5_1AVX512x8, legGemmQ5_1AVX512x4, legGemmQ5_1AVX512x2, legGemmQ5_1AVX512x1}
		return map[gguf.Type]legGemm{
			gguf.TypeQ4_1:  {16, legPackQ4_1AVX512, legPrepQ8_1, q1, t},
			gguf.TypeQ5_0:  {16, legPackQ5_0AVX512, prepOffset(16), q0, t},
			gguf.TypeQ5_1:  {16, legPackQ5_1AVX512, legPrepQ8_1, q51, t},
			gguf.TypeQ4_0:  {16, legPackQ4_0AVX512, prepOffset(8), q0, t},
			gguf.TypeQ8_0:  {16, legPackQ8_0AVX512, prepOffset(128), q0, t},
			gguf.TypeMXFP4: {16, legPackMXFP4AVX512, prepOffset(12), q0, t},
		}
	}
	t := []int{4, 2, 1}
	q1 := []legGemmKernel{legGemmQ4_1AVX2x4, legGemmQ4_1AVX2x2, legGemmQ4_1AVX2x1}
	q0 := []legGemmKernel{legGemmQ_0AVX2x4, legGemmQ_0AVX2x2, legGemmQ_0AVX2x1}
	q51 := []legGemmKernel{legGemmQ5_1AVX2x4, legGemmQ5_1AVX2x2, legGemmQ5_1AVX2x1}
	return map[gguf.Type]legGemm{
		gguf.TypeQ4_1:  {8, legPackQ4_1AVX2, legPrepQ8_1, q1, t},
		gguf.TypeQ5_0:  {8, legPackQ5_0AVX2, prepOffset(16), q0, t},
		gguf.TypeQ5_1:  {8, legPackQ5_1AVX2, legPrepQ8_1, q51, t},
		gguf.TypeQ4_0:  {8, legPackQ4_0AVX2, prepOffset(8), q0, t},
		gguf.TypeMXFP4: {8, legPackMXFP4AVX2, prepOffset(12), q0, t},
	}
}

// legBuffers pools a call's panel and scales.
type legBuffers struct{ panel, scales []byte }

var legPool sync.Pool

// matMulLegacyGEMM builds the MatMulFunc of 32-quant type t: the GEMM for
// batches of legGemmMinTokens tokens or more and a panel's rows or more,
// small (the x kernels) for the rest. All tokens go through the panel, in
// groups of the largest micro-kernel and then of the smaller ones; a last
// panel of fewer rows overlaps the one before (its rows get the same bits
// twice).
func matMulLegacyGEMM(t gguf.Type, gm legGemm, small MatMulFunc) MatMulFunc {
	vt, _ := VecDotType(t)
	wb, ab := t.BlockBytes(), vt.BlockBytes()
	rows, pl := gm.rows, 40*gm.rows
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		nb := n / 32
		if nb <= 0 || n%32 != 0 || ntok < legGemmMinTokens || nrows < rows {
			small(n, w, nrows, a, ntok, out, ldo)
			return
		}
		rb, arb := nb*wb, nb*ab
		_, _ = w[nrows*rb-1], a[ntok*arb-1]
		_ = out[(ntok-1)*ldo+nrows-1]
		bufs, _ := legPool.Get().(*legBuffers)
		if bufs == nil {
			bufs = new(legBuffers)
		}
		gs := nb * legScaleLen // the scales of a group of 8 tokens
		groups := (ntok + 7) / 8
		if cap(bufs.panel) < nb*pl {
			bufs.panel = make([]byte, nb*pl)
		}
		if cap(bufs.scales) < groups*gs {
			bufs.scales = make([]byte, groups*gs)
		}
		panel, scales := bufs.panel[:nb*pl], bufs.scales[:groups*gs]
		gm.prep(a[:ntok*arb], arb, nb, ntok, scales)
		for r0 := 0; r0 < nrows; r0 += rows {
			r0 = min(r0, nrows-rows)
			gm.pack(panel, w[r0*rb:r0*rb+(rows-1)*rb+nb*wb], rb, nb)
			tok := 0
			for i, T := range gm.toks {
				for tok+T <= ntok {
					s := tok/8*gs + tok%8*4 // slot tok%8 of its group of 8
					gm.k[i](panel, nb, a[tok*arb:(tok+T)*arb], arb, scales[s:(tok/8+1)*gs], &out[tok*ldo+r0], 4*ldo)
					tok += T
					if i > 0 {
						break // the smaller kernels take what is left, once each
					}
				}
			}
		}
		legPool.Put(bufs)
	}
}
