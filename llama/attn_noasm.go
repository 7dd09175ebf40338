//go:build !gc || purego || !amd64

package llama

const haveF16Kernels = false

func dotF16x64(k *uint16, q *float32, n int) float32     { panic("llama: no f16 kernels") }
func madF16x8(acc *float32, v *uint16, s float32, n int) { panic("llama: no f16 kernels") }

func dotF32x8(a, b *float32, n int) float32     { panic("llama: no f32 kernels") }
func axpyF32x8(y, x *float32, a float32, n int) { panic("llama: no f32 kernels") }

func dotsF32x4(k *float32, np int, q *float32, hd int, out *float32, ostride int) {
	panic("llama: no f32 kernels")
}
func pvF32x64(out, v, w *float32, np, hd int) { panic("llama: no f32 kernels") }

func madSeqF16x64(acc *float32, v *uint16, stride int, vs, ms *float32, np, hd int) {
	panic("llama: no f16 kernels")
}

func dotsF16x64(k *uint16, stride, np int, q *float32, n int, scale float32, out *float32) {
	panic("llama: no f16 kernels")
}
