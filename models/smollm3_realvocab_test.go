package models_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// TestRealVocabGreedy runs the tiny model with SmolLM3's real 128,256-token
// vocabulary on the six chat prompts of golden/realvocab and checks that
// greedy decoding picks llama.cpp's tokens up to the first step whose margin
// is below the F16 tolerance (realvocab/README.md).
func TestRealVocabGreedy(t *testing.T) {
	_, m := goldentest.Open(t, sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf"), engine.WithThreads(2), engine.WithBatchSize(4096))
	if m.CPU().Config.Vocab != 128256 {
		t.Fatalf("vocab %d", m.CPU().Config.Vocab)
	}
	tol := goldenTolerance(t, "smollm3-tinyq-F16").MaxAbs
	f, err := os.Open(sharedtest.Path(t, "golden/realvocab/cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	cases := 0
	for sc.Scan() {
		var c struct {
			Name      string    `json:"name"`
			PromptIDs []int32   `json:"prompt_ids"`
			Generated []int32   `json:"generated"`
			Margins   []float64 `json:"margins"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		cases++
		cache, err := m.NewCache()
		if err != nil {
			t.Fatal(err)
		}
		logits, err := m.Forward(context.Background(), cache, c.PromptIDs, 0, false)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		checked := 0
		for k, want := range c.Generated {
			if c.Margins[k] < tol {
				break
			}
			if got := int32(argmax(logits)); got != want {
				t.Errorf("%s step %d: token %d, llama.cpp %d (margin %g)", c.Name, k, got, want, c.Margins[k])
				break
			}
			checked++
			if logits, err = m.Forward(context.Background(), cache, []int32{want}, cache.Len(), false); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: %d prompt tokens, %d of %d greedy tokens checked", c.Name, len(c.PromptIDs), checked, len(c.Generated))
	}
	if cases != 6 {
		t.Errorf("%d cases, the README says 6", cases)
	}
}
