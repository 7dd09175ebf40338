package phi3_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	_ "github.com/smolgo/smolgo/models/phi3"
)

// TestGoldenLogits compares Phi-3's block with llama.cpp on the synth preset
// phi3-tiny (fused attn_qkv and gate+up, 24 of 32 head dimensions rotated
// with NEOX pairs, LongRoPE factors switching above 1024 positions, an
// attention factor of 1.19) in F32, Q8_0 and Q4_K_M, with the prompt whole
// and in batches of 7: with a 256-position context (llama.cpp's for these
// prompts: the short factors) and, in F32, with 4096 positions (the long
// ones). The references are testdata/*.json.gz, llama.cpp's logits
// (internal/goldentest/testdata/synth_golden.py) on the files synth writes
// here byte for byte; the tolerances are ../shared/golden/selfcheck.json's
// for SmolLM3 of the same type (synth_golden.py --selfcheck measured
// llama.cpp's own spread on these files inside them: max 0.021 in F32, 0.42
// in Q4_K_M).
func TestGoldenLogits(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		typ, ref string
		ctx      int
	}{
		{"F32", "phi3-tiny-F32", 256},
		{"Q8_0", "phi3-tiny-Q8_0", 256},
		{"Q4_K_M", "phi3-tiny-Q4_K_M", 256},
		{"F32", "phi3-tiny-F32-ctx4096", 4096},
	} {
		path := filepath.Join(dir, "phi3-tiny-"+c.typ+".gguf")
		g := goldentest.LoadFile(t, "testdata/"+c.ref+".json.gz")
		goldentest.WriteSynth(t, "phi3-tiny", c.typ, path, g.SHA256)
		tol := goldentest.SelfcheckTolerance(t, "smollm3-tinyq-"+c.typ)
		for _, batch := range []int{1024, 7} {
			t.Run(c.ref+"/batch"+strconv.Itoa(batch), func(t *testing.T) {
				_, m := goldentest.Open(t, path, engine.WithThreads(2), engine.WithBatchSize(batch), engine.WithContext(c.ctx))
				goldentest.CheckModel(t, c.ref, m, g, tol, nil)
			})
		}
	}
}
