package quant_test

import (
	"fmt"
	"math"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
)

// One output of y = W·x for a q8_0 weight row of 64 elements: the
// activations are rounded to the weight type's vec dot type first, as
// llama.cpp does, then the block dot product runs on integers.
func ExampleDot() {
	const n = 64
	w := make([]float32, n)
	x := make([]float32, n)
	for i := range x {
		w[i] = 127.0 / 256
		x[i] = float32(i%3-1) * 127 / 64
	}
	wq := make([]byte, 2*34)
	if err := quant.Quantize(gguf.TypeQ8_0, w, wq); err != nil {
		panic(err)
	}
	at, _ := quant.VecDotType(gguf.TypeQ8_0) // q8_0
	act := make([]byte, 2*34)
	if err := quant.QuantizeActivations(at, x, act); err != nil {
		panic(err)
	}
	dot, _ := quant.Dot(gguf.TypeQ8_0)
	fmt.Printf("activations as %v: %.6f\n", at, dot(n, wq, act))
	// Output: activations as q8_0: -0.984436
}

// A q4_K matrix of 4 rows times a batch of 2 tokens: MatMul fills
// out[t*ldo+r]; MatVec does one token. A thread pool would give each worker
// its own range of rows (w and out sliced to it, the same ldo).
func ExampleMatMul() {
	const n, rows, toks = 256, 4, 2
	wf := make([]float32, rows*n)
	for i := range wf {
		wf[i] = float32(math.Sin(float64(i)))
	}
	w := make([]byte, rows*144) // 144 bytes per q4_K block of 256
	if err := quant.Quantize(gguf.TypeQ4_K, wf, w); err != nil {
		panic(err)
	}
	x := make([]float32, toks*n)
	for i := range x {
		x[i] = float32(math.Cos(float64(i) * 0.1))
	}
	at, _ := quant.VecDotType(gguf.TypeQ4_K) // q8_K
	ab, _ := at.RowBytes(n)
	act := make([]byte, toks*ab)
	for t := range toks {
		if err := quant.QuantizeActivations(at, x[t*n:(t+1)*n], act[t*ab:(t+1)*ab]); err != nil {
			panic(err)
		}
	}
	mm, _ := quant.MatMul(gguf.TypeQ4_K)
	out := make([]float32, toks*rows)
	mm(n, w, rows, act, toks, out, rows)

	mv, _ := quant.MatVec(gguf.TypeQ4_K)
	one := make([]float32, rows)
	mv(n, w, act[ab:], one) // token 1 alone

	// For comparison: the dequantized weights times the unrounded x. The
	// difference is what rounding x to 8 bits costs.
	deq := make([]float32, rows*n)
	if err := quant.Dequantize(gguf.TypeQ4_K, w, deq); err != nil {
		panic(err)
	}
	for r := range rows {
		var ref float64
		for i := range n {
			ref += float64(deq[r*n+i]) * float64(x[n+i])
		}
		fmt.Printf("row %d, token 1: %7.3f (MatVec %7.3f, float %7.3f)\n", r, out[rows+r], one[r], ref)
	}
	// Output:
	// row 0, token 1:   1.334 (MatVec   1.334, float   1.361)
	// row 1, token 1:  -0.682 (MatVec  -0.682, float  -0.686)
	// row 2, token 1:  -1.460 (MatVec  -1.460, float  -1.489)
	// row 3, token 1:   0.184 (MatVec   0.184, float   0.191)
}

// Interleaving a q4_K matrix of 8 rows for the CPU's multi-row kernels
// (where it has them: AVX2). The copy has the same size; its products give
// the file layout's results to float32 rounding.
func ExampleInterleave() {
	const n, rows = 512, 8
	wf := make([]float32, rows*n)
	for i := range wf {
		wf[i] = float32(math.Sin(float64(i) * 0.7))
	}
	w := make([]byte, rows*2*144)
	if err := quant.Quantize(gguf.TypeQ4_K, wf, w); err != nil {
		panic(err)
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(math.Cos(float64(i) * 0.1))
	}
	at, _ := quant.VecDotType(gguf.TypeQ4_K)
	ab, _ := at.RowBytes(n)
	act := make([]byte, ab)
	if err := quant.QuantizeActivations(at, x, act); err != nil {
		panic(err)
	}
	mv, _ := quant.MatVec(gguf.TypeQ4_K)
	want := make([]float32, rows)
	mv(n, w, act, want)

	got := want // on a CPU without interleaved kernels, the file's layout
	if g := quant.InterleaveRows(gguf.TypeQ4_K); g > 0 && rows%g == 0 {
		dst := make([]byte, len(w))
		imv, _, err := quant.Interleave(gguf.TypeQ4_K, rows, n, w, dst)
		if err != nil {
			panic(err)
		}
		got = make([]float32, rows)
		imv(n, dst, act, got)
	}
	for r := range rows {
		if math.Abs(float64(got[r]-want[r])) > 1e-4*math.Max(1, math.Abs(float64(want[r]))) {
			fmt.Printf("row %d: %g, file layout %g\n", r, got[r], want[r])
		}
	}
	fmt.Printf("row 0: %.2f\n", want[0])
	// Output: row 0: 0.70
}
