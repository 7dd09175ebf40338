package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSSMScan checks SSMScan against a float64 evaluation of the
// recurrence (it is the scan), and, where this CPU has the assembly, that
// the assembly gives the Go twin's bits, over state sizes with and without
// a tail of fewer than 32 entries.
func TestSSMScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	randn := func(v []float32, scale float32) {
		for i := range v {
			v[i] = float32(rng.NormFloat64()) * scale
		}
	}
	for _, tc := range []struct{ rows, n int }{{1, 32}, {4, 64}, {64, 128}, {3, 48}, {5, 16}, {2, 1}, {32, 96}} {
		t.Run(fmt.Sprintf("%dx%d", tc.rows, tc.n), func(t *testing.T) {
			s := make([]float32, tc.rows*tc.n)
			x, B, C := make([]float32, tc.rows), make([]float32, tc.n), make([]float32, tc.n)
			randn(s, 1)
			sGo, s64 := append([]float32(nil), s...), make([]float64, len(s))
			for i, v := range s {
				s64[i] = float64(v)
			}
			y, yGo := make([]float32, tc.rows), make([]float32, tc.rows)
			for step := range 5 {
				randn(x, 1)
				randn(B, 0.5)
				randn(C, 0.5)
				dt := float32(0.05 + 0.1*rng.Float64())
				dA := float32(math.Exp(-float64(dt) * 1.3))
				SSMScan(y, s, x, B, C, dA, dt)
				ssmScanGo(yGo, sGo, x, B, C, dA, dt)
				for i := range y {
					var want float64
					for k := range tc.n {
						j := i*tc.n + k
						s64[j] = s64[j]*float64(dA) + float64(B[k])*float64(x[i])*float64(dt)
						want += s64[j] * float64(C[k])
					}
					if !sameBits(y[i], yGo[i]) {
						t.Fatalf("step %d: y[%d] = %v, the Go twin %v", step, i, y[i], yGo[i])
					}
					if d := math.Abs(float64(y[i]) - want); d > 1e-4*(1+math.Abs(want)) {
						t.Fatalf("step %d: y[%d] = %v, float64 %v", step, i, y[i], want)
					}
				}
				for j := range s {
					if !sameBits(s[j], sGo[j]) {
						t.Fatalf("step %d: state %d = %v, the Go twin %v", step, j, s[j], sGo[j])
					}
				}
			}
		})
	}
}

// TestReduce32 checks the lane order of the reduction on values whose
// float32 sum depends on it.
func TestReduce32(t *testing.T) {
	var l [32]float32
	l[0], l[16], l[8], l[24] = 1e8, -1e8, 1, 1 // (1e8-1e8) + (1+1)
	if got := reduce32(&l); got != 2 {
		t.Errorf("reduce32 = %v, want 2", got)
	}
	l = [32]float32{}
	l[0], l[4], l[1] = 1e8, 1, -1e8 // ((1e8+1) + (-1e8)): the 1 is lost in the first pair
	if got := reduce32(&l); got != 0 {
		t.Errorf("reduce32 = %v, want 0", got)
	}
}

// TestSiLU checks SiLU's bits against the scalar formula SwiGLU's
// reference uses.
func TestSiLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 200)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 6)
	}
	x[0], x[1] = -100, 100
	dst := make([]float32, len(x))
	SiLU(dst, x)
	for i, v := range x {
		if want := v / (1 + Expf(-v)); !sameBits(dst[i], want) {
			t.Fatalf("SiLU(%v) = %v, want %v", v, dst[i], want)
		}
	}
	SiLU(x, x) // in place
	for i := range x {
		if !sameBits(x[i], dst[i]) {
			t.Fatalf("SiLU in place: %v, want %v", x[i], dst[i])
		}
	}
}

// TestSSMConv checks the convolution's sums (rounded products for the
// first K &^ 3 taps, fused for the rest) and how the window moves.
func TestSSMConv(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, K := range []int{2, 3, 4, 5, 8} {
		const C = 5
		w, x := make([]float32, C*K), make([]float32, C)
		window := make([]float32, (K-1)*C)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		for i := range window {
			window[i] = float32(rng.NormFloat64())
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		old := append([]float32(nil), window...)
		// Channels 1…3 alone, on copies: the same as in the whole call.
		part, partWin := make([]float32, 2), append([]float32(nil), window[1*(K-1):3*(K-1)]...)
		SSMConv(part, partWin, x[1:3], w[1*K:3*K])
		dst := make([]float32, C)
		SSMConv(dst, window, x, w)
		for i, v := range part {
			if !sameBits(v, dst[1+i]) || !sameBits(partWin[i*(K-1)], window[(1+i)*(K-1)]) {
				t.Fatalf("K %d: a range of channels gives %v, the whole call %v", K, v, dst[1+i])
			}
		}
		for ch := range C {
			var want float32
			for k := range K {
				in := x[ch]
				if k < K-1 {
					in = old[ch*(K-1)+k]
				}
				if k < K&^3 {
					want += float32(in * w[ch*K+k])
				} else {
					want = fma32(in, w[ch*K+k], want)
				}
			}
			if !sameBits(dst[ch], want) {
				t.Errorf("K %d: channel %d = %v, want %v", K, ch, dst[ch], want)
			}
		}
		for k := range K - 1 {
			for ch := range C {
				want := x[ch]
				if k < K-2 {
					want = old[ch*(K-1)+k+1]
				}
				if window[ch*(K-1)+k] != want {
					t.Fatalf("K %d: window row %d channel %d = %v, want %v", K, k, ch, window[k*C+ch], want)
				}
			}
		}
	}
}

// BenchmarkSSMScan is one Mamba-2 head of Granite-4.0-H-Micro's shape
// (64 channels, state 128) for one token; the state stays in cache.
func BenchmarkSSMScan(b *testing.B) {
	const rows, n = 64, 128
	s, x, B, C, y := make([]float32, rows*n), make([]float32, rows), make([]float32, n), make([]float32, n), make([]float32, rows)
	for i := range B {
		B[i], C[i] = 0.01*float32(i%7), 0.02*float32(i%5)
	}
	for i := range x {
		x[i] = float32(i%3) - 1
	}
	b.SetBytes(rows * n * 4)
	for b.Loop() {
		SSMScan(y, s, x, B, C, 0.9, 0.1)
	}
}
