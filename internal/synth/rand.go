package synth

import (
	"math"
	"math/bits"
)

// rng is xoshiro256**, seeded by splitmix64 from the model seed and the
// tensor name, so each tensor's weights depend on nothing else and every
// machine generates the same bytes. It is the generator of the project's
// llamaref tool (../shared/tools/llamaref), so a preset written here with
// the same seed reproduces the golden models bit for bit.
type rng struct{ s [4]uint64 }

func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func fnv1a(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return h
}

func newRNG(seed uint64, name string) *rng {
	x := seed ^ fnv1a(name)
	var r rng
	for i := range r.s {
		r.s[i] = splitmix64(&x)
	}
	return &r
}

func (r *rng) next() uint64 {
	s := &r.s
	result := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return result
}

// gauss returns an approximately standard normal deviate: the sum of four
// 32-bit uniforms (Irwin–Hall), centred and scaled to unit variance. It is
// bounded at ±3.46, so no weight is ever wild.
func (r *rng) gauss() float64 {
	a, b := r.next(), r.next()
	s := float64(uint32(a)) + float64(uint32(a>>32)) + float64(uint32(b)) + float64(uint32(b>>32))
	s *= 1.0 / 4294967296.0
	return (s - 2.0) * 1.7320508075688772
}

// roundBF16 rounds x to the nearest bfloat16 value (ties to even), as a
// float32: what a weight converted from a BF16 checkpoint holds.
func roundBF16(x float32) float32 {
	u := math.Float32bits(x)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep it quiet
		return math.Float32frombits((u | 0x400000) &^ 0xffff)
	}
	u = (u + 0x7fff + (u>>16)&1) &^ 0xffff
	return math.Float32frombits(u)
}
