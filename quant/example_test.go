package quant_test

import (
	"fmt"
	"math"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
)

// Quantize a row of 64 weights to Q8_0 (two blocks of 32), dequantize it,
// and measure what the 8-bit format lost.
func Example() {
	row := make([]float32, 64)
	for i := range row {
		row[i] = float32(math.Sin(float64(i) * 0.3))
	}

	n, err := gguf.TypeQ8_0.RowBytes(len(row)) // 2 blocks × 34 bytes
	if err != nil {
		panic(err)
	}
	blocks := make([]byte, n)
	if err := quant.Quantize(gguf.TypeQ8_0, row, blocks); err != nil {
		panic(err)
	}

	back := make([]float32, len(row))
	if err := quant.Dequantize(gguf.TypeQ8_0, blocks, back); err != nil {
		panic(err)
	}

	var maxErr, maxAbs float64
	for i := range row {
		maxErr = math.Max(maxErr, math.Abs(float64(back[i]-row[i])))
		maxAbs = math.Max(maxAbs, math.Abs(float64(row[i])))
	}
	fmt.Printf("%d floats (%d bytes) -> %d bytes of q8_0\n", len(row), 4*len(row), len(blocks))
	fmt.Printf("x[5] = %.6f, after the round trip %.6f\n", row[5], back[5])
	// Q8_0 stores x ≈ d·q with q in -127..127 and d = max|x|/127 as float16:
	// the error is about half a step d, a little more from d's rounding.
	fmt.Printf("step d ≈ %.5f, largest error %.5f\n", maxAbs/127, maxErr)
	// Output:
	// 64 floats (256 bytes) -> 68 bytes of q8_0
	// x[5] = 0.997495, after the round trip 0.998970
	// step d ≈ 0.00787, largest error 0.00409
}

// A bad value is reported with the block it is in, instead of being
// quantized into garbage.
func ExampleQuantize_nonFinite() {
	row := make([]float32, 512)
	row[300] = float32(math.Inf(1))
	err := quant.Quantize(gguf.TypeQ4_K, row, make([]byte, 2*144))
	fmt.Println(err)
	// Output:
	// quant: quantize q4_K: block 1: element 300 is +Inf
}
