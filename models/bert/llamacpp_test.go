package bert

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// TestQuantizedMatchesLlamaCpp quantizes the golden BERT models with
// llama.cpp's own quantizer (the llamaref tool of ../shared/tools/llamaref)
// to F16, Q8_0 and Q4_K_M and compares our embeddings and rank scores on
// each file with llama.cpp's on the same file, for the golden sequences and
// for 64 tokens (llama.cpp's one-chunk attention path) in one pass. It runs
// where llamaref is built (sharedtest.Llamaref: CI builds it):
//
//	go test -run LlamaCpp -v ./bert/
//
// F32 is held to the golden tolerance (cosine 0.99999, max 1e-4 on
// unnormalized vectors whose elements are about 1). The others round the
// activations before every product, by both engines (to F16 for F16
// weights, to 8 bits for Q8_0 and Q4_K_M), and a rounding that lands the
// other way after a sum in another order moves a vector by a step of that
// size: F16 cosine 0.99999 and max 1e-3 (measured at most 1.3e-4), Q8_0 and
// Q4_K_M cosine 0.9999 and max 0.01 (measured at most 0.0051; cosine above
// 0.9999996). docs/embeddings.md has the table.
func TestQuantizedMatchesLlamaCpp(t *testing.T) {
	bin := sharedtest.Llamaref(t)
	tol := map[string][2]float64{"F32": {0.99999, 1e-4}, "F16": {0.99999, 1e-3}, "Q8_0": {0.9999, 1e-2}, "Q4_K_M": {0.9999, 1e-2}}
	for _, model := range []string{"bert-tiny-F32", "bert-rank-tiny-F32"} {
		g := loadGolden(t, model)
		var seqs []string
		for _, s := range g.Runs[0].Sequences {
			seqs = append(seqs, joinIDs(s.Tokens))
		}
		ids := make([]int32, 64)
		for i := range ids {
			ids[i] = int32(7 * i % 337)
		}
		seqs = append(seqs, joinIDs(ids))
		for _, typ := range []string{"F32", "F16", "Q8_0", "Q4_K_M"} {
			t.Run(model+"/"+typ, func(t *testing.T) {
				src := sharedtest.Path(t, "golden-families/models/"+model+".gguf")
				path := src
				if typ != "F32" {
					path = filepath.Join(t.TempDir(), typ+".gguf")
					if b, err := exec.Command(bin, "quantize", src, path, typ).CombinedOutput(); err != nil {
						t.Fatalf("llamaref quantize: %v\n%s", err, b)
					}
				}
				for _, batch := range [][]string{seqs[:4], seqs[4:]} {
					out := filepath.Join(t.TempDir(), "ref.json")
					if b, err := exec.Command(bin, "embed", "--model", path, "--tokens", strings.Join(batch, ";"), "--out", out).CombinedOutput(); err != nil {
						t.Fatalf("llamaref embed: %v\n%s", err, b)
					}
					var ref struct {
						Pooling   string `json:"pooling"`
						Sequences []struct {
							Tokens    []int32   `json:"tokens"`
							Embedding []float32 `json:"embedding"`
							Scores    []float32 `json:"scores"`
						} `json:"sequences"`
					}
					b, err := os.ReadFile(out)
					if err != nil {
						t.Fatal(err)
					}
					if err := json.Unmarshal(b, &ref); err != nil {
						t.Fatal(err)
					}
					e := openFile(t, path, Options{Threads: 2})
					p, _ := backend.ParsePooling(ref.Pooling)
					enc := make([]backend.EncodeSeq, len(ref.Sequences))
					for i, s := range ref.Sequences {
						n := len(s.Embedding) + len(s.Scores)
						enc[i] = backend.EncodeSeq{Tokens: s.Tokens, Pooling: p, Out: make([]float32, n)}
					}
					if err := e.Encode(context.Background(), enc); err != nil {
						t.Fatal(err)
					}
					for i, s := range ref.Sequences {
						want := append(s.Embedding, s.Scores...)
						cos, d := agreement(enc[i].Out, want)
						t.Logf("%s %s: %d tokens: cosine %.9f, max |Δ| %.3g", typ, ref.Pooling, len(s.Tokens), cos, d)
						if d > tol[typ][1] || (len(want) > 1 && cos < tol[typ][0]) {
							t.Errorf("%d tokens: cosine %.9f, max |Δ| %.3g (tolerance %v)", len(s.Tokens), cos, d, tol[typ])
						}
					}
				}
			})
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
