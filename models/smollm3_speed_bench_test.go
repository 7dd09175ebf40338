package models_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/synth"
)

// benchShape is a synthetic SmolLM3 big enough that matrix products, not
// per-call overhead, dominate (about 60 M parameters in Q4_K_M), small
// enough to be written in memory in a few seconds.
var benchShape = synth.Shape{
	Arch: "smollm3", Layers: 4, Embd: 1024, FFN: 2816, Heads: 16, KVHeads: 4,
	Context: 4096, Vocab: 16384, RopeBase: 5e6, RMSEps: 1e-6,
}

// benchModel opens the model named by SMOLGO_MODEL, or, if that is empty
// and synthetic is true, a synthetic Q4_K_M model of benchShape written to
// a temporary file, and returns it with its parts (closed at the
// benchmark's end). It skips the benchmark when neither applies.
func benchModel(b *testing.B, synthetic bool, threads int) (*engine.Model, *family.Parts) {
	b.Helper()
	opts := []engine.Option{engine.WithThreads(threads), engine.WithContext(1024)}
	if path := os.Getenv("SMOLGO_MODEL"); path != "" {
		return goldentest.Open(b, path, opts...)
	}
	if !synthetic {
		b.Skip("set SMOLGO_MODEL to a GGUF file (e.g. the 3B Q4_K_M from shared/tools/peer-bench/make-3b.sh)")
	}
	path := filepath.Join(b.TempDir(), "bench.gguf")
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	sm := synth.Model{Name: "bench", Seed: 7, Shape: benchShape}
	err = synth.Write(context.Background(), out, sm, synth.Options{Mix: synth.MixQ4_K_M})
	if err2 := out.Close(); err == nil {
		err = err2
	}
	if err != nil {
		b.Fatal(err)
	}
	return goldentest.Open(b, path, opts...)
}

// benchDecode measures one decode step at a context of 16 to 16+steps
// positions; it reports tok/s and, with ReportAllocs, the allocations of a
// step (which must be zero once the cache's buffers have grown).
func benchDecode(b *testing.B, m *family.Parts) {
	c, err := m.NewCache()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	prompt := make([]int32, 16)
	for i := range prompt {
		prompt[i] = int32(i*37%200 + 1)
	}
	if _, err := m.Forward(ctx, c, prompt, 0, false); err != nil {
		b.Fatal(err)
	}
	// Grow the cache once to its steady-state capacity.
	tok := []int32{42}
	for c.Len() < 80 {
		if _, err := m.Forward(ctx, c, tok, c.Len(), false); err != nil {
			b.Fatal(err)
		}
	}
	c.Truncate(len(prompt))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for b.Loop() {
		if c.Len() >= 80 {
			c.Truncate(len(prompt))
		}
		if _, err := m.Forward(ctx, c, tok, c.Len(), false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
	b.ReportMetric((processCPU()-cpu0)*1e3/float64(b.N), "cpu-ms/tok")
}

func benchPrefill(b *testing.B, m *family.Parts, n int) {
	c, err := m.NewCache()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = int32(i*37%200 + 1)
	}
	if _, err := m.Forward(ctx, c, prompt, 0, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for b.Loop() {
		c.Reset()
		if _, err := m.Forward(ctx, c, prompt, 0, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "tok/s")
	b.ReportMetric((processCPU()-cpu0)*1e3/float64(b.N*n), "cpu-ms/tok")
}

// BenchmarkSpeedDecode is decode speed on a synthetic Q4_K_M model, or on
// the file named by SMOLGO_MODEL:
//
//	SMOLGO_MODEL=/work/models/smollm3-3b-Q4_K_M.gguf go test -run '^$' -bench SpeedDecode -benchtime 32x ./models
func BenchmarkSpeedDecode(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			_, p := benchModel(b, true, threads)
			benchDecode(b, p)
		})
	}
}

// BenchmarkSpeedPrefill is prefill speed (a 128-token prompt in one call
// on the synthetic Q4_K_M model, 512 tokens on SMOLGO_MODEL).
func BenchmarkSpeedPrefill(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			_, p := benchModel(b, true, threads)
			n := 128
			if os.Getenv("SMOLGO_MODEL") != "" {
				n = 512
			}
			benchPrefill(b, p, n)
		})
	}
}

// BenchmarkSessionDecode is decode speed through the whole engine (a
// session's Generate: scheduler, sampling, detokenizing, parsing), next to
// BenchmarkSpeedDecode's bare Forward calls: each op is one 32-token
// greedy answer after a short prompt, reported as decode tokens/s.
//
//	SMOLGO_MODEL=/work/models/smollm3-3b-Q4_K_M.gguf go test -run '^$' -bench SessionDecode -benchtime 5x ./models
func BenchmarkSessionDecode(b *testing.B) {
	m, p := benchModel(b, true, 2)
	if _, err := p.Tokenizer(); err != nil {
		b.Skipf("the model has no tokenizer: %v", err)
	}
	var rates []float64
	for b.Loop() {
		r := collect(m.NewSession(), context.Background(), user("Tell me a story."), engine.GenerateOptions{MaxTokens: 32, Thinking: ptr(false)})
		if r.err != nil {
			b.Fatal(r.err)
		}
		rates = append(rates, r.stats.DecodeTokensPerSec)
	}
	slices.Sort(rates)
	b.ReportMetric(rates[len(rates)/2], "tok/s")
}
