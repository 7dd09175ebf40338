//go:build !purego

package quant

import "golang.org/x/sys/cpu"

// quantQ8KAVX512 quantizes nb blocks of x to q8_K in dst (act_avx512_amd64.s).
//
//go:noescape
func quantQ8KAVX512(x []float32, dst []byte, nb int)

// hasQ8KAsm reports whether quantQ8KAVX512 may run on this CPU (read once).
var hasQ8KAsm = detectLevel() >= levelAVX512 && cpu.X86.HasAVX512BW

// quantizeQ8K fills dst with len(x)/256 q8_K blocks; the caller has checked
// the sizes.
func quantizeQ8K(x []float32, dst []byte, useAsm bool) {
	nb := len(x) / 256
	if useAsm && nb > 0 {
		quantQ8KAVX512(x[:nb*256], dst[:nb*292], nb)
		return
	}
	quantizeQ8KGo(x, dst)
}
