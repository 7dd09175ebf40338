package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// BenchmarkQuantizeActivations: one 2048-wide activation row per op (b.SetBytes
// is the 8 KB of float32 read).
//
//	go test -run '^$' -bench QuantizeActivations ./quant/
func BenchmarkQuantizeActivations(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 16))
	x := make([]float32, benchN)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, vt := range []gguf.Type{gguf.TypeQ8_K, gguf.TypeQ8_0, gguf.TypeQ8_1, gguf.TypeF16, gguf.TypeBF16} {
		nb, _ := vt.RowBytes(benchN)
		dst := make([]byte, nb)
		b.Run(fmt.Sprint(vt), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			done := cpuRate(b, int64(4*len(x)))
			for b.Loop() {
				if err := QuantizeActivations(vt, x, dst); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
}
