package lfm2_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	_ "github.com/smolgo/smolgo/models/lfm2"
)

// moeTolerance is twice llama.cpp's own spread on the lfm2moe-tiny files
// (internal/goldentest/testdata/synth_golden.py --selfcheck: its AVX2
// backend, and the prompt in batches of 7, against the stored logits),
// rounded up to one significant digit: F32 max 0.00056 / RMS 0.00012, Q8_0
// 0.081 / 0.016, Q4_K_M 0.13 / 0.023, the worst over the three prompts.
var moeTolerance = map[string]goldentest.Tolerance{
	"F32":    {MaxAbs: 0.002, RMS: 0.0003},
	"Q8_0":   {MaxAbs: 0.2, RMS: 0.04},
	"Q4_K_M": {MaxAbs: 0.3, RMS: 0.05},
}

// TestGoldenLogitsMoE compares lfm2moe's block with llama.cpp on the synth
// preset lfm2moe-tiny (a short convolution with a dense FFN, then
// attention and a short convolution each with 4 experts of 128, 2 used,
// sigmoid gates and a selection bias that changes the choice at most
// positions) in F32, Q8_0 and Q4_K_M: prefill at every position,
// teacher-forced and greedy decode steps on the state the prefill left,
// and the prompt again in batches of 7, which carries the convolutions'
// state across calls. The references are testdata/lfm2moe-tiny-*.json.gz,
// llama.cpp's logits (internal/goldentest/testdata/synth_golden.py) on the
// files synth writes here byte for byte (llama.cpp's quantizer gives the
// same Q8_0 and Q4_K_M bytes).
func TestGoldenLogitsMoE(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []string{"F32", "Q8_0", "Q4_K_M"} {
		path := filepath.Join(dir, "lfm2moe-tiny-"+typ+".gguf")
		g := goldentest.LoadFile(t, "testdata/lfm2moe-tiny-"+typ+".json.gz")
		goldentest.WriteSynth(t, "lfm2moe-tiny", typ, path, g.SHA256)
		for _, batch := range []int{1024, 7} {
			t.Run(typ+"/batch"+strconv.Itoa(batch), func(t *testing.T) {
				_, m := goldentest.Open(t, path, engine.WithThreads(2), engine.WithBatchSize(batch))
				goldentest.CheckModel(t, "lfm2moe-tiny-"+typ, m, g, moeTolerance[typ], nil)
			})
		}
	}
}
