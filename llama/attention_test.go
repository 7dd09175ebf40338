package llama

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

func TestRoundF16(t *testing.T) {
	check := func(x float32) {
		want := float16.Fromfloat32(x).Float32()
		got := roundF16(x)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("roundF16(%v = %#x) = %v, want %v", x, math.Float32bits(x), got, want)
		}
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519.99, 65520, -65520, 1e6,
		6.1035156e-05, 6.1e-05, 5.96e-08, 1e-10, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1.00048828125, 1.000732421875, 2049, 2051} {
		check(x)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		check(math.Float32frombits(r.Uint32()))
	}
	for range 200000 {
		check(float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20))))
	}
}

func TestDotF16(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{16, 64, 128, 80} {
		k := make([]uint16, n)
		q := make([]float32, n)
		var want float64
		for i := range n {
			k[i] = toF16(float32(r.NormFloat64()))
			q[i] = roundF16(float32(r.NormFloat64()))
			want += float64(fromF16(k[i])) * float64(q[i])
		}
		if got := dotF16(k, q); math.Abs(float64(got)-want) > 1e-5*float64(n) {
			t.Errorf("n=%d: dotF16 = %v, want %v", n, got, want)
		}
	}
}
