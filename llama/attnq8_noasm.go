//go:build !gc || purego || !amd64

package llama

func madQ8x32(acc *float32, blk *byte, s float32, nb int) { panic("llama: no q8_0 kernels") }

func madSeqQ8x64(acc *float32, v *byte, stride int, vs, ms *float32, np, hd int) {
	panic("llama: no q8_0 kernels")
}
