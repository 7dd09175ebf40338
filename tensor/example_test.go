package tensor_test

import (
	"encoding/binary"
	"fmt"
	"log"
	"math"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/tensor"
)

// Multiply a stored weight matrix by two activation rows on a shared pool.
func Example() {
	// A 2×4 f32 weight matrix in ggml's byte layout (usually a slice of a
	// memory-mapped GGUF file, often quantized).
	w := []float32{1, 0, 0, 0, 0, 1, 1, 0}
	data := make([]byte, 4*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	m, err := tensor.NewMatrix("demo.weight", gguf.TypeF32, 2, 4, data)
	if err != nil {
		log.Fatal(err)
	}
	pool := tensor.NewPool(0) // all cores, reused by every product
	defer pool.Close()
	var scratch tensor.Scratch // per goroutine; reused so products allocate nothing

	x := []float32{1, 2, 3, 4, 5, 6, 7, 8} // two rows of 4
	out := make([]float32, 2*2)
	if err := m.Mul(pool, &scratch, out, x, 2); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)

	norm := make([]float32, 4)
	tensor.RMSNorm(norm, x[:4], []float32{1, 1, 1, 1}, 1e-6)
	fmt.Printf("%.3f\n", norm)
	// Output:
	// [1 5 5 13]
	// [0.365 0.730 1.095 1.461]
}
