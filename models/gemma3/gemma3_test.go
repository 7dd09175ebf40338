package gemma3

import (
	"bytes"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
)

// metadata is a tensor-less GGUF file with Gemma 3's architecture and kv.
func metadata(t *testing.T, kv ...gguf.KV) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	if err := gguf.Write(&buf, append([]gguf.KV{{Key: "general.architecture", Value: Arch}}, kv...), nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The sliding window's keys: a missing key means no window (or the
// default), a value of the wrong type or sign is an error naming the key
// (issue 39: an int32 -5 or a string silently meant no window).
func TestDescribeWindowKeys(t *testing.T) {
	cfg := llama.Config{Layers: 6, Embd: 64, Heads: 4, KVHeads: 1, HeadDim: 16, Rope: rope.Config{Dims: 16, Base: 1e6}}
	for _, c := range []struct {
		name   string
		kv     []gguf.KV
		window int    // of layer 0
		errHas string // "" for none
	}{
		{"no window", nil, 0, ""},
		{"window", []gguf.KV{{Key: Arch + ".attention.sliding_window", Value: uint32(24)}}, 24, ""},
		{"window as int32", []gguf.KV{{Key: Arch + ".attention.sliding_window", Value: int32(24)}}, 24, ""},
		{"window 0", []gguf.KV{{Key: Arch + ".attention.sliding_window", Value: uint32(0)}}, 0, ""},
		{"negative window", []gguf.KV{{Key: Arch + ".attention.sliding_window", Value: int32(-5)}}, 0, "sliding_window"},
		{"window as a string", []gguf.KV{{Key: Arch + ".attention.sliding_window", Value: "512"}}, 0, "sliding_window"},
		{"softcap as a string", []gguf.KV{{Key: Arch + ".final_logit_softcapping", Value: "30"}}, 0, "final_logit_softcapping"},
		{"swa base as a string", []gguf.KV{{Key: Arch + ".attention.sliding_window", Value: uint32(24)},
			{Key: Arch + ".rope.freq_base_swa", Value: "1e4"}}, 0, "rope.freq_base_swa"},
		{"pattern flags too few", []gguf.KV{{Key: Arch + ".attention.sliding_window", Value: uint32(24)},
			{Key: Arch + ".attention.sliding_window_pattern", Value: []bool{true, false}}}, 0, "2 flags for 6 layers"},
		{"pattern flags too many", []gguf.KV{{Key: Arch + ".attention.sliding_window", Value: uint32(24)},
			{Key: Arch + ".attention.sliding_window_pattern", Value: make([]bool, 7)}}, 0, "7 flags for 6 layers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := Describe(metadata(t, c.kv...), cfg)
			if c.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("error %v, want one naming %q", err, c.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Layers[0].Attention().Window != c.window || a.Layers[5].Attention().Window != 0 {
				t.Errorf("windows %d and %d, want %d and 0", a.Layers[0].Attention().Window, a.Layers[5].Attention().Window, c.window)
			}
		})
	}
}
