package tensor

import (
	"math"
	"sync"
)

// LayerNorm writes dst = (x − mean(x)) / √(var(x) + eps) · w + b, a BERT
// LayerNorm, rounding as ggml's CPU backend does (ggml_norm, then ggml_mul
// and ggml_add): the sum of x in float64, the mean rounded to float32; the
// centred values in float32, their squares summed in float64 and the
// variance rounded to float32; the scale 1/√(var + eps) in float32; then
// each product and sum rounded to float32 in that order. w or b may be nil
// (no scale, no shift). dst may alias x. len(dst) and len(x) must be equal.
func LayerNorm(dst, x, w, b []float32, eps float32) {
	n := len(x)
	dst = dst[:n]
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum) / float32(n)
	var sq float64
	for i, v := range x {
		c := v - mean
		dst[i] = c
		sq += float64(c * c)
	}
	scale := 1 / float32(math.Sqrt(float64(float32(sq/float64(n))+eps)))
	for i := range dst {
		dst[i] *= scale
	}
	if w != nil {
		w = w[:n]
		for i := range dst {
			dst[i] *= w[i]
		}
	}
	if b != nil {
		b = b[:n]
		for i := range dst {
			dst[i] += b[i]
		}
	}
}

// GELUs sets dst[i] = gelu(x[i]) as llama.cpp's CPU backend computes an
// ungated GELU (ggml_gelu): the float16 table of GEGLU looked up at the
// float16 rounding of x, 0 for x <= -10 and x itself for x >= 10. dst may
// alias x.
func GELUs(dst, x []float32) {
	x = x[:len(dst)]
	if n16 := len(x) &^ 15; packedAVX512 && n16 > 0 {
		geluF16x16(&dst[0], &x[0], &geluTablePadded()[0], n16)
		x, dst = x[n16:], dst[n16:]
	}
	t := geluTable()
	var bits [256]uint16
	for len(x) > 0 {
		c := min(len(x), len(bits))
		ToF16s(bits[:c], x[:c])
		for i, v := range x[:c] {
			switch {
			case v <= -10:
				dst[i] = 0
			case v >= 10:
				dst[i] = v
			default:
				dst[i] = FromF16(t[bits[i]])
			}
		}
		x, dst = x[c:], dst[c:]
	}
}

// geluTablePadded is geluTable with two more entries, so that the
// assembly's 4-byte gathers at 2-byte steps never read past it.
var geluTablePadded = sync.OnceValue(func() []uint16 {
	t := make([]uint16, 1<<16+2)
	copy(t, geluTable()[:])
	return t
})

// RoundF16s sets dst[i] = RoundF16(src[i]), 16 at a time where the CPU
// allows. dst may alias src.
func RoundF16s(dst, src []float32) { roundF16s(dst, src) }

// ToF16s sets dst[i] = ToF16(src[i]) for every i < len(src), 16 or 8 at a
// time (VCVTPS2PH) where the CPU allows: the same bits but for the payload
// of a NaN, which stays a NaN. dst must hold len(src) values.
func ToF16s(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n16 := 0
	if havePackedKernels {
		n16 = toF16sASM(dst, src)
	}
	for i := n16; i < len(src); i++ {
		dst[i] = ToF16(src[i])
	}
}
