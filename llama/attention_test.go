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

// BenchmarkAttentionDecode: one query head of 128 against 1024 cached f16
// positions, llama.cpp's small-batch path (ns per position = ns/op / 1024).
func BenchmarkAttentionDecode(b *testing.B) {
	const hd, n = 128, 1024
	r := rand.New(rand.NewPCG(1, 1))
	k, v := make([]uint16, hd*n), make([]uint16, hd*n)
	for i := range k {
		k[i] = toF16(float32(r.NormFloat64()))
		v[i] = toF16(float32(r.NormFloat64()))
	}
	q, out := make([]float32, hd), make([]float32, hd)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	for b.Loop() {
		onlineF16(out, q, k, v, 0, hd, n, 0.088)
	}
}

// The assembly kernels must equal their Go twins bit for bit.
func TestF16KernelsMatchGo(t *testing.T) {
	if !haveF16Kernels {
		t.Skip("no AVX2/FMA/F16C kernels on this CPU or build (purego); the Go code is what runs")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{64, 128, 256} {
		for trial := range 200 {
			k := make([]uint16, n)
			q := make([]float32, n)
			scale := math.Pow(2, float64(r.IntN(30)-15))
			for i := range n {
				k[i] = toF16(float32(r.NormFloat64() * scale))
				q[i] = roundF16(float32(r.NormFloat64()))
			}
			if got, want := dotF16x64(&k[0], &q[0], n), dotF16Go(k, q); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("n=%d trial %d: dotF16x64 = %v, Go %v", n, trial, got, want)
			}
			acc := make([]float32, n)
			for i := range acc {
				acc[i] = roundF16(float32(r.NormFloat64() * scale))
			}
			// Include overflow, subnormal and zero results.
			acc[0], k[1], acc[2], k[2] = 60000, toF16(30000), 1e-7, toF16(-1e-7)
			want := append([]float32(nil), acc...)
			s := float32(r.Float64() * 2)
			if trial == 0 {
				s = 1
			}
			madF16Go(want, k, s)
			madF16x8(&acc[0], &k[0], s, n)
			for i := range acc {
				if math.Float32bits(acc[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d trial %d: madF16x8[%d] = %v, Go %v", n, trial, i, acc[i], want[i])
				}
			}
		}
	}
}

func TestF32KernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 7, 8, 16, 64, 100, 128} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range n {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		var want float64
		for i := range n {
			want += float64(a[i]) * float64(b[i])
		}
		got := dotF32(a, b)
		if ref := dotF32Go(a, b); math.Float32bits(got) != math.Float32bits(ref) {
			t.Errorf("n=%d: dotF32 = %v, Go twin %v", n, got, ref)
		}
		if math.Abs(float64(got)-want) > 1e-5*float64(n) {
			t.Errorf("n=%d: dotF32 = %v, want %v", n, got, want)
		}
		y1 := append([]float32(nil), b...)
		y2 := append([]float32(nil), b...)
		axpyF32(y1, a, 0.37)
		axpyF32Go(y2, a, 0.37)
		for i := range y1 {
			if math.Float32bits(y1[i]) != math.Float32bits(y2[i]) {
				t.Fatalf("n=%d: axpyF32[%d] = %v, Go twin %v", n, i, y1[i], y2[i])
			}
		}
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

// TestTileKernels checks the tiled path's multi-query score kernel and
// register-blocked weighted sum against one dotF32 / axpyF32 call per
// pair, bit for bit.
func TestTileKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, hd := range []int{8, 64, 128, 72, 256} {
		for _, np := range []int{1, 3, tileKV} {
			k, q, v := make([]float32, np*hd), make([]float32, 4*hd), make([]float32, np*hd)
			for i := range k {
				k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			var sc [4][tileKV]float32
			scoresF32(&sc, k, q, hd, np, 4, 0.125)
			for i := range 4 {
				for p := range np {
					if want := dotF32(k[p*hd:(p+1)*hd], q[i*hd:(i+1)*hd]) * 0.125; sc[i][p] != want {
						t.Fatalf("hd %d np %d: score[%d][%d] = %v, want %v", hd, np, i, p, sc[i][p], want)
					}
				}
			}
			w := sc[1][:np]
			got, want := make([]float32, hd), make([]float32, hd)
			for i := range got {
				got[i] = float32(r.NormFloat64())
				want[i] = got[i]
			}
			weightedSum(got, v, w)
			for p, pv := range w {
				axpyF32(want, v[p*hd:(p+1)*hd], pv)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("hd %d np %d: weighted sum [%d] = %v, want %v", hd, np, i, got[i], want[i])
				}
			}
		}
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
	if !haveF16Kernels {
		t.Skip("no AVX2/FMA/F16C kernels on this CPU or build (purego); onlineF16Go is what runs")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, hd := range []int{64, 128, 256} {
		for _, kvLen := range []int{1, 2, 63, 255, 256, 257, 700, 1300} {
			for _, shape := range []string{"random", "rising", "falling", "huge"} {
				const heads = 3
				stride, off := heads*hd, hd // the middle head of three
				k, v := make([]uint16, stride*kvLen), make([]uint16, stride*kvLen)
				for i := range k {
					k[i] = toF16(float32(r.NormFloat64()))
					x := r.NormFloat64()
					if shape == "huge" {
						x *= 3e4
					}
					v[i] = toF16(float32(x))
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
							k[p*stride+off+i] = toF16(float32(f * float64(q[i]) / qq * float64(hd)))
						}
					}
				}
				want, got := make([]float32, hd), make([]float32, hd)
				onlineF16Go(want, q, k, v, off, stride, kvLen, 0.088)
				onlineF16Blocked(got, q, k, v, off, stride, kvLen, 0.088)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("hd %d, %d positions, %s: out[%d] = %g, Go loop %g", hd, kvLen, shape, i, got[i], want[i])
					}
				}
			}
		}
	}
}
