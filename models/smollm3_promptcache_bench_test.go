package models_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
)

// BenchmarkPromptCacheTTFT is the time to first token of a new session
// (a new client) whose prompt starts with the same 2,000-token system
// prompt as every other, without and with the model's prompt cache; each
// iteration asks a different question.
func BenchmarkPromptCacheTTFT(b *testing.B) {
	system := strings.Repeat("Answer in one short sentence. ", 93) + "/system_override" // ~2,000 tokens here
	for _, pc := range []int64{0, 256 << 20} {
		b.Run(fmt.Sprintf("prompt-cache=%v", pc > 0), func(b *testing.B) {
			m := loadGoldenModel(b, "smollm3-tinyq-Q4_K_M", engine.WithThreads(2), engine.WithPromptCache(pc))
			opts := engine.GenerateOptions{MaxTokens: 1, Thinking: ptr(false)}
			msgs := func(i int) []engine.Message {
				return []engine.Message{{Role: "system", Content: system}, {Role: "user", Content: fmt.Sprintf("Question %d?", i)}}
			}
			if r := collect(m.NewSession(), context.Background(), msgs(-1), opts); r.err != nil { // warm-up, fills the cache
				b.Fatal(r.err)
			}
			b.ResetTimer()
			var st *engine.Stats
			for i := range b.N {
				r := collect(m.NewSession(), context.Background(), msgs(i), opts)
				if r.err != nil {
					b.Fatal(r.err)
				}
				st = r.stats
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/first-token")
			b.ReportMetric(float64(st.PromptTokens), "prompt-tokens")
			b.ReportMetric(float64(st.CachedTokens), "cached-tokens")
		})
	}
}
