package llama

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/rope"
)

// TestQ8CacheMatchesLlamaCpp runs llama.cpp itself (the llamaref tool of
// ../shared/tools/llamaref, built by its build.sh) with a q8_0 KV cache on
// the golden prompts and compares our q8_0-cache logits with its, against
// the golden tolerances of each model (F32: 0.09 / 0.009). It runs where
// llamaref is built (sharedtest.Llamaref: CI builds it):
//
//	go test -run LlamaCpp -v ./llama/
//
// Measured: tinyq-F32 max 0.013 / RMS 0.0017 (12 tokens) and 0.013 / 0.0014
// (600), as close as our f16 cache is to llama.cpp's f16 one (0.002);
// tinyq-Q4_K_M 0.16 / 0.036 and 0.31 / 0.033.
func TestQ8CacheMatchesLlamaCpp(t *testing.T) {
	sharedtest.Llamaref(t) // skip early where llama.cpp is absent
	cases := []struct {
		model          string
		tolMax, tolRMS float64
	}{
		{"smollm3-tinyq-F32", 0.09, 0.009},
		{"smollm3-tinyq-Q4_K_M", 0.9, 0.2},
	}
	for _, tc := range cases {
		_, m := openModel(t, tc.model, Options{Threads: 2}, rope.EveryNth(8, 4))
		var path string
		if strings.HasSuffix(tc.model, "-F32") {
			path = sharedtest.Gunzip(t, "golden/models/"+tc.model+".gguf.gz")
		} else {
			path = sharedtest.Path(t, "golden/models/"+tc.model+".gguf")
		}
		var golden struct {
			Prompts []struct {
				Name   string  `json:"name"`
				Tokens []int32 `json:"tokens"`
				Decode []struct {
					Token int32 `json:"token"`
				} `json:"decode"`
			} `json:"prompts"`
		}
		if err := json.Unmarshal(sharedtest.ReadGzip(t, "golden/logits/"+tc.model+".json.gz"), &golden); err != nil {
			t.Fatal(err)
		}
		for _, p := range golden.Prompts {
			if p.Name != "text12" && p.Name != "long600" {
				continue
			}
			var forced []int32
			for _, d := range p.Decode {
				forced = append(forced, d.Token)
			}
			pre, dec := sharedtest.LlamarefLogits(t, path, p.Tokens, "--force", joinIDs(forced), "--threads", "1", "--kv-type", "q8_0")
			var want []float32
			for _, r := range append(pre, dec...) {
				want = append(want, r...)
			}
			got := runLogits(t, m, KVQ8_0, p.Tokens, forced)
			dmax, drms := maxDiff(got, want), rmsDiff(got, want)
			t.Logf("%s %s: q8_0 cache vs llama.cpp's q8_0 cache: max %.3g, RMS %.3g", tc.model, p.Name, dmax, drms)
			if dmax > tc.tolMax || drms > tc.tolRMS {
				t.Errorf("%s %s: differ from llama.cpp by max %g, RMS %g (tolerance %g / %g)", tc.model, p.Name, dmax, drms, tc.tolMax, tc.tolRMS)
			}
		}
	}
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}
