package qwen2moe_test

import (
	"testing"

	"github.com/smolgo/smolgo/internal/goldentest"
	_ "github.com/smolgo/smolgo/models/qwen2moe"
)

// TestGoldenLogits compares Qwen2-MoE's block (Q/K/V biases; softmax over 4
// experts of 128, the top 2 not renormalized, plus a shared expert of 256
// scaled by sigmoid(h·ffn_gate_inp_shexp)) with llama.cpp on synth's preset
// qwen2moe-tiny, in F32, Q8_0 and Q4_K_M: prefill (every position of the
// short prompts, every tenth and the last of the 100-token one),
// teacher-forced and greedy decode, whole prompts and batches of 7. The
// references in testdata are llama.cpp's logits on synth's files
// (internal/goldentest/testdata/synth_golden.py --moe); the tolerances are
// twice llama.cpp's own worst spread on those files with another CPU
// variant and in batches of 7 (testdata/qwen2moe-tiny-selfcheck.json): F32
// 0.06 max / 0.007 RMS, Q8_0 0.6 / 0.2, Q4_K_M 0.7 / 0.2.
//
// A wrong block fails far outside them (measured in F32, max |Δ| / RMS): the
// shared expert ungated (gate 1 instead of sigmoid(h·w)) 12 / 1.7, its gate
// inverted (1 − sigmoid) 12 / 1.7, the shared expert dropped 16 / 2.5, the
// top 2 renormalized as Mixtral's are 3.5 / 0.29.
func TestGoldenLogits(t *testing.T) {
	goldentest.CheckSynthGolden(t, "qwen2moe-tiny", "testdata")
}
