//go:build !gc || purego || !amd64

package tensor

// Without the assembly (other architectures, gccgo, the purego tag) every
// attention and KV kernel runs its Go twin; these are never called.

const haveAttnKernels = false

const attnAVX512 = false

func dotF16x64(k *uint16, q *float32, n int) float32 { panic("tensor: no f16 kernels") }

func dotsF16x64(k *uint16, stride, np int, q *float32, n int, scale float32, out *float32) {
	panic("tensor: no f16 kernels")
}

func madF16x8(acc *float32, v *uint16, s float32, n int) { panic("tensor: no f16 kernels") }

func madSeqF16x64(acc *float32, v *uint16, stride int, vs, ms *float32, np, hd int) {
	panic("tensor: no f16 kernels")
}

func dotF32x8(a, b *float32, n int) float32 { panic("tensor: no f32 kernels") }

func dotsF32x4x8(k *float32, np int, q *float32, hd int, out *float32, ostride int) {
	panic("tensor: no f32 kernels")
}

func axpyF32x8(y, x *float32, a float32, n int) { panic("tensor: no f32 kernels") }

func pvF32x64(out, v, w *float32, np, hd int) { panic("tensor: no f32 kernels") }

func madQ8x32(acc *float32, blk *byte, s float32, nb int) { panic("tensor: no q8_0 kernels") }

func madSeqQ8x64(acc *float32, v *byte, stride int, vs, ms *float32, np, hd int) {
	panic("tensor: no q8_0 kernels")
}

func dotsF32x4x8AVX512(k *float32, np int, q *float32, hd int, out *float32, ostride int) {
	panic("tensor: no f32 kernels")
}

func pvF32x128AVX512(out, v, w *float32, np, hd int) { panic("tensor: no f32 kernels") }
