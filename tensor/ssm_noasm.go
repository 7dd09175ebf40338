//go:build !gc || purego || !amd64

package tensor

const haveSSMKernels = false

func ssmScanAVX2(y, s, x, B, C *float32, rows, n int, dA, dt float32) {
	panic("tensor: no ssm kernels")
}
