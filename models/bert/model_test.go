package bert

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// TestModelEmbeds runs the golden models through the engine (engine.Open):
// EmbedTokens gives llama.cpp's vectors (normalized as
// llama-server normalizes) and scores, texts go through the file's
// vocabulary, and an encoder refuses to chat.
func TestModelEmbeds(t *testing.T) {
	ctx := context.Background()
	g := loadGolden(t, "bert-tiny-F32")
	m, err := engine.Open(sharedtest.Path(t, "golden-families/models/bert-tiny-F32.gguf"), engine.WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info := m.EmbedInfo()
	if !info.Embeds || info.Ranks || info.Generates || info.Pooling != engine.PoolMean || info.Dim != 256 || info.MaxTokens != 512 {
		t.Errorf("EmbedInfo %+v", info)
	}
	for _, run := range g.Runs {
		var inputs [][]int32
		for _, s := range run.Sequences {
			inputs = append(inputs, s.Tokens)
		}
		res, err := m.EmbedTokens(ctx, inputs, engine.EmbedOptions{Normalize: run.Normalize == "l2"})
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + 7 + 33 + 100; res.Tokens != want {
			t.Errorf("%d tokens counted, want %d", res.Tokens, want)
		}
		for i, s := range run.Sequences {
			if cos, d := agreement(res.Vectors[i], s.Embedding); cos < 0.99999 || d > 1e-4 {
				t.Errorf("normalize %s, %d tokens: cosine %.9f, max |Δ| %.3g", run.Normalize, len(s.Tokens), cos, d)
			}
		}
	}
	res, err := m.Embed(ctx, []string{"Hello world", "the quick brown fox"}, engine.EmbedOptions{Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Vectors) != 2 || res.Tokens < 4 || math.Abs(float64(l2norm(res.Vectors[0]))-1) > 1e-5 {
		t.Errorf("Embed: %d vectors, %d tokens, norm %v", len(res.Vectors), res.Tokens, l2norm(res.Vectors[0]))
	}
	for _, err := range m.NewSession().Generate(ctx, []engine.Message{{Role: "user", Content: "hi"}}, engine.GenerateOptions{}) {
		if !errors.Is(err, engine.ErrNotGenerative) {
			t.Errorf("Generate: %v", err)
		}
	}
	if _, err := m.Rerank(ctx, "q", []string{"d"}, engine.RerankOptions{}); !errors.Is(err, engine.ErrNoEmbeddings) {
		t.Errorf("Rerank on a mean-pooling model: %v", err)
	}
}

func l2norm(v []float32) float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return float32(math.Sqrt(s))
}

// TestModelReranks: the rank model's scores through Rerank's input layout
// equal the encoder's for the same tokens, and its golden scores come out of
// EmbedTokens with rank pooling.
func TestModelReranks(t *testing.T) {
	ctx := context.Background()
	m, err := engine.Open(sharedtest.Path(t, "golden-families/models/bert-rank-tiny-F32.gguf"), engine.WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.EmbedInfo().Ranks {
		t.Fatal("the rank model does not rank")
	}
	g := loadGolden(t, "bert-rank-tiny-F32")
	var inputs [][]int32
	for _, s := range g.Runs[0].Sequences {
		inputs = append(inputs, s.Tokens)
	}
	res, err := m.EmbedTokens(ctx, inputs, engine.EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range g.Runs[0].Sequences {
		if d := math.Abs(float64(res.Vectors[i][0] - s.Scores[0])); d > 1e-4 {
			t.Errorf("%d tokens: score %v, llama.cpp %v", len(s.Tokens), res.Vectors[i][0], s.Scores[0])
		}
	}
	docs := []string{"the quick brown fox", "Hello world", "jumps over the lazy dog"}
	r, err := m.Rerank(ctx, "quick fox", docs, engine.RerankOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		ids, err := m.Format().(engine.EmbedFormat).RerankTokens("quick fox", d)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, 1)
		if err := m.Encoder().Encode(ctx, []backend.EncodeSeq{{Tokens: ids, Pooling: backend.PoolRank, Out: out}}); err != nil {
			t.Fatal(err)
		}
		if out[0] != r.Scores[i] {
			t.Errorf("document %d: Rerank %v, the encoder alone %v", i, r.Scores[i], out[0])
		}
	}
}

// TestBatchInvariance: a sequence's embedding is bit for bit the same
// alone and in a pass with others, whatever its place, for every pooling.
func TestBatchInvariance(t *testing.T) {
	e := openEncoder(t, "bert-rank-tiny-F32", Options{Threads: 2})
	g := loadGolden(t, "bert-rank-tiny-F32")
	var seqs [][]int32
	for _, s := range g.Runs[0].Sequences {
		seqs = append(seqs, s.Tokens)
	}
	ctx := context.Background()
	for _, p := range []backend.Pooling{backend.PoolMean, backend.PoolCLS, backend.PoolLast, backend.PoolRank} {
		dim := 256
		if p == backend.PoolRank {
			dim = 1
		}
		alone := make([][]float32, len(seqs))
		for i, s := range seqs {
			alone[i] = make([]float32, dim)
			if err := e.Encode(ctx, []backend.EncodeSeq{{Tokens: s, Pooling: p, Out: alone[i]}}); err != nil {
				t.Fatal(err)
			}
		}
		batch := make([]backend.EncodeSeq, len(seqs))
		for i := range seqs {
			j := len(seqs) - 1 - i // reversed order
			batch[i] = backend.EncodeSeq{Tokens: seqs[j], Pooling: p, Out: make([]float32, dim)}
		}
		// Mixed poolings in one pass too.
		batch = append(batch, backend.EncodeSeq{Tokens: seqs[1], Pooling: backend.PoolMean, Out: make([]float32, 256)})
		if err := e.Encode(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for i := range seqs {
			if !slices.Equal(batch[i].Out, alone[len(seqs)-1-i]) {
				t.Errorf("%v: sequence %d differs in a batch", p, len(seqs)-1-i)
			}
		}
	}
}

// TestEncodeErrors: malformed passes are refused with errors naming the
// sequence.
func TestEncodeErrors(t *testing.T) {
	e := openEncoder(t, "bert-tiny-F32", Options{Threads: 1})
	ctx := context.Background()
	out := make([]float32, 256)
	long := make([]int32, 513)
	for _, c := range []struct {
		name string
		seq  backend.EncodeSeq
	}{
		{"no tokens", backend.EncodeSeq{Pooling: backend.PoolMean, Out: out}},
		{"id out of range", backend.EncodeSeq{Tokens: []int32{1, 337}, Pooling: backend.PoolMean, Out: out}},
		{"too long", backend.EncodeSeq{Tokens: long, Pooling: backend.PoolMean, Out: out}},
		{"rank without a head", backend.EncodeSeq{Tokens: []int32{1}, Pooling: backend.PoolRank, Out: out[:1]}},
		{"default pooling", backend.EncodeSeq{Tokens: []int32{1}, Out: out}},
		{"short output", backend.EncodeSeq{Tokens: []int32{1}, Pooling: backend.PoolCLS, Out: out[:10]}},
	} {
		if err := e.Encode(ctx, []backend.EncodeSeq{c.seq}); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.Encode(cctx, []backend.EncodeSeq{{Tokens: []int32{1, 2}, Pooling: backend.PoolMean, Out: out}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
