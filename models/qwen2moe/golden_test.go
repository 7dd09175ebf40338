package qwen2moe_test

import (
	"testing"

	"github.com/smolgo/smolgo/internal/goldentest"
	_ "github.com/smolgo/smolgo/models/qwen2moe"
)

// TestGoldenLogits compares Qwen2-MoE's block (Q/K/V biases; softmax over 4
// experts of 128, the top 2 not renormalized, plus a shared expert of 256
// scaled by sigmoid(h·ffn_gate_inp_shexp)) with llama.cpp on synth's preset
// qwen2moe-tiny, in F32, Q8_0 and Q4_K_M: prefill at every position,
// teacher-forced and greedy decode, whole prompts and batches of 7. The
// references in testdata are llama.cpp's logits on synth's files
// (internal/goldentest/testdata/synth_golden.py --moe); the tolerances are
// twice llama.cpp's own worst spread on those files with another CPU
// variant and in batches of 7 (testdata/qwen2moe-tiny-selfcheck.json).
func TestGoldenLogits(t *testing.T) {
	goldentest.CheckSynthGolden(t, "qwen2moe-tiny", "testdata")
}
