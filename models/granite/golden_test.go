package granite_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	_ "github.com/smolgo/smolgo/models/granite"
)

// TestGoldenLogits compares Granite's block with llama.cpp on the synth
// preset granite-tiny (all four multipliers, an attention scale of
// 1/HeadDim instead of 1/√HeadDim) in F32, Q8_0 and Q4_K_M: prefill at
// every position, teacher-forced and greedy decode steps, and the prompt
// again in batches of 7. The references are testdata/*.json.gz, llama.cpp's
// logits (internal/goldentest/testdata/synth_golden.py) on the files synth
// writes here byte for byte. The tolerances are ../shared/golden/selfcheck.json's
// for SmolLM3 of the same type; synth_golden.py --selfcheck measured
// llama.cpp's own spread on these files far inside them (max 1.2e-5 in
// F32, 0.008 in Q4_K_M).
func TestGoldenLogits(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []string{"F32", "Q8_0", "Q4_K_M"} {
		path := filepath.Join(dir, "granite-tiny-"+typ+".gguf")
		g := goldentest.LoadFile(t, "testdata/granite-tiny-"+typ+".json.gz")
		goldentest.WriteSynth(t, "granite-tiny", typ, path, g.SHA256)
		tol := goldentest.SelfcheckTolerance(t, "smollm3-tinyq-"+typ)
		for _, batch := range []int{1024, 7} {
			t.Run(typ+"/batch"+strconv.Itoa(batch), func(t *testing.T) {
				_, m := goldentest.Open(t, path, engine.WithThreads(2), engine.WithBatchSize(batch))
				goldentest.CheckModel(t, "granite-tiny-"+typ, m, g, tol, nil)
			})
		}
	}
}

// TestMoEGoldenLogits compares Granite's mixture-of-experts block (Granite's
// four multipliers; softmax over 4 experts as wide as feed_forward_length,
// the top 2 renormalized, plus an ungated shared expert of 256) with
// llama.cpp on synth's preset granitemoe-tiny, in F32, Q8_0 and Q4_K_M:
// prefill (every position of the short prompts, every tenth and the last of
// the 100-token one), teacher-forced and greedy decode, whole prompts and
// batches of 7. The references in testdata are llama.cpp's logits on
// synth's files (internal/goldentest/testdata/synth_golden.py --moe); the
// tolerances are twice llama.cpp's own worst spread on those files with
// another CPU variant and in batches of 7
// (testdata/granitemoe-tiny-selfcheck.json): F32 4e-05 max / 8e-06 RMS,
// Q8_0 and Q4_K_M 0.03 / 0.003, small because logit_scale makes Granite's
// logits small (std 0.67).
//
// A wrong block fails far outside them (F32, max |Δ| / RMS): the top 2 not
// renormalized 0.078 / 0.0088, the shared expert dropped 0.37 / 0.089.
func TestMoEGoldenLogits(t *testing.T) {
	goldentest.CheckSynthGolden(t, "granitemoe-tiny", "testdata")
}
