package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/smolgo/smolgo/gguf"
	"github.com/x448/float16"
)

// QuantizeActivations rounds the f32 activation row x to type t, one of the
// vec dot types (Q8_0, Q8_1, Q8_K, F16, BF16, F32), writing RowBytes(len(x))
// bytes to dst. It reproduces what llama.cpp's x86 CPU backend does before a
// matrix product, bit for bit:
//
//   - Q8_0 (blocks of 32): amax = max |x|; d = amax/127 stored as f16;
//     q = round-half-even(x · (127/amax)) with the float32 127/amax, not 1/d.
//   - Q8_1: as Q8_0, plus s = d·Σq (the float32 d) stored as f16.
//   - Q8_K (blocks of 256): max = the element of largest magnitude (the first
//     on ties), with its sign; iscale = -127/max; q = min(127,
//     round-half-even(iscale·x)); d = 1/iscale stored as float32; bsums[j]
//     = Σ q[16j:16j+16]. An all-zero block gets d = 0 and q = 0.
//   - F16, BF16: each element rounded to nearest even; F32: copied.
//
// len(x) must be a multiple of t's block size and dst must be large enough.
func QuantizeActivations(t gguf.Type, x []float32, dst []byte) error {
	switch t {
	case gguf.TypeQ8_0, gguf.TypeQ8_1, gguf.TypeQ8_K, gguf.TypeF16, gguf.TypeBF16, gguf.TypeF32:
	default:
		return fmt.Errorf("quant: %v is not an activation (vec dot) type", t)
	}
	need, err := t.RowBytes(len(x))
	if err != nil {
		return fmt.Errorf("quant: activations: %w", err)
	}
	if len(dst) < need {
		return fmt.Errorf("quant: activations: %d elements of %v need %d bytes, dst has %d", len(x), t, need, len(dst))
	}
	switch t {
	case gguf.TypeQ8_0:
		quantizeQ8_0(x, dst, q8KLevel)
	case gguf.TypeQ8_1:
		for i := 0; i < len(x)/32; i++ {
			actQ8_1(x[32*i:32*i+32], dst[36*i:36*i+36])
		}
	case gguf.TypeQ8_K:
		quantizeQ8K(x, dst, q8KLevel)
	case gguf.TypeF16:
		toF16(x, dst, q8KLevel)
	case gguf.TypeBF16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], f32ToBF16(v))
		}
	case gguf.TypeF32:
		for i, v := range x {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	}
	return nil
}

// q8Round quantizes 32 values with the float32 multiplier id into qs,
// returning the sum of the quants.
func q8Round(x []float32, id float32, qs []byte) int32 {
	var sum int32
	for j, v := range x {
		q := cvtToInt8(math.RoundToEven(float64(float32(v * id))))
		qs[j] = byte(q)
		sum += int32(q)
	}
	return sum
}

// cvtToInt8 narrows a rounded value to int8 as ggml's AVX2 code does
// (VCVTPS2DQ, then saturating packs): out-of-range and NaN values, which
// only a block of tiny subnormals can produce (127/amax overflows), become
// -128, the "integer indefinite" 0x80000000 saturated.
func cvtToInt8(r float64) int8 {
	if !(r >= math.MinInt32 && r <= math.MaxInt32) {
		return -128
	}
	return int8(max(-128, min(127, r)))
}

func absMax(x []float32) float32 {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	return amax
}

// quantizeQ8_0Go is the pure Go q8_0 quantizer, the reference for the
// assembly ones.
func quantizeQ8_0Go(x []float32, dst []byte) {
	for i := 0; i < len(x)/32; i++ {
		actQ8_0(x[32*i:32*i+32], dst[34*i:34*i+34])
	}
}

// q8Scales returns d = amax/127 and the multiplier id = 127/amax (0 for an
// all-zero block) of a block of 32, as ggml's x86 code computes them.
func q8Scales(x []float32) (d, id float32) {
	amax := absMax(x)
	if amax != 0 {
		id = 127 / amax
	}
	return amax / 127, id
}

// actQ8_0 quantizes one block of 32 (ggml's x86 quantize_row_q8_0).
func actQ8_0(x []float32, b []byte) {
	d, id := q8Scales(x)
	binary.LittleEndian.PutUint16(b, halfBits(d))
	q8Round(x, id, b[2:34])
}

// actQ8_1 quantizes one block of 32 (ggml's x86 quantize_row_q8_1): as
// q8_0, plus s = d·Σq with the float32 d.
func actQ8_1(x []float32, b []byte) {
	d, id := q8Scales(x)
	binary.LittleEndian.PutUint16(b, halfBits(d))
	sum := q8Round(x, id, b[4:36])
	binary.LittleEndian.PutUint16(b[2:], halfBits(d*float32(sum)))
}

// quantizeQ8KGo is the pure Go q8_K quantizer, the reference for the
// assembly one.
func quantizeQ8KGo(x []float32, dst []byte) {
	for i := 0; i < len(x)/256; i++ {
		actQ8_K(x[256*i:256*i+256], dst[292*i:292*i+292])
	}
}

// actQ8_K quantizes one block of 256 (ggml's quantize_row_q8_K_ref, which the
// x86 build calls).
func actQ8_K(x []float32, b []byte) {
	var mx, amax float32
	for _, v := range x {
		if av := float32(math.Abs(float64(v))); av > amax {
			amax, mx = av, v
		}
	}
	if amax == 0 {
		clear(b)
		return
	}
	// iscale is ±Inf when |max| < 127/MaxFloat32; ggml then stores the low
	// byte of nearest_int(±Inf or NaN), 0, and so do we (nearestInt is
	// ggml's, with the same bit trick).
	iscale := -127 / mx
	for j := 0; j < 16; j++ {
		var bsum int32
		for l := 0; l < 16; l++ {
			q := int8(min(127, nearestInt(float32(iscale*x[16*j+l]))))
			b[4+16*j+l] = byte(q)
			bsum += int32(q)
		}
		binary.LittleEndian.PutUint16(b[260+2*j:], uint16(int16(bsum)))
	}
	binary.LittleEndian.PutUint32(b, math.Float32bits(1/iscale))
}

// halfBits rounds f to the nearest IEEE half (ties to even, as F16C's
// VCVTPS2PH): overflow gives ±Inf, NaN stays NaN.
func halfBits(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// toF16Go writes the float16 bits of x to dst (the pure Go twin of the
// F16C conversion).
func toF16Go(x []float32, dst []byte) {
	for i, v := range x {
		binary.LittleEndian.PutUint16(dst[2*i:], halfBits(v))
	}
}
