//go:build gc && !purego && (amd64 || arm64)

package quant

import "github.com/smolgo/smolgo/gguf"

// The Go side of the assembly kernels of every architecture. An mv kernel
// multiplies nrows consecutive weight rows of nb blocks each by one
// activation row of nb blocks (out[r] = row r · a) and returns the last
// row's result (with out nil and nrows 1 it computes one dot product and
// stores nothing, so a DotFunc allocates nothing); an x4 kernel multiplies
// one weight row by four activation rows astride bytes apart, storing the
// four results ostride bytes apart from out. The wrappers below check the
// slice lengths, so the assembly never reads or writes outside them, and
// never call it with nb or nrows zero.

type mvKernel func(w, a []byte, nb, nrows int, out []float32) float32

type x4Kernel func(w, a []byte, astride, nb int, out *float32, ostride int)

// kernelBlock is the unit an mv kernel works in: the type's block, or 32
// elements for the plain types f32, f16 and bf16 (whose kernels then need n
// to be a multiple of 32; other lengths use the Go twin).
func kernelBlock(t gguf.Type) (bs, wb, ab int) {
	vt, _ := VecDotType(t)
	bs, wb, ab = t.BlockSize(), t.BlockBytes(), vt.BlockBytes()
	if bs == 1 {
		bs, wb, ab = 32, 32*wb, 32*ab
	}
	return bs, wb, ab
}

// asmDot wraps an mv kernel as a DotFunc (one row).
func asmDot(t gguf.Type, kernel mvKernel) DotFunc {
	bs, wb, ab := kernelBlock(t)
	twin := genericDots[t]
	return func(n int, w, a []byte) float32 {
		nb := n / bs
		if nb <= 0 || n%bs != 0 {
			return twin(n, w, a)
		}
		return kernel(w[:nb*wb], a[:nb*ab], nb, 1, nil)
	}
}

// asmMatVec wraps an mv kernel as a MatVecFunc.
func asmMatVec(t gguf.Type, kernel mvKernel) MatVecFunc {
	bs, wb, ab := kernelBlock(t)
	slow := matVecByRows(t, genericDots[t])
	return func(n int, w, a []byte, out []float32) {
		nb := n / bs
		if nb <= 0 || n%bs != 0 {
			slow(n, w, a, out)
			return
		}
		if len(out) == 0 {
			return
		}
		kernel(w[:len(out)*nb*wb], a[:nb*ab], nb, len(out), out)
	}
}

// matMulBy4 builds a MatMulFunc from a kernel that multiplies one weight row
// by four activation rows, reusing each unpacked weight block four times.
// Like matMulByRows it walks the weights in cache-sized panels. Of the last
// ntok%4 tokens, two go through pair (the same kernel for two tokens) when
// there is one, and the rest through the MatVecFunc mv. Both kernels must
// give each token mv's bits, so a token's result does not depend on how
// many others share its pass.
func matMulBy4(t gguf.Type, kernel, pair x4Kernel, mv MatVecFunc) MatMulFunc {
	bs, wb, ab := kernelBlock(t)
	byRows := matMulByRows(t, mv) // rows that are not whole kernel blocks (f16: n%32 != 0)
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		nb := n / bs
		if nrows <= 0 || ntok <= 0 {
			return
		}
		if n%bs != 0 {
			byRows(n, w, nrows, a, ntok, out, ldo)
			return
		}
		if nb <= 0 {
			for tok := 0; tok < ntok; tok++ {
				clear(out[tok*ldo : tok*ldo+nrows])
			}
			return
		}
		rb, arb := nb*wb, nb*ab
		_, _ = w[nrows*rb-1], a[ntok*arb-1]
		panel := max(1, (128<<10)/rb)
		for r0 := 0; r0 < nrows; r0 += panel {
			r1 := min(r0+panel, nrows)
			tok := 0
			for ; tok+4 <= ntok; tok += 4 {
				as := a[tok*arb : (tok+4)*arb]
				_ = out[(tok+3)*ldo+r1-1]
				for r := r0; r < r1; r++ {
					kernel(w[r*rb:(r+1)*rb], as, arb, nb, &out[tok*ldo+r], 4*ldo)
				}
			}
			if pair != nil && tok+2 <= ntok {
				as := a[tok*arb : (tok+2)*arb]
				_ = out[(tok+1)*ldo+r1-1]
				for r := r0; r < r1; r++ {
					pair(w[r*rb:(r+1)*rb], as, arb, nb, &out[tok*ldo+r], 4*ldo) // ostride in bytes
				}
				tok += 2
			}
			for ; tok < ntok; tok++ {
				mv(n, w[r0*rb:r1*rb], a[tok*arb:(tok+1)*arb], out[tok*ldo+r0:tok*ldo+r1])
			}
		}
	}
}
