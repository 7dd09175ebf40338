//go:build gc && !purego

package tensor

import "github.com/smolgo/smolgo/internal/cpu"

// haveSSMKernels is read once at start-up: ssmScanAVX2 needs AVX2 and FMA
// (GODEBUG=cpu.avx2=off or the purego build tag leaves the Go code).
var haveSSMKernels = cpu.X86.AVX2

// ssmScanAVX2 is ssmScanGo for n (the state size) a positive multiple of
// 32 and rows channels, four 8-lane accumulators standing for ggml's 32
// lanes:
//
//	for i := range rows {
//		xdt := x[i] * dt
//		for k := range n {
//			s[i*n+k] = fma(s[i*n+k], dA, B[k]*xdt) // the product rounded first
//			lanes[k%32] = fma(s[i*n+k], C[k], lanes[k%32])
//		}
//		y[i] = reduce32(&lanes)
//	}
//
//go:noescape
func ssmScanAVX2(y, s, x, B, C *float32, rows, n int, dA, dt float32)
