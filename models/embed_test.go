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
	"github.com/smolgo/smolgo/family"
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
	big, err := family.Load(path, engine.WithThreads(2), engine.WithPooling("last"))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	small, err := family.Load(path, engine.WithThreads(2), engine.WithBatchSize(16), engine.WithPooling("last"))
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
// file, F32 and Q8_0. It runs only where SMOLGO_LLAMAREF names the binary
// (../shared/tools/llamaref/build.sh):
//
//	SMOLGO_LLAMAREF=$HOME/.cache/smolgo/llamaref/nlc-3.22.1/bin/llamaref go test -run LlamaCpp -v ./models/
func TestDecoderEmbeddingsMatchLlamaCpp(t *testing.T) {
	bin := os.Getenv("SMOLGO_LLAMAREF")
	if bin == "" {
		t.Skip("set SMOLGO_LLAMAREF to a llamaref binary (../shared/tools/llamaref/build.sh)")
	}
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
	for _, model := range []string{"qwen3-tiny-F32", "qwen3-tiny-Q8_0"} {
		path := sharedtest.Path(t, "golden-families/models/"+model+".gguf")
		m, err := family.Load(path, engine.WithThreads(2))
		if err != nil {
			t.Fatal(err)
		}
		for _, pool := range []string{"last", "mean"} {
			out := filepath.Join(t.TempDir(), "ref.json")
			if b, err := exec.Command(bin, "embed", "--model", path, "--pooling", pool, "--tokens", strings.Join(spec, ";"), "--out", out).CombinedOutput(); err != nil {
				t.Fatalf("llamaref embed: %v\n%s", err, b)
			}
			var ref struct {
				Sequences []struct {
					Embedding []float32 `json:"embedding"`
				} `json:"sequences"`
			}
			b, _ := os.ReadFile(out)
			if err := json.Unmarshal(b, &ref); err != nil {
				t.Fatal(err)
			}
			p, _ := engine.ParsePooling(pool)
			res, err := m.EmbedTokens(ctx, inputs, engine.EmbedOptions{Pooling: p})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range ref.Sequences {
				cos, d := agree(res.Vectors[i], s.Embedding)
				t.Logf("%s %s: %d tokens: cosine %.7f, max |Δ| %.3g", model, pool, len(inputs[i]), cos, d)
				if cos < 0.9999 || d > 0.05 {
					t.Errorf("%s %s: %d tokens: cosine %.7f, max |Δ| %.3g", model, pool, len(inputs[i]), cos, d)
				}
			}
		}
		m.Close()
	}
}
