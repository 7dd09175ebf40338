package synth_test

import (
	"context"
	"io"
	"testing"

	"github.com/smolgo/smolgo/internal/synth"
)

// BenchmarkWriteTinyq measures generation (and quantization) speed per
// mix on the tinyq preset (3.24 M weights); bytes/s is of tensor data.
func BenchmarkWriteTinyq(b *testing.B) {
	m, _ := synth.Preset("tinyq")
	for _, mix := range []synth.Mix{synth.MixF32, synth.MixQ8_0, synth.MixQ4_K_M} {
		b.Run(string(mix), func(b *testing.B) {
			b.SetBytes(3236352) // weights
			for b.Loop() {
				if err := synth.Write(context.Background(), io.Discard, m, synth.Options{Mix: mix, Workers: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
