package tensor

import (
	"fmt"
	"math"
	"sync"
)

// RMSNorm writes dst[i] = (x[i] * scale) * w[i] with
// scale = 1 / sqrt(mean(x²) + eps), rounding like ggml's CPU backend: each
// square is rounded to float32 and summed in float64, the mean is rounded to
// float32, eps is added and the square root taken in float32, and both
// products are rounded to float32 in that order. dst may alias x.
// len(x), len(w) and len(dst) must be equal.
func RMSNorm(dst, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(float32(v * v))
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	w = w[:len(x)]
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = float32(v*scale) * w[i]
	}
}

// RMSNormRows applies RMSNorm to each of the len(x)/len(w) rows of x (len(w)
// values each) into the same rows of dst, which may be x: RMSNorm's bits
// for every row. Four rows' sums of squares run side by side, four
// independent chains of float64 additions, each in its row's order: the
// sum is a chain of dependent additions, so one row alone waits on each
// addition's latency, and four rows fill those waits.
func RMSNormRows(dst, x, w []float32, eps float32) {
	d := len(w)
	rows := len(x) / d
	r := 0
	for ; r+4 <= rows; r += 4 {
		x0, x1, x2, x3 := x[r*d:(r+1)*d], x[(r+1)*d:(r+2)*d], x[(r+2)*d:(r+3)*d], x[(r+3)*d:(r+4)*d]
		var s0, s1, s2, s3 float64
		for i := range x0 {
			s0 += float64(float32(x0[i] * x0[i]))
			s1 += float64(float32(x1[i] * x1[i]))
			s2 += float64(float32(x2[i] * x2[i]))
			s3 += float64(float32(x3[i] * x3[i]))
		}
		for k, sum := range [4]float64{s0, s1, s2, s3} {
			mean := float32(sum / float64(d))
			scale := 1 / float32(math.Sqrt(float64(mean+eps)))
			row, out := x[(r+k)*d:(r+k+1)*d], dst[(r+k)*d:(r+k+1)*d]
			for i, v := range row {
				out[i] = float32(v*scale) * w[i]
			}
		}
	}
	for ; r < rows; r++ {
		RMSNorm(dst[r*d:(r+1)*d], x[r*d:(r+1)*d], w, eps)
	}
}

// Add sets dst[i] += x[i].
func Add(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += x[i]
	}
}

// Scale sets x[i] *= s.
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// SwiGLU sets dst[i] = silu(gate[i]) * up[i] with silu(x) = x / (1 + e^-x),
// using Expf (ggml's vectorized exp) like llama.cpp's fused swiglu. dst may
// alias gate or up. On CPUs with AVX2 and FMA eight lanes run at once with
// the same operations, so the result does not depend on the path.
func SwiGLU(dst, gate, up []float32) {
	gate = gate[:len(dst)]
	up = up[:len(dst)]
	i, n8 := 0, len(dst)&^7
	for haveExpKernels && i < n8 {
		i += swigluAVX2(&dst[i], &gate[i], &up[i], n8-i)
		if i < n8 { // a group of eight for the slow path
			swigluGo(dst[i:i+8], gate[i:i+8], up[i:i+8])
			i += 8
		}
	}
	swigluGo(dst[i:], gate[i:], up[i:])
}

// swigluGo is SwiGLU one element at a time: the reference.
func swigluGo(dst, gate, up []float32) {
	gate = gate[:len(dst)]
	up = up[:len(dst)]
	for i, g := range gate {
		dst[i] = float32(g/(1+Expf(-g))) * up[i]
	}
}

// GEGLU sets dst[i] = gelu(gate[i]) * up[i] with ggml's GELU: the tanh
// approximation 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))) looked up in a
// table of its float16 values at the float16 rounding of x, 0 for x <= -10
// and x itself for x >= 10, as llama.cpp's CPU backend computes it. dst may
// alias gate or up.
func GEGLU(dst, gate, up []float32) {
	gate = gate[:len(dst)]
	up = up[:len(dst)]
	t := geluTable()
	for i, x := range gate {
		switch {
		case x <= -10:
			dst[i] = 0
		case x >= 10:
			dst[i] = x * up[i]
		default:
			dst[i] = FromF16(t[ToF16(x)]) * up[i]
		}
	}
}

// GELU is ggml's GELU of one value, computed (not looked up) in float32:
// the reference the table behind GEGLU is made from.
func GELU(x float32) float32 {
	const (
		coefA       = float32(0.044715)
		sqrt2OverPi = float32(0.79788456080286535587989211986876)
	)
	inner := float32(sqrt2OverPi*x) * (1 + float32(float32(coefA*x)*x))
	return float32(0.5*x) * (1 + float32(math.Tanh(float64(inner))))
}

// geluTable holds GELU's float16 value at every float16 input, made on
// first use (128 KiB, read-only, shared).
var geluTable = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for i := range t {
		t[i] = ToF16(GELU(FromF16(uint16(i))))
	}
	return &t
})

// ExpShift sets x[i] = Expf(x[i] - m), the exponentials of softmax
// (m is usually the maximum of x), eight lanes at a time where the CPU
// allows, with the same results as the one-at-a-time loop.
func ExpShift(x []float32, m float32) {
	i, n8 := 0, len(x)&^7
	for haveExpKernels && i < n8 {
		i += expShiftAVX2(&x[i], m, n8-i)
		if i < n8 {
			expShiftGo(x[i:i+8], m)
			i += 8
		}
	}
	expShiftGo(x[i:], m)
}

func expShiftGo(x []float32, m float32) {
	for i, v := range x {
		x[i] = Expf(v - m)
	}
}

// Softmax replaces x with exp(x - max) / sum, the sum accumulated in
// float64. It returns an error only for an empty slice.
func Softmax(x []float32) error {
	if len(x) == 0 {
		return fmt.Errorf("tensor: softmax of an empty vector")
	}
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	var sum float64
	for i, v := range x {
		e := Expf(v - m)
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
	return nil
}

// Expf is e^x in float32, computed exactly as ggml's AVX-512 ggml_v_expf
// (an ARM optimized-routines polynomial, error at most 1.45 ulp + 0.5 ulp),
// one lane at a time. llama.cpp uses it in SiLU and softmax, so using the
// same approximation keeps our activations bit-compatible.
func Expf(x float32) float32 {
	const r = 0x1.8p23
	z := fma32(x, 0x1.715476p+0, r)
	n := z - r
	b := fnma32(n, 0x1.7f7d1cp-20, fnma32(n, 0x1.62e4p-1, x))
	u := b * b
	j := fma32(
		fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)),
		u,
		fma32(0x1.ffffecp-1, b, 1))
	if n > 192 {
		return float32(math.Inf(1))
	}
	if n < -192 || x != x {
		if x != x {
			return x
		}
		return 0
	}
	// scalef: j · 2^n, rounded once to float32 (also into the subnormal
	// range). When 2^n is a normal float32 the float32 product is that
	// single rounding; the extremes take the float64 route.
	if e := int32(n); e >= -126 && e <= 127 {
		return j * math.Float32frombits(uint32(e+127)<<23)
	}
	return float32(math.Ldexp(float64(j), int(n)))
}

// fma32 is a·b + c with a single float32 rounding, as a float32 FMA
// instruction computes it. The product of two float32 values is exact in
// float64; the sum is rounded to float64 "to odd" (kept if inexact and
// already odd, else moved one unit towards the exact value), after which
// rounding to float32 is exact rounding of a·b + c: rounding to odd in 53
// bits then to nearest in 24 never suffers from double rounding.
func fma32(a, b, c float32) float32 {
	p, q := float64(a)*float64(b), float64(c)
	s := p + q
	// TwoSum: s + e == p + q exactly.
	bb := s - p
	e := (p - (s - bb)) + (q - bb)
	// (e is NaN when an input is infinite: s is then already exact.)
	if bits := math.Float64bits(s); e != 0 && e == e && bits&1 == 0 {
		if (e > 0) == (s > 0) {
			bits++
		} else {
			bits--
		}
		s = math.Float64frombits(bits)
	}
	return float32(s)
}

// fnma32 is -(a·b) + c with a single float32 rounding.
func fnma32(a, b, c float32) float32 { return fma32(-a, b, c) }
