package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// TestDecoderEmbeddings embeds with the families' golden decoders (a
// Qwen3-Embedding is a qwen3 file with pooling_type last; these have none,
// so the pooling is chosen at load): for every pooling, an input longer
// than a step (computed in chunks of 16) gives what one pass gives.
// (llama's TestStepHidden checks the rows, engine's TestEmbedDecoder the
// pooling and the sharing of steps with generation.)
func TestDecoderEmbeddings(t *testing.T) {
	ctx := context.Background()
	path := sharedtest.Path(t, "golden-families/models/qwen3-tiny-F32.gguf")
	big, err := engine.Open(path, engine.WithThreads(2), engine.WithPooling("last"))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	small, err := engine.Open(path, engine.WithThreads(2), engine.WithBatchSize(16), engine.WithPooling("last"))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	info := big.EmbedInfo()
	if !info.Embeds || !info.Generates || info.Pooling != engine.PoolLast || info.Dim != 256 {
		t.Fatalf("EmbedInfo %+v", info)
	}
	var inputs [][]int32
	for _, n := range []int{1, 7, 40} {
		in := make([]int32, n)
		for i := range in {
			in[i] = int32((i*31 + n) % 300)
		}
		inputs = append(inputs, in)
	}
	for _, p := range []engine.Pooling{engine.PoolLast, engine.PoolMean, engine.PoolCLS} {
		a, err := big.EmbedTokens(ctx, inputs, engine.EmbedOptions{Pooling: p})
		if err != nil {
			t.Fatal(err)
		}
		b, err := small.EmbedTokens(ctx, inputs, engine.EmbedOptions{Pooling: p})
		if err != nil {
			t.Fatal(err)
		}
		for i := range inputs {
			if cos, d := agree(a.Vectors[i], b.Vectors[i]); cos < 0.99999 || d > 1e-3 {
				t.Errorf("%v: input %d (%d tokens): one pass and steps of 16 differ: cosine %.7f, max %.3g", p, i, len(inputs[i]), cos, d)
			}
		}
	}
}

func agree(a, b []float32) (cos, maxAbs float64) {
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

// TestDecoderEmbeddingsMatchLlamaCpp compares the decoder embeddings with
// llama.cpp's (`llamaref embed --pooling last|mean`) on the golden qwen3
// file, F32 and Q8_0. It runs where llamaref is built (sharedtest.Llamaref:
// CI builds it):
//
//	go test -run LlamaCpp -v ./models/
func TestDecoderEmbeddingsMatchLlamaCpp(t *testing.T) {
	bin := sharedtest.Llamaref(t)
	ctx := context.Background()
	var inputs [][]int32
	var spec []string
	for _, n := range []int{1, 7, 40, 100} {
		in := make([]int32, n)
		ids := make([]string, n)
		for i := range in {
			in[i] = int32((i*31 + n) % 300)
			ids[i] = fmt.Sprint(in[i])
		}
		inputs = append(inputs, in)
		spec = append(spec, strings.Join(ids, ","))
	}
	// The golden qwen3 files with each pooling chosen here, and a
	// Qwen3-Embedding file (synth's qwen3-embed-tiny: pooling_type last)
	// with the pooling its file gives, here and in llama.cpp ("").
	for _, c := range []struct {
		model string
		pools []string
	}{
		{"qwen3-tiny-F32", []string{"last", "mean"}},
		{"qwen3-tiny-Q8_0", []string{"last", "mean"}},
		{"qwen3-embed-tiny-F32", []string{""}},
		{"qwen3-embed-tiny-Q8_0", []string{""}},
	} {
		path := goldentest.TinyModel(t, c.model)
		m, err := engine.Open(path, engine.WithThreads(2))
		if err != nil {
			t.Fatal(err)
		}
		for _, pool := range c.pools {
			if pool == "" && m.EmbedInfo().Pooling != engine.PoolLast {
				t.Errorf("%s: pooling %v, want last from the file", c.model, m.EmbedInfo().Pooling)
			}
			ref := llamaEmbed(t, bin, path, pool, spec)
			p, _ := engine.ParsePooling(pool)
			res, err := m.EmbedTokens(ctx, inputs, engine.EmbedOptions{Pooling: p})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range ref {
				cos, d := agree(res.Vectors[i], want)
				t.Logf("%s %q: %d tokens: cosine %.7f, max |Δ| %.3g", c.model, pool, len(inputs[i]), cos, d)
				if cos < 0.9999 || d > 0.05 {
					t.Errorf("%s %q: %d tokens: cosine %.7f, max |Δ| %.3g", c.model, pool, len(inputs[i]), cos, d)
				}
			}
		}
		m.Close()
	}
}

// llamaEmbed returns llama.cpp's pooled embedding of each sequence of spec
// ("1,2,3" per sequence), with pooling pool ("" for the file's).
func llamaEmbed(t *testing.T, bin, path, pool string, spec []string) [][]float32 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ref.json")
	args := []string{"embed", "--model", path, "--tokens", strings.Join(spec, ";"), "--out", out}
	if pool != "" {
		args = append(args, "--pooling", pool)
	}
	if b, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("llamaref embed: %v\n%s", err, b)
	}
	var ref struct {
		Sequences []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"sequences"`
	}
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &ref); err != nil || len(ref.Sequences) != len(spec) {
		t.Fatalf("llamaref embed output: %v, %d sequences for %d", err, len(ref.Sequences), len(spec))
	}
	vs := make([][]float32, len(ref.Sequences))
	for i, s := range ref.Sequences {
		vs[i] = s.Embedding
	}
	return vs
}

// rerankerFile writes a Qwen3-Reranker-shaped file from the golden qwen3
// model, as llama.cpp's converter makes one: pooling_type rank, the labels
// "yes" and "no", a rerank template, and cls.output.weight holding the
// embedding rows of two tokens (the converter takes lm_head's rows of
// "yes" and "no"; the golden model's output is tied to its embeddings).
func rerankerFile(t *testing.T) string {
	t.Helper()
	f, err := gguf.Open(sharedtest.Path(t, "golden-families/models/qwen3-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := append([]gguf.KV(nil), f.KV...)
	kv = append(kv, gguf.KV{Key: "qwen3.pooling_type", Value: uint32(4)},
		gguf.KV{Key: "qwen3.classifier.output_labels", Value: []string{"yes", "no"}},
		gguf.KV{Key: "tokenizer.chat_template.rerank", Value: "<|im_start|>user\n<Query>: {query}\n<Document>: {document}<|im_end|>\n<|im_start|>assistant\n"})
	var ts []gguf.WriterTensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		ts = append(ts, gguf.WriterTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: f.TensorData(ti)})
	}
	emb, _ := f.Tensor("token_embd.weight")
	row := int(emb.Dims[0]) * 4
	data := f.TensorData(emb)
	cls := append(append([]byte(nil), data[300*row:301*row]...), data[301*row:302*row]...)
	ts = append(ts, gguf.WriterTensor{Name: "cls.output.weight", Dims: []uint64{emb.Dims[0], 2}, Type: gguf.TypeF32, Data: cls})
	path := filepath.Join(t.TempDir(), "qwen3-rerank-tiny-F32.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(out, kv, ts); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDecoderReranker: a Qwen3-Reranker file reranks through the engine:
// its inputs follow the file's template, and a score is the softmax of the
// head over the last token's hidden state ("yes" against "no"), and the
// scores are compared with llama.cpp's (sharedtest.Llamaref).
func TestDecoderReranker(t *testing.T) {
	path := rerankerFile(t)
	m, parts := goldentest.Open(t, path, engine.WithThreads(2))
	info := m.EmbedInfo()
	if !info.Ranks || info.Pooling != engine.PoolRank || info.Labels != 2 {
		t.Fatalf("EmbedInfo %+v", info)
	}
	ctx := context.Background()
	docs := []string{"the quick brown fox", "Hello world"}
	r, err := m.Rerank(ctx, "quick fox", docs, engine.RerankOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inputs, err := m.RerankInputs("quick fox", docs, 0)
	if err != nil {
		t.Fatal(err)
	}
	last, err := m.EmbedTokens(ctx, inputs, engine.EmbedOptions{Pooling: engine.PoolLast})
	if err != nil {
		t.Fatal(err)
	}
	w := parts.Weights().ClsOut
	for i, h := range last.Vectors {
		var z [2]float64
		row := make([]float32, w.Cols)
		for l := range 2 {
			w.Row(l, row)
			for j := range row {
				z[l] += float64(row[j]) * float64(h[j])
			}
		}
		want := 1 / (1 + math.Exp(z[1]-z[0]))
		if math.Abs(float64(r.Scores[i])-want) > 1e-5 {
			t.Errorf("document %d: score %v, softmax of the head %v", i, r.Scores[i], want)
		}
	}
	bin := sharedtest.Llamaref(t)
	var spec []string
	for _, in := range inputs {
		ids := make([]string, len(in))
		for k, id := range in {
			ids[k] = fmt.Sprint(id)
		}
		spec = append(spec, strings.Join(ids, ","))
	}
	out := filepath.Join(t.TempDir(), "ref.json")
	if b, err := exec.Command(bin, "embed", "--model", path, "--tokens", strings.Join(spec, ";"), "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("llamaref embed: %v\n%s", err, b)
	}
	var ref struct {
		Pooling   string `json:"pooling"`
		Sequences []struct {
			Scores []float32 `json:"scores"`
		} `json:"sequences"`
	}
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for i, s := range ref.Sequences {
		t.Logf("document %d: score %v, llama.cpp %v (%s)", i, r.Scores[i], s.Scores[0], ref.Pooling)
		if math.Abs(float64(r.Scores[i]-s.Scores[0])) > 1e-3 {
			t.Errorf("document %d: score %v, llama.cpp %v", i, r.Scores[i], s.Scores[0])
		}
	}
}

// BenchmarkDecoderEmbed is docs/embeddings.md's decoder measurement:
// embeddings with last pooling of the sequences of SMOLGO_EMBED_TOKENS
// (one per line, ids separated by commas) on the decoder SMOLGO_EMBED_MODEL,
// through the engine's scheduler (steps of up to 512 tokens, up to 64
// sequences at once), against `llamaref embed --pooling last --ubatch 512`:
//
//	SMOLGO_EMBED_MODEL=/tmp/q3e-Q8_0.gguf SMOLGO_EMBED_TOKENS=/tmp/seqs16.txt \
//	    go test ./models -run XXX -bench DecoderEmbed -benchtime 2x -cpu 2
func BenchmarkDecoderEmbed(b *testing.B) {
	path, toks := os.Getenv("SMOLGO_EMBED_MODEL"), os.Getenv("SMOLGO_EMBED_TOKENS")
	if path == "" || toks == "" {
		b.Skip("set SMOLGO_EMBED_MODEL and SMOLGO_EMBED_TOKENS (see docs/embeddings.md)")
	}
	data, err := os.ReadFile(toks)
	if err != nil {
		b.Fatal(err)
	}
	var inputs [][]int32
	tokens := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var in []int32
		for _, f := range strings.Split(line, ",") {
			var v int32
			fmt.Sscan(f, &v)
			in = append(in, v)
		}
		inputs = append(inputs, in)
		tokens += len(in)
	}
	m, err := engine.Open(path, engine.WithThreads(runtimeThreads()), engine.WithPooling("last"), engine.WithMaxSequences(64),
		engine.WithContext(1024))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	if _, err := m.EmbedTokens(ctx, inputs[:1], engine.EmbedOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.EmbedTokens(ctx, inputs, engine.EmbedOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	s := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(tokens)/s, "tokens/s")
	b.ReportMetric(float64(len(inputs))/s, "seqs/s")
}

func runtimeThreads() int {
	n := 0
	fmt.Sscan(os.Getenv("GOMAXPROCS"), &n)
	return n
}
