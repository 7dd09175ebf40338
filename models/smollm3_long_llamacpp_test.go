package models_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// TestBatchedPrefillMatchesLlamaCpp runs a 100-token prompt through every
// quantized golden model in one batch, so that each weight type's prefill
// GEMM (from 24 tokens on) is what computes it, and compares all 100 rows of
// logits with those llama.cpp computes live on the same file (llamaref,
// built by ../shared/tools/llamaref/build.sh; CI builds it), within the
// model's selfcheck tolerance. The stored golden prompts are too short for
// the GEMMs (12 tokens), and the long one is stored for F32 and Q4_K_M only.
//
//	go test -run BatchedPrefillMatchesLlamaCpp -v ./models/
func TestBatchedPrefillMatchesLlamaCpp(t *testing.T) {
	var prompt []int32
	for _, p := range goldentest.Load(t, "golden/logits/smollm3-tinyq-F32.json.gz").Prompts {
		if p.Name == "long600" {
			prompt = p.Tokens[:100]
		}
	}
	if prompt == nil {
		t.Fatal("smollm3-tinyq-F32's golden logits have no long600 prompt")
	}
	for _, name := range goldenModels {
		if !strings.HasPrefix(name, "smollm3-tinyq-") || strings.HasSuffix(name, "-F32") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tol := goldenTolerance(t, name)
			path := goldenModelPath(t, name)
			ref, _ := sharedtest.LlamarefLogits(t, path, prompt, "--threads", "2")
			if len(ref) != len(prompt) {
				t.Fatalf("llamaref gave %d prefill rows for %d tokens", len(ref), len(prompt))
			}
			_, m := goldentest.Open(t, path, engine.WithThreads(2), engine.WithBatchSize(1024))
			cache, err := m.NewCache()
			if err != nil {
				t.Fatal(err)
			}
			logits, err := m.Forward(context.Background(), cache, prompt, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			V := m.Weights().Config.Vocab
			var d goldentest.Diff
			for i, r := range ref {
				d.Add(fmt.Sprintf("pos %d", i), logits[i*V:(i+1)*V], r)
			}
			t.Logf("%s, 100 tokens in one batch vs llama.cpp: max abs %.3g, RMS %.3g (tolerance %g / %g)", name, d.MaxAbs, d.RMS(), tol.MaxAbs, tol.RMS)
			if d.MaxAbs > tol.MaxAbs || d.RMS() > tol.RMS {
				t.Errorf("%s: max abs %g (at %s), RMS %g: over the tolerance %g / %g", name, d.MaxAbs, d.Worst, d.RMS(), tol.MaxAbs, tol.RMS)
			}
		})
	}
}
