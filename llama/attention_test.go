package llama

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/tensor"
)

// BenchmarkAttentionDecode: one query head of 128 against 1024 cached f16
// positions, llama.cpp's small-batch path (ns per position = ns/op / 1024).
func BenchmarkAttentionDecode(b *testing.B) {
	const hd, n = 128, 1024
	r := rand.New(rand.NewPCG(1, 1))
	k, v := make([]uint16, hd*n), make([]uint16, hd*n)
	for i := range k {
		k[i] = tensor.ToF16(float32(r.NormFloat64()))
		v[i] = tensor.ToF16(float32(r.NormFloat64()))
	}
	q, out := make([]float32, hd), make([]float32, hd)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	for b.Loop() {
		onlineF16(out, q, k, v, 0, hd, []seg{{0, n}}, 0.088)
	}
}

func TestExpf(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	check := func(x float32) bool {
		got, want := expf(x), float32(math.Exp(float64(x)))
		return math.Float32bits(got) == math.Float32bits(want) || (got != got && want != want)
	}
	for _, x := range []float32{0, -0, 1, -1, 88.72, 88.73, 89, -87.3, -103.9, -104, -110, 1e-30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		if !check(x) {
			t.Errorf("expf(%v) = %v, want %v", x, expf(x), float32(math.Exp(float64(x))))
		}
	}
	bad := 0
	for range 1_000_000 {
		x := float32(-r.Float64() * 30) // attention's range: s - M <= 0
		if r.IntN(4) == 0 {
			x = float32(r.Float64()*200 - 110)
		}
		if !check(x) {
			bad++
			if bad < 5 {
				t.Logf("expf(%v) = %v, math.Exp gives %v", x, expf(x), float32(math.Exp(float64(x))))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of a million inputs differ from float32(math.Exp)", bad)
	}
}

// TestOnlineF16BlockedMatchesGo checks that the blocked decode attention
// (scores first, then the running max and sum, then the accumulator in
// assembly) gives the same bits as llama.cpp's one-position-at-a-time loop:
// head sizes 64, 128 and 256, a head at an offset inside wider rows, lengths
// around the block size, and scores that rise (a new maximum at every
// position, so the accumulator is rescaled each time), fall, or are large
// enough to overflow float16 in the accumulator.
func TestOnlineF16BlockedMatchesGo(t *testing.T) {
	if !blockedDecode {
		t.Skip("no assembly kernels in tensor on this CPU or build (purego); onlineF16Go is what runs")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, hd := range []int{64, 128, 256} {
		for _, kvLen := range []int{1, 2, 63, 255, 256, 257, 700, 1300} {
			for _, shape := range []string{"random", "rising", "falling", "huge"} {
				const heads = 3
				stride, off := heads*hd, hd // the middle head of three
				k, v := make([]uint16, stride*kvLen), make([]uint16, stride*kvLen)
				for i := range k {
					k[i] = tensor.ToF16(float32(r.NormFloat64()))
					x := r.NormFloat64()
					if shape == "huge" {
						x *= 3e4
					}
					v[i] = tensor.ToF16(float32(x))
				}
				q := make([]float32, hd)
				for i := range q {
					q[i] = float32(r.NormFloat64())
				}
				if shape == "rising" || shape == "falling" {
					// Make row p's key p·q/|q|² (scaled) so the score is monotone in p.
					var qq float64
					for _, x := range q {
						qq += float64(x) * float64(x)
					}
					for p := range kvLen {
						f := float64(p) / float64(kvLen) * 8
						if shape == "falling" {
							f = -f
						}
						for i := range hd {
							k[p*stride+off+i] = tensor.ToF16(float32(f * float64(q[i]) / qq * float64(hd)))
						}
					}
				}
				want, got := make([]float32, hd), make([]float32, hd)
				onlineF16Go(want, q, k, v, off, stride, []seg{{0, kvLen}}, 0.088)
				onlineF16Blocked(got, q, k, v, off, stride, []seg{{0, kvLen}}, 0.088)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("hd %d, %d positions, %s: out[%d] = %g, Go loop %g", hd, kvLen, shape, i, got[i], want[i])
					}
				}
			}
		}
	}
}
