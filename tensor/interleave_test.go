package tensor

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
)

// TestInterleavedProducts gives q4_K and q6_K matrices their interleaved
// copy, then overwrites Data with garbage: the products, fused or not, one
// token (a decode step), a few (several sequences) or a prefill batch (the
// GEMM on AVX-512), over 1 to 3 threads, must still match the file
// layout's products on a twin matrix within float32 rounding, so they
// never read Data again (no second copy of the weights is needed).
func TestInterleavedProducts(t *testing.T) {
	g := quant.InterleaveRows(gguf.TypeQ4_K)
	if g == 0 {
		t.Skipf("no interleaved layout with the %s kernels", quant.Path())
	}
	const cols = 768
	r := rand.New(rand.NewPCG(7, 8))
	type pair struct{ ilv, file *Matrix }
	var ms []pair
	for _, c := range []struct {
		typ  gguf.Type
		rows int
	}{{gguf.TypeQ4_K, 20 * g}, {gguf.TypeQ6_K, 6 * g}, {gguf.TypeQ4_K, 2 * g}} {
		file, _ := quantRows(t, c.typ, c.rows, cols, r)
		data := append([]byte(nil), file.Data...)
		ilv, err := NewMatrix("ilv", c.typ, c.rows, cols, data)
		if err != nil {
			t.Fatal(err)
		}
		if ilv.InterleaveBytes() != len(data) {
			t.Fatalf("%v %d rows: InterleaveBytes %d, want %d", c.typ, c.rows, ilv.InterleaveBytes(), len(data))
		}
		if err := ilv.Interleave(make([]byte, ilv.InterleaveBytes())); err != nil {
			t.Fatal(err)
		}
		for i := range data {
			data[i] = byte(i*7 + 3) // the products must not read it
		}
		ms = append(ms, pair{ilv, file})
	}
	for _, threads := range []int{1, 2, 3} {
		p := NewPool(threads)
		var s Scratch
		for _, n := range []int{1, 3, 8, 30, 64} {
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			var outs, wants []Out
			for _, m := range ms {
				outs = append(outs, Out{m.ilv, make([]float32, n*m.ilv.Rows)})
				wants = append(wants, Out{m.file, make([]float32, n*m.file.Rows)})
			}
			if err := MulInto(p, &s, x, n, outs...); err != nil {
				t.Fatal(err)
			}
			if err := MulInto(p, &s, x, n, wants...); err != nil {
				t.Fatal(err)
			}
			for i := range outs {
				for j, got := range outs[i].Dst {
					want := wants[i].Dst[j]
					if math.Abs(float64(got-want)) > 1e-4*math.Max(1, math.Abs(float64(want))) || math.IsNaN(float64(got)) {
						t.Fatalf("threads %d, %d tokens, %v matrix %d: out[%d] = %g, file layout %g", threads, n, ms[i].ilv.Type, i, j, got, want)
					}
				}
			}
		}
		p.Close()
	}
}
