package qwen35_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/smolgo/smolgo/backend"
)

// BenchmarkMTPStep compares one step of the MTP block (one drafted token)
// with the model's steps of 1, 2 and 4 tokens (a token and its draft), at
// 32 cached positions: what a draft costs against what it saves. The model
// is SMOLGO_MTP_BENCH_MODEL (a Qwen3.5 file with an MTP block), else the
// tiny one of TestMTPLogitsMatchLlamaCpp.
//
//	SMOLGO_MTP_BENCH_MODEL=q35-mtp-Q8_0.gguf go test ./models/qwen35 -run - -bench MTPStep -count 5
func BenchmarkMTPStep(b *testing.B) {
	path := os.Getenv("SMOLGO_MTP_BENCH_MODEL")
	if path == "" {
		path, _ = tinyMTPFile(b, "qwen35")
	}
	model, head := openMTP(b, path)
	ctx := context.Background()
	V, E := model.Vocab(), model.(backend.HiddenStates).HiddenDim()
	prompt := make([]int32, 32)
	for i := range prompt {
		prompt[i] = int32(i % V)
	}
	for _, k := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("model-%d", k), func(b *testing.B) {
			c, _ := model.NewCache()
			if err := model.Step(ctx, []backend.Seq{{Cache: c, Tokens: prompt}}); err != nil {
				b.Fatal(err)
			}
			// The recurrent layers come back to the prompt's end from a
			// checkpoint, as after a rejected draft.
			if err := c.(backend.Checkpointer).Checkpoint(); err != nil {
				b.Fatal(err)
			}
			toks, logits, hidden := prompt[:k], make([]float32, k*V), make([]float32, k*E)
			for b.Loop() {
				if err := model.Step(ctx, []backend.Seq{{Cache: c, Tokens: toks, Logits: logits, Hidden: hidden}}); err != nil {
					b.Fatal(err)
				}
				if err := c.Truncate(len(prompt)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("mtp-1", func(b *testing.B) {
		c, _ := head.NewCache()
		if err := head.Step(ctx, []backend.Seq{{Cache: c, Tokens: prompt, Embeds: make([]float32, len(prompt)*E)}}); err != nil {
			b.Fatal(err)
		}
		h, logits, out := make([]float32, E), make([]float32, V), make([]float32, E)
		for b.Loop() {
			if err := head.Step(ctx, []backend.Seq{{Cache: c, Tokens: prompt[:1], Embeds: h, Logits: logits, Hidden: out}}); err != nil {
				b.Fatal(err)
			}
			if err := c.Truncate(len(prompt)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
