package rope_test

import (
	"fmt"

	"github.com/smolgo/smolgo/rope"
)

func Example() {
	cfg := rope.Config{Dims: 4, Base: 10000} // adjacent pairs, no scaling
	cos, sin := make([]float32, 2), make([]float32, 2)
	cfg.Angles(1, cos, sin) // position 1

	head := []float32{1, 0, 1, 0}
	cfg.Rotate(head, cos, sin)
	fmt.Printf("%.4f\n", head)

	nope := rope.EveryNth(8, 4) // SmolLM3: every 4th layer has no RoPE
	fmt.Println(nope.Rotates(2), nope.Rotates(3))
	// Output:
	// [0.5403 0.8415 0.9999 0.0100]
	// true false
}
