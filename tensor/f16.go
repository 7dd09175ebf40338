package tensor

import (
	"math"

	"github.com/x448/float16"
)

// ToF16 rounds x to the nearest float16 (ties to even) and returns its bits,
// as ggml's GGML_FP32_TO_FP16 and x86's VCVTPS2PH do.
func ToF16(x float32) uint16 { return float16.Fromfloat32(x).Bits() }

// FromF16 widens the float16 with bits h to float32 (exact), from a table.
func FromF16(h uint16) float32 { return f16Table[h] }

// f16Table widens every float16 bit pattern to float32. It is filled once at
// start-up and only read afterwards.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = float16.Frombits(uint16(i)).Float32()
	}
	return &t
}()

// RoundF16 rounds x to the nearest float16 value (ties to even) and returns
// it as float32: FromF16(ToF16(x)), faster. Values in float16's normal range
// take a fast path that rounds the float32 significand to 10 bits in place;
// zeros, subnormals, overflow and NaN go through the exact conversion.
func RoundF16(x float32) float32 {
	b := math.Float32bits(x)
	if e := (b >> 23) & 0xff; e-(127-14) <= 29 { // e in [113, 142]: a normal float16
		b += 0xfff + (b>>13)&1 // round to nearest even at bit 13
		b &^= 0x1fff
		if (b>>23)&0xff <= 127+15 {
			return math.Float32frombits(b)
		}
	}
	return roundF16Slow(x)
}

func roundF16Slow(x float32) float32 {
	if math.Float32bits(x)<<1 == 0 {
		return x // ±0
	}
	return FromF16(ToF16(x))
}
