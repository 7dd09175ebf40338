//go:build gc && !purego

package quant

import "github.com/smolgo/smolgo/gguf"

// Assembly kernels (dot_neon_arm64.s), with the calling convention of the mv
// kernels in dot_asm.go. Each quantized weight type has a NEON variant
// (ARMv8.0) and a DotProd one (SDOT); f16, bf16 and f32 (rows of a multiple
// of 32) have one for both levels.

//go:noescape
func mvQ8_0NEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ8_0DotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4KNEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4KDotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ6KNEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ6KDotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5KNEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5KDotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4_0NEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4_0DotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvMXFP4NEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvMXFP4DotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ3KNEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ3KDotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ2KNEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ2KDotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvF16NEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvBF16NEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvF32NEON(w, a []byte, nb, nrows int, out []float32) float32

// One weight row times four activation rows (dot_x4_arm64.s, written by
// gen_arm64.go), with the calling convention of the x4 kernels in dot_asm.go.

//go:noescape
func matQ8_0NEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ8_0DotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4_0NEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4_0DotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matMXFP4NEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matMXFP4DotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4KNEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4KDotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5KNEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5KDotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ6KNEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ6KDotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

// matQ8_0I8MM2x4 and matQ4_0I8MM2x4 multiply two weight rows (wstride
// bytes apart) by four activation rows with SMMLA, storing
// out[t*ostride/4+r] (matMulBy2x4).
//
//go:noescape
func matQ8_0I8MM2x4(w []byte, wstride int, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4_0I8MM2x4(w []byte, wstride int, a []byte, astride, nb int, out *float32, ostride int)

type x2x4Kernel func(w []byte, wstride int, a []byte, astride, nb int, out *float32, ostride int)

// armKernels lists the mv kernels of each arm64 level.
var armKernels = map[isaLevel]map[gguf.Type]mvKernel{
	levelNEON: {
		gguf.TypeQ8_0:  mvQ8_0NEON,
		gguf.TypeQ4_0:  mvQ4_0NEON,
		gguf.TypeMXFP4: mvMXFP4NEON,
		gguf.TypeQ4_K:  mvQ4KNEON,
		gguf.TypeQ5_K:  mvQ5KNEON,
		gguf.TypeQ6_K:  mvQ6KNEON,
		gguf.TypeQ3_K:  mvQ3KNEON,
		gguf.TypeQ2_K:  mvQ2KNEON,
		gguf.TypeF16:   mvF16NEON,
		gguf.TypeBF16:  mvBF16NEON,
		gguf.TypeF32:   mvF32NEON,
	},
	levelDotProd: {
		gguf.TypeQ8_0:  mvQ8_0DotProd,
		gguf.TypeQ4_0:  mvQ4_0DotProd,
		gguf.TypeMXFP4: mvMXFP4DotProd,
		gguf.TypeQ4_K:  mvQ4KDotProd,
		gguf.TypeQ5_K:  mvQ5KDotProd,
		gguf.TypeQ6_K:  mvQ6KDotProd,
		gguf.TypeQ3_K:  mvQ3KDotProd,
		gguf.TypeQ2_K:  mvQ2KDotProd,
		gguf.TypeF16:   mvF16NEON,
		gguf.TypeBF16:  mvBF16NEON,
		gguf.TypeF32:   mvF32NEON,
	},
}

// armX4Kernels lists the four-token kernels of each arm64 level.
var armX4Kernels = map[isaLevel]map[gguf.Type]x4Kernel{
	levelNEON: {
		gguf.TypeQ8_0:  matQ8_0NEONx4,
		gguf.TypeQ4_0:  matQ4_0NEONx4,
		gguf.TypeMXFP4: matMXFP4NEONx4,
		gguf.TypeQ4_K:  matQ4KNEONx4,
		gguf.TypeQ5_K:  matQ5KNEONx4,
		gguf.TypeQ6_K:  matQ6KNEONx4,
	},
	levelDotProd: {
		gguf.TypeQ8_0:  matQ8_0DotProdx4,
		gguf.TypeQ4_0:  matQ4_0DotProdx4,
		gguf.TypeMXFP4: matMXFP4DotProdx4,
		gguf.TypeQ4_K:  matQ4KDotProdx4,
		gguf.TypeQ5_K:  matQ5KDotProdx4,
		gguf.TypeQ6_K:  matQ6KDotProdx4,
	},
}

// armPairKernels lists the two-row, four-token kernels of the i8mm level.
var armPairKernels = map[gguf.Type]x2x4Kernel{
	gguf.TypeQ8_0: matQ8_0I8MM2x4,
	gguf.TypeQ4_0: matQ4_0I8MM2x4,
}

// addArchKernels installs the assembly kernels of level into k: the mv
// kernels serve Dot and MatVec, the x4 kernels MatMul four tokens at a time
// (the last ntok%4 tokens go through MatVec token by token); the i8mm level
// adds, on top of the dotprod kernels, SMMLA ones that take two rows at a
// time.
func addArchKernels(k *kernelSet, level isaLevel) {
	base := min(level, levelDotProd)
	for t, kern := range armKernels[base] {
		k.dots[t] = asmDot(t, kern)
		k.matVecs[t] = asmMatVec(t, kern)
	}
	for t, kern := range armX4Kernels[base] {
		k.matMuls[t] = matMulBy4(t, kern, nil, k.matVecs[t])
	}
	if level >= levelI8MM {
		for t, kern := range armPairKernels {
			k.matMuls[t] = matMulBy2x4(t, kern, k.matMuls[t])
		}
	}
}

// matMulBy2x4 builds a MatMulFunc from a kernel that multiplies two weight
// rows by four activation rows. Like matMulBy4 it walks the weights in
// cache-sized panels; an odd last row and the last ntok%4 tokens go through
// by4, the MatMulFunc of one row at a time.
func matMulBy2x4(t gguf.Type, kernel x2x4Kernel, by4 MatMulFunc) MatMulFunc {
	vt, _ := VecDotType(t)
	bs, wb, ab := t.BlockSize(), t.BlockBytes(), vt.BlockBytes()
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		nb := n / bs
		even, tok4 := nrows&^1, ntok&^3
		if nb <= 0 || even == 0 || tok4 == 0 {
			by4(n, w, nrows, a, ntok, out, ldo)
			return
		}
		rb, arb := nb*wb, nb*ab
		_, _ = w[nrows*rb-1], a[ntok*arb-1]
		panel := max(2, (128<<10)/rb&^1)
		for r0 := 0; r0 < even; r0 += panel {
			r1 := min(r0+panel, even)
			for tok := 0; tok < tok4; tok += 4 {
				as := a[tok*arb : (tok+4)*arb]
				_ = out[(tok+3)*ldo+r1-1]
				for r := r0; r < r1; r += 2 {
					kernel(w[r*rb:(r+2)*rb], rb, as, arb, nb, &out[tok*ldo+r], 4*ldo)
				}
			}
		}
		if even < nrows {
			by4(n, w[even*rb:], 1, a, ntok, out[even:], ldo)
		}
		if tok4 < ntok {
			by4(n, w, even, a[tok4*arb:], ntok-tok4, out[tok4*ldo:], ldo)
		}
	}
}
