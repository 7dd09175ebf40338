package models_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// BenchmarkDecode measures single-token decode steps after a 12-token
// prompt on the golden tiny models (tokens/s = 1e9 / ns/op).
func BenchmarkDecode(b *testing.B) {
	for _, model := range []string{"smollm3-tinyq-Q4_K_M", "smollm3-tinyq-Q8_0", "smollm3-tinyq-F16"} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", model, threads), func(b *testing.B) {
				_, m := goldentest.Open(b, sharedtest.Path(b, "golden/models/"+model+".gguf"), engine.WithThreads(threads))
				c, _ := m.NewCache()
				ctx := context.Background()
				prompt := []int32{331, 296, 308, 311, 313, 318, 320, 262, 323, 325, 13, 198}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if c.Len() >= 512 {
						c.Truncate(len(prompt))
					}
					if c.Len() == 0 {
						if _, err := m.Forward(ctx, c, prompt, 0, false); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := m.Forward(ctx, c, []int32{42}, c.Len(), false); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}

// BenchmarkPrefill measures a 128-token prompt processed as one batch.
func BenchmarkPrefill(b *testing.B) {
	for _, model := range []string{"smollm3-tinyq-Q4_K_M", "smollm3-tinyq-Q8_0"} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", model, threads), func(b *testing.B) {
				_, m := goldentest.Open(b, sharedtest.Path(b, "golden/models/"+model+".gguf"), engine.WithThreads(threads))
				c, _ := m.NewCache()
				ctx := context.Background()
				prompt := make([]int32, 128)
				for i := range prompt {
					prompt[i] = int32(i * 7 % 331)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c.Reset()
					if _, err := m.Forward(ctx, c, prompt, 0, false); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}
