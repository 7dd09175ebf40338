package bert

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// golden is ../shared/golden-families/embeddings/<model>.json.gz
// (smolgo-golden-embeddings/1): llama.cpp's pooled embeddings or rank
// scores of four sequences of random ids run in one batch.
type golden struct {
	Schema string `json:"schema"`
	Model  string `json:"model"`
	Runs   []struct {
		Pooling   string `json:"pooling"`
		Normalize string `json:"normalize"`
		NEmbd     int    `json:"n_embd"`
		Sequences []struct {
			Tokens    []int32   `json:"tokens"`
			Embedding []float32 `json:"embedding"`
			Scores    []float32 `json:"scores"`
		} `json:"sequences"`
	} `json:"runs"`
}

func loadGolden(t *testing.T, name string) golden {
	t.Helper()
	var g golden
	if err := json.Unmarshal(sharedtest.ReadGzip(t, "golden-families/embeddings/"+name+".json.gz"), &g); err != nil {
		t.Fatal(err)
	}
	if g.Schema != "smolgo-golden-embeddings/1" {
		t.Fatalf("schema %q", g.Schema)
	}
	return g
}

// openEncoder loads a shared golden model.
func openEncoder(t testing.TB, name string, opts Options) *Encoder {
	t.Helper()
	return openFile(t, sharedtest.Path(t, "golden-families/models/"+name+".gguf"), opts)
}

// openFile loads a BERT GGUF file.
func openFile(t testing.TB, path string, opts Options) *Encoder {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := LoadWeights(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEncoder(w, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// agreement is how close two vectors are: cosine similarity and the
// largest absolute difference.
func agreement(a, b []float32) (cos, maxAbs float64) {
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
		maxAbs = math.Max(maxAbs, math.Abs(x-y))
	}
	return ab / math.Sqrt(aa*bb), maxAbs
}

func l2(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / math.Sqrt(s))
	}
	return out
}

// TestGoldenEmbeddings compares the pooled embeddings (bert-tiny, mean
// pooling) and rank scores (bert-rank-tiny, a classifier head) of four
// sequences of 1, 7, 33 and 100 tokens, run in one batch as llama.cpp ran
// them, with llama.cpp's: cosine at least 0.99999 and every element within
// 1e-4, raw and L2-normalized (rank scores are not normalized, by
// llama.cpp either); the same with the packed GEMM off
// (Matrix.Mul's kernels) and with one thread.
func TestGoldenEmbeddings(t *testing.T) {
	for _, name := range []string{"bert-tiny-F32", "bert-rank-tiny-F32"} {
		for _, opts := range []Options{{Threads: 2}, {Threads: 1, KeepLayout: true}} {
			label := "packed"
			if opts.KeepLayout {
				label = "matmul"
			}
			t.Run(name+"/"+label, func(t *testing.T) {
				g := loadGolden(t, name)
				e := openEncoder(t, name, opts)
				for _, run := range g.Runs {
					batch := make([]backend.EncodeSeq, len(run.Sequences))
					for i, s := range run.Sequences {
						want := len(s.Embedding)
						if run.Pooling == "rank" {
							want = len(s.Scores)
						}
						p, err := backend.ParsePooling(run.Pooling)
						if err != nil {
							t.Fatal(err)
						}
						batch[i] = backend.EncodeSeq{Tokens: s.Tokens, Pooling: p, Out: make([]float32, want)}
					}
					if err := e.Encode(context.Background(), batch); err != nil {
						t.Fatal(err)
					}
					for i, s := range run.Sequences {
						want := s.Embedding
						if run.Pooling == "rank" {
							want = s.Scores
						}
						got := batch[i].Out
						if run.Normalize == "l2" && run.Pooling != "rank" { // scores are never normalized
							got = l2(got)
						}
						cos, d := agreement(got, want)
						t.Logf("%s normalize %s: %d tokens: cosine %.9f, max |Δ| %.3g", run.Pooling, run.Normalize, len(s.Tokens), cos, d)
						if d > 1e-4 || (len(want) > 1 && cos < 0.99999) {
							t.Errorf("%d tokens, normalize %s: cosine %.9f, max |Δ| %.3g (want ≥ 0.99999, ≤ 1e-4)", len(s.Tokens), run.Normalize, cos, d)
						}
					}
				}
			})
		}
	}
}
