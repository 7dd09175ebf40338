package models_test

import (
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/llama"
)

// A model loaded engine.WithKVType("q8_0") chats over a q8_0 cache whose
// prompt logits stay within the quantized-model tolerance (0.6) of the f16
// cache's, in about half the memory.
func TestQ8KVSession(t *testing.T) {
	f16 := loadGoldenModel(t, "smollm3-tinyq-F32", engine.WithThreads(2))
	q8 := loadGoldenModel(t, "smollm3-tinyq-F32", engine.WithThreads(2), engine.WithKVType("q8_0"))
	if partsOf(t, q8).KVType() != llama.KVQ8_0 || partsOf(t, f16).KVType() != llama.KVF16 {
		t.Fatalf("KVType: %v, %v", partsOf(t, q8).KVType(), partsOf(t, f16).KVType())
	}
	msgs := sysChat("How long is a piece of string?")
	fs := f16.NewSession()
	want, _ := promptLogits(t, fs, msgs)
	s := q8.NewSession()
	got, st := promptLogits(t, s, msgs)
	d := maxAbs(got, want)
	t.Logf("%d-token prompt: q8_0 vs f16 KV logits max diff %.3g", st.PromptTokens, d)
	if d > 0.6 || d == 0 {
		t.Errorf("q8_0 vs f16 KV prompt logits differ by %g, want (0, 0.6]", d)
	}
	// The same positions in about half the memory (q8_0 stores 34 bytes per
	// 32 values, f16 64).
	if q, f := s.MemoryBytes(), fs.MemoryBytes(); q <= 0 || 2*q > f*17/16 {
		t.Errorf("session memory: q8_0 %d bytes, f16 %d", q, f)
	}
}
