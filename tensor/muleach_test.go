package tensor

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/bigmem"
)

// MulEach gives every product exactly what Mul gives it alone: products of
// several types (interleaved q4_K among them) with inputs of their own and
// shared, one row and several, and F16 weights at a row count that takes
// the float GEMM (run apart), on several thread counts.
func TestMulEach(t *testing.T) {
	const cols = 512
	r := rand.New(rand.NewPCG(9, 10))
	mats := []*Matrix{}
	for _, c := range []struct {
		typ  gguf.Type
		rows int
	}{{gguf.TypeQ4_K, 768}, {gguf.TypeQ4_K, 768}, {gguf.TypeQ6_K, 256}, {gguf.TypeQ8_0, 200}, {gguf.TypeF32, 48}, {gguf.TypeF16, 64}, {gguf.TypeQ5_0, 96}} {
		m, _ := quantRows(t, c.typ, c.rows, cols, r)
		mats = append(mats, m)
	}
	if n := mats[1].InterleaveBytes(); n > 0 {
		buf, err := bigmem.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		defer bigmem.Free(buf)
		if err := mats[1].Interleave(buf); err != nil {
			t.Fatal(err)
		}
		defer mats[1].Uninterleave()
	}
	input := func(n int) []float32 {
		x := make([]float32, n*cols)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	for _, threads := range []int{1, 2, 3} {
		p := NewPool(threads)
		var s Scratch
		shared := input(3)
		var prods []Product
		for i, m := range mats {
			n := []int{1, 3, 5, 2, 1, 30, 3}[i]
			x := input(n)
			if n == 3 {
				x = shared // products of the same input convert it once
			}
			prods = append(prods, Product{M: m, X: x, N: n, Dst: make([]float32, n*m.Rows)})
		}
		if err := MulEach(p, &s, prods); err != nil {
			t.Fatal(err)
		}
		for i, pr := range prods {
			want := make([]float32, pr.N*pr.M.Rows)
			if err := pr.M.Mul(p, &s, want, pr.X, pr.N); err != nil {
				t.Fatal(err)
			}
			for k := range want {
				if math.Float32bits(pr.Dst[k]) != math.Float32bits(want[k]) {
					t.Fatalf("threads %d: product %d (%v, %d rows): out[%d] = %v, Mul gives %v", threads, i, pr.M.Type, pr.N, k, pr.Dst[k], want[k])
				}
			}
		}
		if err := MulEach(p, &s, []Product{{M: mats[0], X: make([]float32, cols), N: 2, Dst: make([]float32, 2*768)}}); err == nil {
			t.Error("too few inputs: no error")
		}
		p.Close()
	}
}
