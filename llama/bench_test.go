package llama

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/rope"
)

// benchDecode measures decode steps of n sequences at once: each has a
// 16-token prompt, each iteration is one Step with one new token per
// sequence, and the caches are truncated back after it, so every iteration
// attends over the same 17 positions. It reports the total decode rate of
// the n sequences (tok/s).
func benchDecode(b *testing.B, m *CPU, n int) {
	be := newBackend(b, m, CacheOptions{})
	V := m.Config.Vocab
	ctx := context.Background()
	batch := make([]engine.Seq, n)
	for i := range batch {
		p := make([]int32, 16)
		for j := range p {
			p[j] = int32((i*31 + j*7) % V)
		}
		batch[i] = engine.Seq{Cache: newSeqCache(b, be), Tokens: p}
	}
	if err := be.Step(ctx, batch); err != nil {
		b.Fatal(err)
	}
	for i := range batch {
		batch[i].Tokens, batch[i].Logits = []int32{int32(i % V)}, make([]float32, V)
	}
	for b.Loop() {
		if err := be.Step(ctx, batch); err != nil {
			b.Fatal(err)
		}
		for _, s := range batch {
			s.Cache.Truncate(16)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// benchTokens measures one sequence's step of k tokens (a sampled token
// plus a draft of k-1) after a 16-token prompt, all k rows of logits asked
// for, truncated back after each step.
func benchTokens(b *testing.B, m *CPU, k int) {
	be := newBackend(b, m, CacheOptions{})
	V := m.Config.Vocab
	ctx := context.Background()
	c := newSeqCache(b, be)
	p := make([]int32, 16+k)
	for j := range p {
		p[j] = int32(j * 7 % V)
	}
	if err := be.Step(ctx, []engine.Seq{{Cache: c, Tokens: p[:16]}}); err != nil {
		b.Fatal(err)
	}
	seq := []engine.Seq{{Cache: c, Tokens: p[16:], Logits: make([]float32, k*V)}}
	for b.Loop() {
		if err := be.Step(ctx, seq); err != nil {
			b.Fatal(err)
		}
		c.Truncate(16)
	}
}

// BenchmarkStep: decode steps of 1 to 8 sequences on the tiny golden Q4_K_M
// model (tok/s is the total of the sequences), and one sequence's step of k
// tokens.
func BenchmarkStep(b *testing.B) {
	_, m := openModel(b, "smollm3-tinyq-Q4_K_M", Options{Threads: 2}, rope.EveryNth(8, 4))
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("decode/N=%d", n), func(b *testing.B) { benchDecode(b, m, n) })
	}
	for _, k := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("tokens/k=%d", k), func(b *testing.B) { benchTokens(b, m, k) })
	}
}

// BenchmarkStepModel is BenchmarkStep on the model file named by
// SMOLGO_MODEL (the 3B Q4_K_M of shared/tools/peer-bench/make-3b.sh is the
// one issue 13 measures), with SMOLGO_THREADS threads (default 2):
//
//	SMOLGO_MODEL=/work/models/smollm3-3b-Q4_K_M.gguf go test ./llama -run - -bench StepModel -benchtime 10x -count 3
//
// decode/N=n reports the total decode rate of n sequences (tok/s);
// tokens/k=k the time of one sequence's step of k tokens, whose ratio to
// k=1 is what a draft of k-1 tokens costs.
func BenchmarkStepModel(b *testing.B) {
	path := os.Getenv("SMOLGO_MODEL")
	if path == "" {
		b.Skip("SMOLGO_MODEL is not set")
	}
	threads := 2
	if s := os.Getenv("SMOLGO_THREADS"); s != "" {
		if _, err := fmt.Sscan(s, &threads); err != nil {
			b.Fatalf("SMOLGO_THREADS=%q: %v", s, err)
		}
	}
	m := openModelFile(b, path, threads)
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("decode/N=%d", n), func(b *testing.B) { benchDecode(b, m, n) })
	}
	for k := 1; k <= 8; k++ {
		b.Run(fmt.Sprintf("tokens/k=%d", k), func(b *testing.B) { benchTokens(b, m, k) })
	}
}
