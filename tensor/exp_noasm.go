//go:build !gc || purego || !amd64

package tensor

const haveExpKernels = false

func swigluAVX2(dst, gate, up *float32, n int) int  { panic("tensor: no exp kernels") }
func expShiftAVX2(x *float32, m float32, n int) int { panic("tensor: no exp kernels") }
