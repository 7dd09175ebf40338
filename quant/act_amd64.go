//go:build gc && !purego

package quant

// quantQ8KAVX512 quantizes nb blocks of x to q8_K in dst (act_avx512_amd64.s).
//
//go:noescape
func quantQ8KAVX512(x []float32, dst []byte, nb int)

// quantQ8KAVX2 is the AVX2 version (act_avx2_amd64.s).
//
//go:noescape
func quantQ8KAVX2(x []float32, dst []byte, nb int)

// quantQ8_0AVX512 and quantQ8_0AVX2 quantize nb blocks of x to q8_0.
//
//go:noescape
func quantQ8_0AVX512(x []float32, dst []byte, nb int)

//go:noescape
func quantQ8_0AVX2(x []float32, dst []byte, nb int)

// toF16AVX2 rounds n float32 (a positive multiple of 8) to float16 bits
// (act_avx2_amd64.s).
//
//go:noescape
func toF16AVX2(x []float32, dst []byte, n int)

// toF16 fills dst with the float16 bits of x, 8 at a time with F16C from
// level AVX2 on.
func toF16(x []float32, dst []byte, level isaLevel) {
	n8 := 0
	if level >= levelAVX2 {
		if n8 = len(x) &^ 7; n8 > 0 {
			toF16AVX2(x[:n8], dst[:2*n8], n8)
		}
	}
	toF16Go(x[n8:], dst[2*n8:])
}

// quantizeQ8_0 fills dst with len(x)/32 q8_0 blocks with the quantizer of
// level; the caller has checked the sizes.
func quantizeQ8_0(x []float32, dst []byte, level isaLevel) {
	nb := len(x) / 32
	switch {
	case nb == 0:
	case level >= levelAVX512:
		quantQ8_0AVX512(x[:nb*32], dst[:nb*34], nb)
	case level >= levelAVX2:
		quantQ8_0AVX2(x[:nb*32], dst[:nb*34], nb)
	default:
		quantizeQ8_0Go(x, dst)
	}
}

// q8KLevel is the kernel level of the activation quantizers on this CPU
// (read once).
var q8KLevel = detectLevel()

// quantizeQ8K fills dst with len(x)/256 q8_K blocks with the quantizer of
// level (the pure Go one below AVX2); the caller has checked the sizes.
func quantizeQ8K(x []float32, dst []byte, level isaLevel) {
	nb := len(x) / 256
	switch {
	case nb == 0:
	case level >= levelAVX512:
		quantQ8KAVX512(x[:nb*256], dst[:nb*292], nb)
	case level >= levelAVX2:
		quantQ8KAVX2(x[:nb*256], dst[:nb*292], nb)
	default:
		quantizeQ8KGo(x, dst)
	}
}
