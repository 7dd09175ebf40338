package models_test

import (
	"os"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// goldenModels are all models of ../shared/golden (README.md, "Files").
var goldenModels = []string{
	"smollm3-tinyq-F32", "smollm3-tinyq-F16", "smollm3-tinyq-BF16", "smollm3-tinyq-Q8_0",
	"smollm3-tinyq-Q4_0", "smollm3-tinyq-Q4_1", "smollm3-tinyq-Q5_0", "smollm3-tinyq-Q5_1",
	"smollm3-tinyq-Q2_K", "smollm3-tinyq-Q3_K_M", "smollm3-tinyq-Q4_K_M", "smollm3-tinyq-Q5_K_M",
	"smollm3-tinyq-Q6_K", "llama-tiny-F32", "smollm3-tinyyarn-F32",
}

func goldenTolerance(t *testing.T, model string) goldentest.Tolerance {
	return goldentest.SelfcheckTolerance(t, model)
}

// goldenModelPath returns the model file, unpacking the gzip'ed F32 one.
func goldenModelPath(t testing.TB, model string) string {
	t.Helper()
	if model == "smollm3-tinyq-F32" {
		return sharedtest.Gunzip(t, "golden/models/"+model+".gguf.gz")
	}
	return sharedtest.Path(t, "golden/models/"+model+".gguf")
}

func argmax(x []float32) int { return goldentest.Argmax(x) }

// heavyPrompt reports whether a prompt runs only under SMOLGO_HEAVY=1.
// long600 runs by default for the Q4_K_M model (the one the project ships);
// F32's long600 only in heavy mode.
func heavyPrompt(model, prompt string) bool {
	return prompt == "long600" && model != "smollm3-tinyq-Q4_K_M"
}

// TestSmolLM3GoldenLogits compares our logits with llama.cpp's for every golden
// model and prompt: the whole prompt in one Forward (all rows), then the 16
// decode steps fed the golden tokens (teacher forcing); max abs and RMS over
// the model's file must be within selfcheck.json's tolerance. Then greedy
// decoding from our own argmax must reproduce llama.cpp's tokens for as long
// as every golden margin on the way exceeds twice the max-abs tolerance.
func TestSmolLM3GoldenLogits(t *testing.T) {
	heavy := os.Getenv("SMOLGO_HEAVY") == "1"
	for _, name := range goldenModels {
		t.Run(name, func(t *testing.T) {
			tol := goldenTolerance(t, name)
			g := goldentest.Load(t, "golden/logits/"+name+".json.gz")
			// Like the reference run: the whole prompt in one batch.
			_, m := goldentest.Open(t, goldenModelPath(t, name), engine.WithThreads(2), engine.WithBatchSize(1024))
			goldentest.CheckModel(t, name, m, g, tol, func(prompt string) bool { return heavyPrompt(name, prompt) && !heavy })
		})
	}
}

// TestSmolLM3GoldenModelsListed guards against a golden model being added to
// ../shared without a test here.
func TestSmolLM3GoldenModelsListed(t *testing.T) {
	entries, err := os.ReadDir(sharedtest.Path(t, "golden/logits"))
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Join(goldenModels, " ")
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json.gz")
		if !strings.Contains(" "+listed+" ", " "+name+" ") {
			t.Errorf("golden logits %s have no test", e.Name())
		}
	}
}
