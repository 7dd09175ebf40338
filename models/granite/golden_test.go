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
