//go:build gc && !purego

package tensor

import "github.com/smolgo/smolgo/gguf"

// packSlab*AVX512 are packSlabGo for 32 whole rows (slab_amd64.s): n
// column pairs of F16 or BF16.
//
//go:noescape
func packSlabF16AVX512(slab, w *byte, rb, n int)

//go:noescape
func packSlabBF16AVX512(slab, w *byte, rb, n int)

//go:noescape
func packSlabPairsAVX512(slab, w *byte, rb, n int)

// packSlabASM packs 32 whole rows at w (rb bytes apart, k columns of type
// t, F16 or BF16) with AVX-512 and reports whether it could: k must be
// even.
func packSlabASM(slab, w []byte, t gguf.Type, rb, k int) bool {
	if !packedAVX512 || rb >= 1<<31 {
		return false
	}
	switch t {
	case gguf.TypeF16:
		if k%2 != 0 {
			return false
		}
		_, _ = slab[packRows*k*2-1], w[31*rb+2*k-1]
		packSlabF16AVX512(&slab[0], &w[0], rb, k/2)
	case gguf.TypeBF16:
		if k%2 != 0 {
			return false
		}
		_, _ = slab[packRows*k*4-1], w[31*rb+2*k-1]
		packSlabBF16AVX512(&slab[0], &w[0], rb, k/2)
	default:
		return false
	}
	return true
}

// packPairsASM packs 32 whole rows at w (rb bytes apart, k BF16 columns, k
// even) as column pairs with AVX-512 and reports whether it could.
func packPairsASM(slab, w []byte, rb, k int) bool {
	if !packedAVX512 || rb >= 1<<31 || k%2 != 0 {
		return false
	}
	_, _ = slab[packRows*k*2-1], w[31*rb+2*k-1]
	packSlabPairsAVX512(&slab[0], &w[0], rb, k/2)
	return true
}
