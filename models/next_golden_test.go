package models_test

import (
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// The models of ../shared/golden-next (README.md): tiny mixtures of experts
// (qwen3moe, gpt-oss) and hybrids with recurrent state (lfm2, qwen35) written by
// llama.cpp's own writer, with llama.cpp's logits for three prompts
// (rand100 is longer than gpt-oss's window of 32).
var nextModels = []string{
	"qwen3moe-tiny-F32", "qwen3moe-tiny-Q8_0", "qwen3moe-tiny-Q4_K_M",
	"gptoss-tiny-F32", "gptoss-tiny-Q8_0", "gptoss-tiny-Q4_K_M", "gptoss-tiny-MXFP4",
	"lfm2-tiny-F32", "lfm2-tiny-Q8_0", "lfm2-tiny-Q4_K_M",
	"qwen35-tiny-F32", "qwen35-tiny-Q8_0", "qwen35-tiny-Q4_K_M",
}

// TestNextGoldenLogits compares golden-next's models' logits with
// llama.cpp's (prefill at every position, teacher-forced and greedy
// decode), with the whole prompt in one pass and in batches of 7 (which
// carries a recurrent state across passes), within the tolerance
// llama.cpp's own self-consistency on these files sets
// (goldentest.NextTolerance).
func TestNextGoldenLogits(t *testing.T) {
	for _, name := range nextModels {
		for _, batch := range []int{1024, 7} {
			t.Run(name+"/batch"+itoa(batch), func(t *testing.T) {
				cut := strings.LastIndexByte(name, '-')
				tol := goldentest.NextTolerance(t, name[:cut], name[cut+1:])
				g := goldentest.Load(t, "golden-next/logits/"+name+".json.gz")
				_, m := goldentest.Open(t, sharedtest.Path(t, "golden-next/models/"+name+".gguf"),
					engine.WithThreads(2), engine.WithBatchSize(batch))
				goldentest.CheckModel(t, name, m, g, tol, nil)
			})
		}
	}
}
