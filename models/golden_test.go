package models_test

import (
	"os"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
	_ "github.com/smolgo/smolgo/models"
)

// The families' golden models (../shared/golden-families, README.md): tiny
// qwen3, qwen2, llama (RoPE factors) and gemma3 models written by
// llama.cpp's own GGUF writer, in F32, Q8_0 and Q4_K_M, with llama.cpp's
// logits for three prompts (rand100 is longer than gemma3-tiny's window of
// 32, so its ring cache and window mask are exercised).
var familyModels = []string{
	"qwen3-tiny-F32", "qwen3-tiny-Q8_0", "qwen3-tiny-Q4_K_M",
	"qwen2-tiny-F32", "qwen2-tiny-Q8_0", "qwen2-tiny-Q4_K_M",
	"llama32-tiny-F32", "llama32-tiny-Q8_0", "llama32-tiny-Q4_K_M",
	"gemma3-tiny-F32", "gemma3-tiny-Q8_0", "gemma3-tiny-Q4_K_M",
}

// familyTolerance is ../shared/golden/selfcheck.json's tolerance for the
// SmolLM3 model of the same type: golden-families/README.md measured
// llama.cpp's own spread on these files (its AVX2 against its AVX-512
// backend, and batches of 7) and found it inside those.
func familyTolerance(t *testing.T, model string) goldentest.Tolerance {
	typ := model[strings.LastIndex(model, "-")+1:]
	return goldentest.SelfcheckTolerance(t, "smollm3-tinyq-"+typ)
}

// TestFamilyGoldenLogits compares every family's logits with llama.cpp's:
// prefill at every position of each prompt, teacher-forced decode steps and
// greedy decoding (goldentest.CheckPrompt), with f16 caches as llama.cpp
// runs them, and again with the prompt in batches of 7 (llama.cpp's own
// check) so that a windowed layer's ring wraps inside a prompt.
func TestFamilyGoldenLogits(t *testing.T) {
	for _, name := range familyModels {
		for _, batch := range []int{1024, 7} {
			t.Run(name+"/batch"+itoa(batch), func(t *testing.T) {
				tol := familyTolerance(t, name)
				g := goldentest.Load(t, "golden-families/logits/"+name+".json.gz")
				_, m := goldentest.Open(t, sharedtest.Path(t, "golden-families/models/"+name+".gguf"),
					engine.WithThreads(2), engine.WithBatchSize(batch))
				goldentest.CheckModel(t, name, m, g, tol, nil)
			})
		}
	}
}

// TestFamilyGoldenModelsListed guards against a model being added to
// ../shared/golden-families without a test here.
func TestFamilyGoldenModelsListed(t *testing.T) {
	entries, err := os.ReadDir(sharedtest.Path(t, "golden-families/logits"))
	if err != nil {
		t.Fatal(err)
	}
	listed := " " + strings.Join(familyModels, " ") + " "
	for _, e := range entries {
		if name := strings.TrimSuffix(e.Name(), ".json.gz"); !strings.Contains(listed, " "+name+" ") {
			t.Errorf("golden logits %s have no test", e.Name())
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
