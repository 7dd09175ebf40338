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
// (every position of the short prompts, every tenth and the last of the
// 100-token one), teacher-forced and greedy decode, whole prompts and
// batches of 7. The references in testdata are llama.cpp's logits on
// synth's files (internal/goldentest/testdata/synth_golden.py --moe, which
// runs llama.cpp's AVX2 backend as ../shared/golden-next did); the
// tolerances are twice llama.cpp's own worst spread on those files with
// another CPU variant and in batches of 7
// (testdata/mixtral-tiny-selfcheck.json): F32 0.04 max / 0.007 RMS, Q8_0
// 0.6 / 0.2, Q4_K_M 0.9 / 0.2. llama.cpp's own F32 logits move by up to 0.02
// between the whole prompt and batches of 7, smoothly over the positions
// (no spike at one position: no routing decision flips).
//
// A wrong block fails far outside them: the top 2 not renormalized gives a
// max |Δ| of 2.0 (RMS 0.21) in F32, 1.7 in Q8_0.
func TestMixtralGoldenLogits(t *testing.T) {
	goldentest.CheckSynthGolden(t, "mixtral-tiny", "testdata")
}
