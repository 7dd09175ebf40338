package llamaarch_test

import (
	"testing"

	"github.com/smolgo/smolgo/internal/goldentest"
	_ "github.com/smolgo/smolgo/models/llamaarch"
)

// TestMixtralGoldenLogits compares the llama block with a mixture of
// experts (Mixtral's layout: softmax over 4 experts as wide as
// feed_forward_length, the top 2 renormalized; untied output) with
// llama.cpp on synth's preset mixtral-tiny, in F32, Q8_0 and Q4_K_M: prefill
// at every position, teacher-forced and greedy decode, whole prompts and
// batches of 7. The references in testdata are llama.cpp's logits on
// synth's files (internal/goldentest/testdata/synth_golden.py --moe, which
// runs llama.cpp's AVX2 backend as ../shared/golden-next did); the
// tolerances are twice llama.cpp's own worst spread on those files with
// another CPU variant and in batches of 7 (testdata/mixtral-tiny-selfcheck.json).
func TestMixtralGoldenLogits(t *testing.T) {
	goldentest.CheckSynthGolden(t, "mixtral-tiny", "testdata")
}
