package quant

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// Block layouts, exactly as ggml stores them (little endian, no padding).
// Each constant is the byte offset of a field inside one block; the block
// sizes agree with gguf.Type.BlockBytes.
//
// Notation: "f16" is an IEEE binary16 scale, "nibble" a 4-bit quant, and
// element i of a 32-element block is x[i]. Dequantized values are computed
// in float32 in exactly the order ggml's dequantize_row_* functions use, so
// the results are bit-identical to ggml's.
const (
	// QK is the number of elements in a block of the 32-element formats
	// (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, IQ4_NL, MXFP4).
	QK = 32
	// QKK is the number of elements in a K-quant super-block (Q2_K … Q8_K,
	// IQ4_XS).
	QKK = 256
)

// Q4_0: 18 bytes for 32 weights.
//
//	d  f16        scale
//	qs [16]byte   nibbles: low nibble of qs[j] is x[j], high nibble is x[j+16]
//
// x = (q - 8) * d. The quantizer picks d = max/-8 where max is the element
// of largest magnitude, so that element maps exactly to q = 0.
const (
	q4_0D     = 0
	q4_0QS    = 2
	q4_0Bytes = 18
)

// Q4_1: 20 bytes for 32 weights.
//
//	d  f16        scale
//	m  f16        minimum (offset)
//	qs [16]byte   nibbles as in Q4_0
//
// x = q*d + m, with q in 0..15, d = (max-min)/15, m = min.
const (
	q4_1D     = 0
	q4_1M     = 2
	q4_1QS    = 4
	q4_1Bytes = 20
)

// Q5_0: 22 bytes for 32 weights.
//
//	d  f16        scale
//	qh [4]byte    fifth bits: bit j of the little-endian uint32 is bit 4 of q[j]
//	qs [16]byte   low four bits, nibbles as in Q4_0
//
// x = (q - 16) * d with q in 0..31 and d = max/-16.
const (
	q5_0D     = 0
	q5_0QH    = 2
	q5_0QS    = 6
	q5_0Bytes = 22
)

// Q5_1: 24 bytes for 32 weights.
//
//	d  f16, m f16  scale and minimum
//	qh [4]byte     fifth bits as in Q5_0
//	qs [16]byte    low four bits as in Q4_0
//
// x = q*d + m with q in 0..31, d = (max-min)/31, m = min.
const (
	q5_1D     = 0
	q5_1M     = 2
	q5_1QH    = 4
	q5_1QS    = 8
	q5_1Bytes = 24
)

// Q8_0: 34 bytes for 32 weights.
//
//	d  f16        scale = max|x| / 127
//	qs [32]int8   x[j] = qs[j] * d
const (
	q8_0D     = 0
	q8_0QS    = 2
	q8_0Bytes = 34
)

// Q8_1: 36 bytes for 32 values (an activation format: weights are never
// stored in it).
//
//	d  f16        scale = max|x| / 127
//	s  f16        d * sum(qs), used by the Q4_1/Q5_1 dot products
//	qs [32]int8   x[j] = qs[j] * d
const (
	q8_1D     = 0
	q8_1S     = 2
	q8_1QS    = 4
	q8_1Bytes = 36
)

// Q2_K: 84 bytes for 256 weights (2.625 bits each), 16 sub-blocks of 16.
//
//	scales [16]byte  per sub-block: low nibble = scale, high nibble = min
//	qs     [64]byte  2-bit quants
//	d      f16       super-block scale of the scales
//	dmin   f16       super-block scale of the mins
//
// Sub-block s (elements 16s … 16s+15) gives x = d*(scales[s]&15) * q -
// dmin*(scales[s]>>4). The quants are packed in two halves of 128: in half h,
// qs[32h+l] holds elements 128h+l, +32, +64, +96 in bits 0-1, 2-3, 4-5, 6-7.
const (
	q2KScales = 0
	q2KQS     = 16
	q2KD      = 80
	q2KDmin   = 82
	q2KBytes  = 84
)

// Q3_K: 110 bytes for 256 weights (3.4375 bits each), 16 sub-blocks of 16.
//
//	hmask  [32]byte  high (third) bits: bit b of hmask[l] belongs to element 32b+l
//	qs     [64]byte  low two bits, packed like Q2_K
//	scales [12]byte  sixteen 6-bit signed scales (stored +32), see below
//	d      f16       super-block scale
//
// x = d * (scale_s - 32) * (q - 4), where q = low two bits + 4 if the hmask
// bit is set. Scale s has its low nibble in scales[s] (s < 8, bits 0-3) or
// scales[s-8] (s ≥ 8, bits 4-7), and its top two bits in scales[8 + s%4]
// at bit 2*(s/4).
const (
	q3KHmask  = 0
	q3KQS     = 32
	q3KScales = 96
	q3KD      = 108
	q3KBytes  = 110
)

// Q4_K: 144 bytes for 256 weights (4.5 bits each), 8 sub-blocks of 32.
//
//	d      f16        super-block scale of the scales
//	dmin   f16        super-block scale of the mins
//	scales [12]byte   eight 6-bit scales and eight 6-bit mins (see scaleMinK4)
//	qs     [128]byte  nibbles: in chunk c (64 elements), qs[32c+l] holds element
//	                  64c+l in its low nibble and 64c+32+l in its high nibble
//
// Sub-block s gives x = d*sc_s * q - dmin*m_s.
const (
	q4KD      = 0
	q4KDmin   = 2
	q4KScales = 4
	q4KQS     = 16
	q4KBytes  = 144
)

// Q5_K: 176 bytes for 256 weights (5.5 bits each), 8 sub-blocks of 32.
//
//	d, dmin f16       as in Q4_K
//	scales  [12]byte  as in Q4_K
//	qh      [32]byte  fifth bits: bit 2c of qh[l] is for element 64c+l, bit
//	                  2c+1 for element 64c+32+l
//	qs      [128]byte low nibbles, packed as in Q4_K
//
// x = d*sc_s * q - dmin*m_s with q in 0..31.
const (
	q5KD      = 0
	q5KDmin   = 2
	q5KScales = 4
	q5KQH     = 16
	q5KQS     = 48
	q5KBytes  = 176
)

// Q6_K: 210 bytes for 256 weights (6.5625 bits each), 16 sub-blocks of 16.
//
//	ql     [128]byte  low four bits
//	qh     [64]byte   high two bits
//	scales [16]int8   signed 8-bit sub-block scales
//	d      f16        super-block scale
//
// x = d * scales[s] * (q - 32). In half h (128 elements), for l in 0..31:
// element 128h+l     = ql[64h+l]&15    | (qh[32h+l]>>0&3)<<4,
// element 128h+32+l  = ql[64h+32+l]&15 | (qh[32h+l]>>2&3)<<4,
// element 128h+64+l  = ql[64h+l]>>4    | (qh[32h+l]>>4&3)<<4,
// element 128h+96+l  = ql[64h+32+l]>>4 | (qh[32h+l]>>6&3)<<4.
const (
	q6KQL     = 0
	q6KQH     = 128
	q6KScales = 192
	q6KD      = 208
	q6KBytes  = 210
)

// Q8_K: 292 bytes for 256 values (the activation format of the K-quant dot
// products).
//
//	d     float32    scale (f32, not f16)
//	qs    [256]int8  x[j] = d * qs[j]
//	bsums [16]int16  sum of each group of 16 qs
const (
	q8KD     = 0
	q8KQS    = 4
	q8KBsums = 260
	q8KBytes = 292
)

// IQ4_NL: 18 bytes for 32 weights: d f16, then 16 bytes of nibbles laid out
// as in Q4_0; each nibble indexes the non-linear table iq4nlValues and
// x = d * iq4nlValues[q].
const (
	iq4NLD     = 0
	iq4NLQS    = 2
	iq4NLBytes = 18
)

// IQ4_XS: 136 bytes for 256 weights, 8 sub-blocks of 32.
//
//	d        f16       super-block scale
//	scalesH  uint16    top two bits of each 6-bit sub-block scale (2 bits per sub-block)
//	scalesL  [4]byte   low nibbles of the scales (two per byte, sub-block 2k in the low nibble)
//	qs       [128]byte 16 bytes per sub-block, nibbles as in IQ4_NL
//
// x = d * (ls - 32) * iq4nlValues[q].
const (
	iq4XSD       = 0
	iq4XSScalesH = 2
	iq4XSScalesL = 4
	iq4XSQS      = 8
	iq4XSBytes   = 136
)

// MXFP4 (OCP Microscaling FP4, llama.cpp's type 39): 17 bytes for 32
// weights, the format gpt-oss ships its expert weights in.
//
//	e  byte       E8M0 scale: a bare exponent, 2^(e-127)
//	qs [16]byte   nibbles laid out as in Q4_0; each is an E2M1 float
//	              (sign, two exponent bits, one mantissa bit)
//
// ggml keeps the E2M1 values doubled, as the integers mxfp4Values (0, ±0.5,
// ±1, ±1.5, ±2, ±3, ±4, ±6 become 0, ±1, ..., ±12), and halves the scale to
// match: x = e8m0Half(e) · mxfp4Values[q] with e8m0Half(e) = 2^(e-128).
// Every such product is exact in float32 (a power of two times a small
// integer) unless it overflows, which only e ≥ 252 can.
const (
	mxfp4E     = 0
	mxfp4QS    = 1
	mxfp4Bytes = 17
)

// mxfp4Values are the E2M1 values doubled (ggml's kvalues_mxfp4): index q
// is the nibble, bit 3 its sign.
var mxfp4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// e8m0Half is half of the E8M0 scale e, 2^(e-128), as ggml's
// GGML_E8M0_TO_FP32_HALF computes it: the float32 with exponent field e-1
// for e ≥ 2, and the subnormals 2^-128 and 2^-127 for e = 0 and 1. It is
// exact for every e (e = 255, NaN in the OCP format and refused by
// llama.cpp's validation, gives 2^127).
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// iq4nlValues is ggml's non-linear 4-bit codebook (kvalues_iq4nl).
var iq4nlValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// f16 reads the IEEE binary16 value at b[0:2] as a float32 (exact).
func f16(b []byte) float32 {
	return halfToFloat(binary.LittleEndian.Uint16(b))
}

// halfToFloat widens an IEEE binary16 to float32 exactly. It is the same
// function as float16.Frombits(h).Float32() (a test checks all 65536 inputs)
// but without a loop for subnormals: it moves the exponent and mantissa into
// place, rebiases the exponent, and renormalizes a subnormal with one float
// subtraction (its bits are 2^-14 * 0.mantissa = (1.mantissa - 1) * 2^-14).
func halfToFloat(h uint16) float32 {
	const expMask = 0x7c00 << 13
	o := uint32(h&0x7fff) << 13
	exp := o & expMask
	o += (127 - 15) << 23
	switch exp {
	case expMask: // Inf or NaN: exponent all ones; NaNs come out quiet, as with F16C
		o += (128 - 16) << 23
		if h&0x3ff != 0 {
			o |= 1 << 22
		}
	case 0: // zero or subnormal
		o += 1 << 23
		o = math.Float32bits(math.Float32frombits(o) - math.Float32frombits(113<<23))
	}
	return math.Float32frombits(o | uint32(h&0x8000)<<16)
}

// putF16 stores v rounded to the nearest binary16 (ties to even), as ggml's
// GGML_FP32_TO_FP16 does.
func putF16(b []byte, v float32) {
	binary.LittleEndian.PutUint16(b, float16.Fromfloat32(v).Bits())
}

// f16Finite reports whether the binary16 at b[0:2] is neither Inf nor NaN.
func f16Finite(b []byte) bool {
	return binary.LittleEndian.Uint16(b)&0x7c00 != 0x7c00
}

// bf16ToF32 widens a bfloat16 (the top half of a float32) exactly.
func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f32ToBF16 rounds to the nearest bfloat16, ties to even, as ggml's
// GGML_FP32_TO_BF16 does (NaN is made quiet; subnormals are kept).
func f32ToBF16(v float32) uint16 {
	u := math.Float32bits(v)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from the
// 12 scale bytes q of a Q4_K or Q5_K block (ggml's get_scale_min_k4).
// Sub-blocks 0-3 keep their scale in q[j] and min in q[j+4] (low 6 bits);
// sub-blocks 4-7 keep the low nibbles in q[j+4] (scale low, min high) and
// the top two bits in bits 6-7 of q[j-4] (scale) and q[j] (min).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// q3KScales unpacks the sixteen 6-bit Q3_K scales (still offset by 32).
func q3KUnpackScales(s []byte, out *[16]int8) {
	for j := 0; j < 16; j++ {
		var lo uint8
		if j < 8 {
			lo = s[j] & 0xF
		} else {
			lo = s[j-8] >> 4
		}
		hi := (s[8+j%4] >> (2 * (j / 4))) & 3
		out[j] = int8(lo | hi<<4)
	}
}
