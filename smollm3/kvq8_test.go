package smollm3

import (
	"testing"

	"github.com/smolgo/smolgo/llama"
)

// A model loaded WithKVType(llama.KVQ8_0) chats over a q8_0 cache whose
// prompt logits stay within the quantized-model tolerance (0.6) of the f16
// cache's, in about half the memory.
func TestQ8KVSession(t *testing.T) {
	f16 := loadGoldenModel(t, "smollm3-tinyq-F32", WithThreads(2))
	q8 := loadGoldenModel(t, "smollm3-tinyq-F32", WithThreads(2), WithKVType(llama.KVQ8_0))
	if q8.KVType() != llama.KVQ8_0 || f16.KVType() != llama.KVF16 {
		t.Fatalf("KVType: %v, %v", q8.KVType(), f16.KVType())
	}
	msgs := sysChat("How long is a piece of string?")
	want, _ := promptLogits(t, f16.NewSession(), msgs)
	s := q8.NewSession()
	got, st := promptLogits(t, s, msgs)
	d := maxAbs(got, want)
	t.Logf("%d-token prompt: q8_0 vs f16 KV logits max diff %.3g", st.PromptTokens, d)
	if d > 0.6 || d == 0 {
		t.Errorf("q8_0 vs f16 KV prompt logits differ by %g, want (0, 0.6]", d)
	}
	c := s.cache.(*modelCache).c
	cfg := q8.Config()
	if c.Type() != llama.KVQ8_0 || c.Bytes() != cfg.KVBytes(llama.KVQ8_0, c.Cap()) ||
		2*cfg.KVBytes(llama.KVQ8_0, 1000) > cfg.KVBytes(llama.KVF16, 1000)*17/16 {
		t.Errorf("q8_0 session cache: type %v, %d bytes for %d positions", c.Type(), c.Bytes(), c.Cap())
	}
}
