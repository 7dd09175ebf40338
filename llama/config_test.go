package llama

import (
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// A per-layer attention.head_count_kv must have one entry per layer, as
// llama.cpp requires (issue 39: an array of the wrong length loaded).
func TestConfigPerLayerLength(t *testing.T) {
	set := func(v any) func([]gguf.KV) []gguf.KV {
		return func(kv []gguf.KV) []gguf.KV {
			for i := range kv {
				if kv[i].Key == "llama.attention.head_count_kv" {
					kv[i].Value = v
				}
			}
			return kv
		}
	}
	for _, c := range []struct {
		v      []uint32
		errHas string // "" for none
		heads  int
	}{
		{[]uint32{2, 2, 2}, "", 2}, // llama-tiny has 3 blocks
		{[]uint32{2, 2}, "has 2 entries for 3 layers", 0},
		{[]uint32{2, 2, 2, 2}, "has 4 entries for 3 layers", 0},
	} {
		cfg, err := ConfigFromGGUF(rewrite(t, "llama-tiny-F32", set(c.v), nil))
		switch {
		case c.errHas == "" && (err != nil || cfg.KVHeads != c.heads):
			t.Errorf("%v: %+v, %v", c.v, cfg.KVHeads, err)
		case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
			t.Errorf("%v: error %v, want one saying %q", c.v, err, c.errHas)
		}
	}
}
