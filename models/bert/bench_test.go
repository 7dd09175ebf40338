package bert

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/gguf"
)

// BenchmarkEncode is docs/embeddings.md's speed measurement: a batch of
// sequences embedded in passes of at most 512 tokens, whole sequences
// packed in order (what `llamaref embed --ubatch 512` and llama-server do),
// reporting tokens and sequences per second. It needs a model:
//
//	SMOLGO_BERT_MODEL=/tmp/bge-small-f16.gguf [SMOLGO_BERT_TOKENS=seqs.txt] \
//	    go test ./bert -run XXX -bench Encode -benchtime 5x -cpu 2
//
// SMOLGO_BERT_TOKENS is the file given to llamaref (one sequence per line,
// ids separated by commas); without it 64 sequences of 90 to 110 random
// ids are made. -cpu sets the threads.
func BenchmarkEncode(b *testing.B) {
	path := os.Getenv("SMOLGO_BERT_MODEL")
	if path == "" {
		b.Skip("set SMOLGO_BERT_MODEL to a BERT GGUF (see docs/embeddings.md)")
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	w, err := LoadWeights(f, cfg)
	if err != nil {
		b.Fatal(err)
	}
	threads, _ := strconv.Atoi(os.Getenv("GOMAXPROCS"))
	e, err := NewEncoder(w, Options{Threads: threads})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	seqs := benchTokens(b, cfg.Vocab)
	pool := cfg.Pooling
	if pool == backend.PoolDefault {
		pool = backend.PoolMean
	}
	tokens := 0
	for _, s := range seqs {
		tokens += len(s)
	}
	out := make([]float32, len(seqs)*max(cfg.Embd, cfg.Labels))
	var batch []backend.EncodeSeq
	run := func() {
		for i := 0; i < len(seqs); {
			batch, n := batch[:0], 0
			for ; i < len(seqs) && n+len(seqs[i]) <= 512; i++ {
				dim := cfg.Embd
				if pool == backend.PoolRank {
					dim = cfg.Labels
				}
				batch = append(batch, backend.EncodeSeq{Tokens: seqs[i], Pooling: pool, Out: out[i*dim : (i+1)*dim]})
				n += len(seqs[i])
			}
			if err := e.Encode(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	run() // warm up
	b.ResetTimer()
	for b.Loop() {
		run()
	}
	s := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(tokens)/s, "tokens/s")
	b.ReportMetric(float64(len(seqs))/s, "seqs/s")
	b.Logf("%d sequences, %d tokens, %d threads, %s", len(seqs), tokens, e.Threads(), path)
}

func benchTokens(b *testing.B, vocab int) [][]int32 {
	if p := os.Getenv("SMOLGO_BERT_TOKENS"); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		var seqs [][]int32
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var s []int32
			for _, f := range strings.Split(line, ",") {
				v, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil {
					b.Fatal(err)
				}
				s = append(s, int32(v))
			}
			seqs = append(seqs, s)
		}
		return seqs
	}
	r := rand.New(rand.NewPCG(7, 7))
	seqs := make([][]int32, 64)
	for i := range seqs {
		seqs[i] = make([]int32, 90+r.IntN(21))
		for j := range seqs[i] {
			seqs[i][j] = int32(r.IntN(vocab))
		}
	}
	return seqs
}
