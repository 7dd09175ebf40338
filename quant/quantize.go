package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"

	"github.com/smolgo/smolgo/gguf"
)

// Quantize converts src to type t in ggml's byte layout, writing
// t.RowBytes(len(src)) bytes at the start of dst. len(src) must be a whole
// number of blocks.
//
// The quantizers are ggml's reference ones (quantize_row_*_ref, the code
// llama.cpp's llama-quantize runs when no importance matrix is given),
// reproduced operation for operation in float32: quantizing the F32 source of
// a llama.cpp-quantized file gives byte-identical blocks.
//
// Unlike ggml, Quantize rejects input it cannot represent instead of writing
// garbage: a NaN or infinite element, or a block whose scale does not fit the
// format's float16 (magnitudes beyond about 65504 × the format's largest
// quant; for F16 and BF16, a value that rounds to infinity), is an error
// naming the block and element. At the other end, blocks whose largest
// magnitude is below about 1e-4 (Q6_K) to 1e-5 (Q4_K, Q5_K, Q8_0) lose
// precision because their float16 scales become subnormal, and blocks far
// below that quantize to zeros; ggml writes the same bytes, and the error
// stays under about 1e-4 in absolute terms.
// On error the contents of dst are unspecified.
//
// Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, Q8_K, MXFP4 (see CanQuantize).
func Quantize(t gguf.Type, src []float32, dst []byte) error {
	q, ok := quantizers[t]
	if !ok {
		return fmt.Errorf("quant: quantize %v: unsupported type", t)
	}
	bs, bb := t.BlockSize(), t.BlockBytes()
	if len(src)%bs != 0 {
		return fmt.Errorf("quant: quantize %v: %d elements is not a multiple of the block size %d", t, len(src), bs)
	}
	nb := len(src) / bs
	if need := nb * bb; len(dst) < need {
		return fmt.Errorf("quant: quantize %v: %d elements need %d bytes, have %d", t, len(src), need, len(dst))
	}
	// Plain types (blocks of one element) convert in chunks, to keep the
	// per-block overhead out of their loops.
	step := 1
	if bs == 1 {
		step = 1024
	}
	for i := 0; i < nb; i += step {
		k := min(step, nb-i)
		x := src[i*bs : (i+k)*bs]
		for j, v := range x {
			if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
				return fmt.Errorf("quant: quantize %v: block %d: element %d is %v", t, i+j/bs, i*bs+j, v)
			}
		}
		b := dst[i*bb : (i+k)*bb]
		if q.limit > 0 && maxAbs(x) > q.limit {
			return overflowError(t, q, i, x)
		}
		q.block(x, b)
		if q.finite != nil {
			for j := 0; j < k; j++ {
				if !q.finite(b[j*bb:]) {
					return overflowError(t, q, i+j, x[j*bs:(j+1)*bs])
				}
			}
		}
	}
	return nil
}

func overflowError(t gguf.Type, q quantizer, block int, x []float32) error {
	bs := len(x)
	return fmt.Errorf("quant: quantize %v: block %d (elements %d..%d): largest magnitude %g overflows %s",
		t, block, block*bs, (block+1)*bs-1, maxAbs(x), q.overflows)
}

// CanQuantize reports whether Quantize supports type t.
func CanQuantize(t gguf.Type) bool {
	_, ok := quantizers[t]
	return ok
}

// quantizer quantizes one block (plain types: a run of elements). finite reports whether the block's
// float16 (or bfloat16) fields came out finite; blocks with a magnitude above
// limit are rejected before quantizing, since ggml's searches overflow
// float32 on them (x³ terms) long before their scale could fit float16 anyway.
type quantizer struct {
	block     func(x []float32, b []byte)
	finite    func(b []byte) bool
	limit     float32
	overflows string // what overflows, for the error
}

// f16Limit is far above what any float16-scaled format can store (Q8_0 tops
// out near 8e6, Q6_K near 3e8) and far below where ggml's float32 searches
// overflow.
const f16Limit = 1e9

// f16At returns a check that the float16 fields at the given offsets are finite.
func f16At(offs ...int) func(b []byte) bool {
	return func(b []byte) bool {
		for _, off := range offs {
			if !f16Finite(b[off:]) {
				return false
			}
		}
		return true
	}
}

var quantizers = map[gguf.Type]quantizer{
	gguf.TypeF32:  {quantF32, nil, 0, ""},
	gguf.TypeF16:  {quantF16, f16At(0), 0, "float16"},
	gguf.TypeBF16: {quantBF16, func(b []byte) bool { return b[1]&0x7f != 0x7f || b[0]&0x80 == 0 }, 0, "bfloat16"},
	gguf.TypeQ4_0: {quantQ4_0, f16At(q4_0D), f16Limit, "its float16 scales"},
	gguf.TypeQ4_1: {quantQ4_1, f16At(q4_1D, q4_1M), f16Limit, "its float16 scales"},
	gguf.TypeQ5_0: {quantQ5_0, f16At(q5_0D), f16Limit, "its float16 scales"},
	gguf.TypeQ5_1: {quantQ5_1, f16At(q5_1D, q5_1M), f16Limit, "its float16 scales"},
	gguf.TypeQ8_0: {quantQ8_0, f16At(q8_0D), f16Limit, "its float16 scales"},
	gguf.TypeQ8_1: {quantQ8_1, f16At(q8_1D, q8_1S), f16Limit, "its float16 scales"},
	gguf.TypeQ2_K: {quantQ2K, f16At(q2KD, q2KDmin), f16Limit, "its float16 scales"},
	gguf.TypeQ3_K: {quantQ3K, f16At(q3KD), f16Limit, "its float16 scales"},
	gguf.TypeQ4_K: {quantQ4K, f16At(q4KD, q4KDmin), f16Limit, "its float16 scales"},
	gguf.TypeQ5_K: {quantQ5K, f16At(q5KD, q5KDmin), f16Limit, "its float16 scales"},
	gguf.TypeQ6_K: {quantQ6K, f16At(q6KD), f16Limit, "its float16 scales"},
	gguf.TypeQ8_K: {quantQ8K, nil, 3e38, "the float32 scale"}, // f32 scale; d*127 must stay below MaxFloat32
	// MXFP4's power-of-two scale holds any finite block (at most e = 253).
	gguf.TypeMXFP4: {quantMXFP4, nil, 0, ""},
}

func maxAbs(x []float32) float32 {
	var m float32
	for _, v := range x {
		m = max(m, abs32(v))
	}
	return m
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// nearestInt rounds to the nearest integer, ties to even, the way ggml's
// nearest_int does: by adding 1.5·2^23 and reading the low mantissa bits.
// It is exact for |f| < 2^22; outside that it returns what ggml's bit trick
// returns, so degenerate blocks come out the same too.
func nearestInt(f float32) int {
	// float32(f) forces the caller's product (nearestInt(a*b)) to be rounded
	// before the addition, so the two are never fused.
	return int(math.Float32bits(float32(f)+12582912)&0x007fffff) - 0x00400000
}

// cInt8 converts like C's (int8_t)f on x86-64: truncate toward zero to a
// 32-bit integer (NaN and out-of-range values give 0x80000000) and keep the
// low byte. Only degenerate blocks (subnormal scales) reach the odd cases.
func cInt8(f float32) int8 {
	if !(f > -2147483648 && f < 2147483648) {
		return 0
	}
	return int8(int32(f))
}

func quantF32(x []float32, b []byte) {
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
}

func quantF16(x []float32, b []byte) {
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], float16.Fromfloat32(v).Bits())
	}
}

func quantBF16(x []float32, b []byte) {
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], f32ToBF16(v))
	}
}

// largestMagnitude returns the element of largest magnitude (the first on ties) and
// its magnitude.
func largestMagnitude(x []float32) (maxv, amax float32) {
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, maxv = a, v
		}
	}
	return maxv, amax
}

func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// quantQ4_0: d = max/-8 (max = the signed element of largest magnitude),
// q = min(15, trunc(x/d + 8.5)).
func quantQ4_0(x []float32, b []byte) {
	maxv, _ := largestMagnitude(x)
	d := maxv / -8
	id := inverse(d)
	putF16(b[q4_0D:], d)
	for j := 0; j < 16; j++ {
		x0 := float32(x[j]*id) + 8.5
		x1 := float32(x[j+16]*id) + 8.5
		b[q4_0QS+j] = uint8(min(15, cInt8(x0))) | uint8(min(15, cInt8(x1)))<<4
	}
}

// quantQ4_1: d = (max-min)/15, m = min, q = min(15, trunc((x-min)/d + 0.5)).
func quantQ4_1(x []float32, b []byte) {
	lo, hi := minMax(x)
	d := (hi - lo) / 15
	id := inverse(d)
	putF16(b[q4_1D:], d)
	putF16(b[q4_1M:], lo)
	for j := 0; j < 16; j++ {
		x0 := float32(float32(x[j]-lo)*id) + 0.5
		x1 := float32(float32(x[j+16]-lo)*id) + 0.5
		b[q4_1QS+j] = uint8(min(15, cInt8(x0))) | uint8(min(15, cInt8(x1)))<<4
	}
}

// quantQ5_0: d = max/-16, q = min(31, trunc(x/d + 16.5)).
func quantQ5_0(x []float32, b []byte) {
	maxv, _ := largestMagnitude(x)
	d := maxv / -16
	id := inverse(d)
	putF16(b[q5_0D:], d)
	var qh uint32
	for j := 0; j < 16; j++ {
		xi0 := uint8(min(31, cInt8(float32(x[j]*id)+16.5)))
		xi1 := uint8(min(31, cInt8(float32(x[j+16]*id)+16.5)))
		b[q5_0QS+j] = xi0&0xF | (xi1&0xF)<<4
		qh |= uint32(xi0&0x10)>>4<<j | uint32(xi1&0x10)>>4<<(j+16)
	}
	binary.LittleEndian.PutUint32(b[q5_0QH:], qh)
}

// quantQ5_1: d = (max-min)/31, m = min, q = trunc((x-min)/d + 0.5).
func quantQ5_1(x []float32, b []byte) {
	lo, hi := minMax(x)
	d := (hi - lo) / 31
	id := inverse(d)
	putF16(b[q5_1D:], d)
	putF16(b[q5_1M:], lo)
	var qh uint32
	for j := 0; j < 16; j++ {
		xi0 := uint8(cInt8(float32(float32(x[j]-lo)*id) + 0.5))
		xi1 := uint8(cInt8(float32(float32(x[j+16]-lo)*id) + 0.5))
		b[q5_1QS+j] = xi0&0xF | (xi1&0xF)<<4
		qh |= uint32(xi0&0x10)>>4<<j | uint32(xi1&0x10)>>4<<(j+16)
	}
	binary.LittleEndian.PutUint32(b[q5_1QH:], qh)
}

// q8Block writes round-half-away(x/d) with d = max|x|/127 (ggml's roundf)
// and returns d and the sum of the quants.
func q8Block(x []float32, qs []byte) (d float32, sum int) {
	_, amax := largestMagnitude(x)
	d = amax / 127
	id := inverse(d)
	for j, v := range x {
		q := cInt8(float32(math.Round(float64(v * id))))
		qs[j] = byte(q)
		sum += int(q)
	}
	return d, sum
}

func quantQ8_0(x []float32, b []byte) {
	d, _ := q8Block(x, b[q8_0QS:q8_0QS+QK])
	putF16(b[q8_0D:], d)
}

func quantQ8_1(x []float32, b []byte) {
	d, sum := q8Block(x, b[q8_1QS:q8_1QS+QK])
	putF16(b[q8_1D:], d)
	putF16(b[q8_1S:], float32(sum)*d)
}

// quantQ8K: d = max/-127 as float32 (max = the signed element of largest
// magnitude), q = min(127, nearestInt(x/d)), bsums = sums of 16 quants.
func quantQ8K(x []float32, b []byte) {
	maxv, amax := largestMagnitude(x)
	qs := b[q8KQS : q8KQS+QKK]
	if amax == 0 {
		clear(b)
		return
	}
	iscale := -127 / maxv
	for j, v := range x {
		qs[j] = byte(int8(min(127, nearestInt(iscale*v))))
	}
	for g := 0; g < 16; g++ {
		var s int
		for _, q := range qs[16*g : 16*g+16] {
			s += int(int8(q))
		}
		binary.LittleEndian.PutUint16(b[q8KBsums+2*g:], uint16(int16(s)))
	}
	binary.LittleEndian.PutUint32(b[q8KD:], math.Float32bits(1/iscale))
}

// quantMXFP4 is ggml's quantize_row_mxfp4_ref: the E8M0 exponent puts the
// block's largest magnitude amax at 8 to 16 times the halved scale d =
// 2^(e-128), e = floor(log2(amax)) - 2 + 127, and each element takes the
// E2M1 value nearest to it (mxfp4Nearest). Magnitudes from 12·d up clip to
// ±6 (12 doubled).
func quantMXFP4(x []float32, b []byte) {
	_, amax := largestMagnitude(x)
	e := mxfp4Exponent(amax)
	b[mxfp4E] = e
	d := e8m0Half(e)
	for j := 0; j < 16; j++ {
		b[mxfp4QS+j] = mxfp4Nearest(x[j], d) | mxfp4Nearest(x[j+16], d)<<4
	}
}

// mxfp4Exponent is the E8M0 exponent ggml gives a block of largest
// magnitude amax: (uint8_t)(floorf(log2f(amax)) - 2 + 127), 0 for amax = 0.
// log2f is taken as the correctly rounded float32 of a float64 log2; near
// a power of two, where the floor depends on the rounding (an amax just
// below 2^k has a log2f of exactly k), both it and glibc's log2f are far
// more accurate than the distance to the rounding boundary. For amax below
// 2^-125 the C conversion of a negative float to uint8_t is undefined; x86
// keeps the low byte of the truncated int32, and so does this. Every
// element of such a block then quantizes to 0 (e ≥ 232, a scale of 2^104
// or more) and dequantizes to 0, an error below 2.4e-38.
func mxfp4Exponent(amax float32) uint8 {
	if amax == 0 {
		return 0
	}
	l := float32(math.Log2(float64(amax)))
	f := float32(math.Floor(float64(l))) - 2 + 127
	return uint8(int32(f))
}

// mxfp4Nearest is ggml's best_index_mxfp4: the index of the first table
// value v minimizing |v·d - x| in float32, where v·d is exact and the
// subtraction rounds. Rather than trying all 16 values it brackets |x|
// between two magnitudes of the table and compares their two errors, which
// gives the same index: the exact distance is smallest at one of the two
// neighbours and rounding keeps that order (it can only make them tie);
// every other value, a smaller index included (the positive values when x
// is negative), is at least twice as far. On a tie the lower index wins,
// ggml's first: the smaller magnitude, and 0 (index 0) rather than -0 (8).
// For x < 0, the negative value -M·d has the error |a - M·d| of the
// positive one (rounding is symmetric). An overflowing M·d (= +Inf) is
// never below |x| and its error is infinite, as in ggml's loop.
// mxfp4NearestLoop in the tests is ggml's loop itself, and they agree on
// every input tried.
func mxfp4Nearest(x, d float32) uint8 {
	a := abs32(x)
	k := 0
	for k < 7 && float32(mxfp4Mags[k+1]*d) <= a {
		k++
	}
	if k < 7 {
		lo := abs32(float32(mxfp4Mags[k]*d) - a)
		hi := abs32(float32(mxfp4Mags[k+1]*d) - a)
		if hi < lo {
			k++
		}
	}
	if x < 0 && k != 0 {
		k += 8
	}
	return uint8(k)
}

// mxfp4Mags are the magnitudes of mxfp4Values 0..7 (8..15 are their
// negatives).
var mxfp4Mags = [8]float32{0, 1, 2, 3, 4, 6, 8, 12}
