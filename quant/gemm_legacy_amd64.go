//go:build gc && !purego

package quant

import (
	"sync"

	"github.com/smolgo/smolgo/gguf"
)

// The prefill GEMM of the legacy types q4_1, q5_0 and q5_1 (AVX-512,
// gemm_legacy_avx512_amd64.s, written by gen_legacy.go).
//
// It is gemm_amd64.go's scheme for 32-quant blocks: legPack* unpacks 16
// weight rows into a panel (per call, in a pooled buffer) where one 64-byte
// vector holds four quants of each of the 16 rows, and VPDPBUSD meets it
// with four activation bytes broadcast from memory, so a block's integer
// sum lands in one lane per row with no horizontal reduction. The float
// steps then run per lane exactly as the Go twin's (d_w·d_a times the sum,
// plus m·s_a, added to the row's sum, in block order), so the GEMM gives
// the twin's bits, like the mv and x kernels: a token's result does not
// depend on the batch it came in.
//
// The activation side is read from the q8_0/q8_1 rows, with the per-block
// scales the micro-kernels broadcast prepared once per call (legPrep*):
// d_a as float32 and, for q8_1, s_a as float32; for q5_0, whose quants
// the panel holds plus 16 (0..31, unsigned for VPDPBUSD), -16·Σy as int32,
// which starts each block's sum.

// Panel layout of one 32-quant block of 16 rows, and of the activation
// scales of one block of 8 tokens.
const (
	legPanelLen = 640 // [8][16][4]uint8 quants (dword k of row r at 64k+4r), [16]float32 d at 512, [16]float32 m at 576
	legScaleLen = 64  // [8] float32 d_a, then [8] float32 s_a or int32 -16·Σy
	legRows     = 16
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
func legGemmQ4_1AVX512x8(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ4_1AVX512x4(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_0AVX512x8(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_0AVX512x4(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX512x8(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX512x4(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ4_1AVX512x2(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ4_1AVX512x1(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_0AVX512x2(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_0AVX512x1(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX512x2(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legGemmQ5_1AVX512x1(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

//go:noescape
func legPrepQ8_0AVX512(a []byte, astride, nb, ntok int, scales []byte)

//go:noescape
func legPrepQ8_1AVX512(a []byte, astride, nb, ntok int, scales []byte)

type legGemmKernel func(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)

// legGemm is one type's GEMM: its packer, scale preparation and 16-row
// micro-kernels of 8, 4, 2 and 1 tokens.
type legGemm struct {
	pack func(panel, w []byte, rb, nb int)
	prep func(a []byte, astride, nb, ntok int, scales []byte)
	k    [4]legGemmKernel // 8, 4, 2, 1 tokens
}

var legGemms = map[gguf.Type]legGemm{
	gguf.TypeQ4_1: {legPackQ4_1AVX512, legPrepQ8_1AVX512, [4]legGemmKernel{legGemmQ4_1AVX512x8, legGemmQ4_1AVX512x4, legGemmQ4_1AVX512x2, legGemmQ4_1AVX512x1}},
	gguf.TypeQ5_0: {legPackQ5_0AVX512, legPrepQ8_0AVX512, [4]legGemmKernel{legGemmQ5_0AVX512x8, legGemmQ5_0AVX512x4, legGemmQ5_0AVX512x2, legGemmQ5_0AVX512x1}},
	gguf.TypeQ5_1: {legPackQ5_1AVX512, legPrepQ8_1AVX512, [4]legGemmKernel{legGemmQ5_1AVX512x8, legGemmQ5_1AVX512x4, legGemmQ5_1AVX512x2, legGemmQ5_1AVX512x1}},
}

// legBuffers pools a call's panel and scales.
type legBuffers struct{ panel, scales []byte }

var legPool sync.Pool

// matMulLegacyGEMM builds the MatMulFunc of legacy type t: the GEMM for
// batches of legGemmMinTokens tokens or more and 16 rows or more, small
// (the x4 kernels) for the rest. All tokens go through the panel, in
// groups of 8 and then 4, 2 and 1; a last panel of fewer than 16 rows
// overlaps the one before (its rows get the same bits twice).
func matMulLegacyGEMM(t gguf.Type, gm legGemm, small MatMulFunc) MatMulFunc {
	vt, _ := VecDotType(t)
	wb, ab := t.BlockBytes(), vt.BlockBytes()
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		nb := n / 32
		if nb <= 0 || n%32 != 0 || ntok < legGemmMinTokens || nrows < legRows {
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
		if cap(bufs.panel) < nb*legPanelLen {
			bufs.panel = make([]byte, nb*legPanelLen)
		}
		if cap(bufs.scales) < groups*gs {
			bufs.scales = make([]byte, groups*gs)
		}
		panel, scales := bufs.panel[:nb*legPanelLen], bufs.scales[:groups*gs]
		gm.prep(a[:ntok*arb], arb, nb, ntok, scales)
		for r0 := 0; r0 < nrows; r0 += legRows {
			r0 = min(r0, nrows-legRows)
			gm.pack(panel, w[r0*rb:r0*rb+15*rb+nb*wb], rb, nb)
			tok := 0
			for ; tok+8 <= ntok; tok += 8 {
				gm.k[0](panel, nb, a[tok*arb:(tok+8)*arb], arb, scales[tok/8*gs:(tok/8+1)*gs], &out[tok*ldo+r0], 4*ldo)
			}
			for i, T := range [...]int{4, 2, 1} {
				if tok+T <= ntok {
					s := tok/8*gs + tok%8*4 // slot tok%8 of its group
					gm.k[i+1](panel, nb, a[tok*arb:(tok+T)*arb], arb, scales[s:(tok/8+1)*gs], &out[tok*ldo+r0], 4*ldo)
					tok += T
				}
			}
		}
		legPool.Put(bufs)
	}
}
