package vision

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

// goldenEmbed is one file of ../shared/golden-vision/embeddings: the
// chunks mtmd makes of an image, with the rows of its image chunks.
type goldenEmbed struct {
	ProjectorType string `json:"projector_type"`
	Chunks        []struct {
		Type       string      `json:"type"`
		Tokens     []int32     `json:"tokens"`
		NTokens    int         `json:"n_tokens"`
		NPos       int         `json:"n_pos"`
		Grid       [2]int      `json:"grid"`
		TilePx     [2]int      `json:"tile_px"`
		Embeddings [][]float32 `json:"embeddings"`
	} `json:"chunks"`
}

// goldenRuns are golden-vision's projectors (file stems) and images.
var (
	goldenProjectors = []string{"gemma3", "idefics3", "qwen2vl", "qwen25vl"}
	goldenImages     = []string{"gradient-64x64.png", "checker-96x48.ppm", "noise-37x53.png"}
)

// goldenTolerance is golden/README.md's rule applied to golden-vision's
// selfcheck.json: twice the worst difference llama.cpp showed with itself
// (another CPU variant) over a projector's runs, rounded up to one
// significant digit; what is "embd" or "logits".
func goldenTolerance(t testing.TB, proj, what string) (maxAbs, rms float64) {
	t.Helper()
	var sc struct {
		Runs map[string]map[string]json.RawMessage `json:"runs"`
	}
	b, err := os.ReadFile(sharedtest.Path(t, "golden-vision/selfcheck.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	for name, r := range sc.Runs {
		if !strings.HasPrefix(name, proj+"-") {
			continue
		}
		var v [2]float64
		if err := json.Unmarshal(r[what], &v); err != nil {
			t.Fatalf("selfcheck %s %s: %v", name, what, err)
		}
		maxAbs, rms = max(maxAbs, v[0]), max(rms, v[1])
	}
	if maxAbs == 0 {
		t.Fatalf("selfcheck.json has no %s runs of %s", what, proj)
	}
	return roundUp1(2 * maxAbs), roundUp1(2 * rms)
}

func roundUp1(x float64) float64 {
	e := math.Floor(math.Log10(x))
	p := math.Pow(10, e)
	return math.Ceil(x/p-1e-9) * p
}

func stem(image string) string { return image[:strings.IndexByte(image, '.')] }

// TestGoldenEmbeddings encodes golden-vision's images with its projectors
// and compares every image chunk with mtmd's: the chunk layout (how many,
// their rows, positions and preprocessed sizes) exactly, the rows within
// the tolerance.
func TestGoldenEmbeddings(t *testing.T) {
	for _, proj := range goldenProjectors {
		t.Run(proj, func(t *testing.T) {
			pr, err := Open(sharedtest.Path(t, "golden-vision/models/mmproj-"+proj+"-F32.gguf"), Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			tolMax, tolRMS := goldenTolerance(t, proj, "embd")
			var worst, sumSq float64
			var count int
			var where string
			for _, img := range goldenImages {
				var g goldenEmbed
				if err := json.Unmarshal(sharedtest.ReadGzip(t, fmt.Sprintf("golden-vision/embeddings/%s-%s.json.gz", proj, stem(img))), &g); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(sharedtest.Path(t, "golden-vision/images/"+img))
				if err != nil {
					t.Fatal(err)
				}
				im, err := pr.Prepare(data, 0)
				if err != nil {
					t.Fatalf("%s: %v", img, err)
				}
				var ours []int
				for i, c := range im.Chunks {
					if c.Rows > 0 {
						ours = append(ours, i)
					}
				}
				var theirs []int
				for i, c := range g.Chunks {
					if c.Type == "image" {
						theirs = append(theirs, i)
					}
				}
				if len(ours) != len(theirs) {
					t.Fatalf("%s: %d image chunks, mtmd %d", img, len(ours), len(theirs))
				}
				for k, i := range ours {
					c, gc := im.Chunks[i], g.Chunks[theirs[k]]
					if c.Rows != gc.NTokens || c.Advance != gc.NPos || c.TilePx != gc.TilePx {
						t.Fatalf("%s chunk %d: %d rows advancing %d, %v px; mtmd %d rows advancing %d, %v px", img, k, c.Rows, c.Advance, c.TilePx, gc.NTokens, gc.NPos, gc.TilePx)
					}
					rows := make([]float32, c.Rows*pr.Width())
					if err := pr.Encode(context.Background(), im, i, rows); err != nil {
						t.Fatal(err)
					}
					for r, want := range gc.Embeddings {
						for j, w := range want {
							d := math.Abs(float64(rows[r*pr.Width()+j]) - float64(w))
							if math.IsNaN(d) {
								d = math.Inf(1)
							}
							if d > worst {
								worst, where = d, fmt.Sprintf("%s chunk %d row %d value %d (got %v, want %v)", img, k, r, j, rows[r*pr.Width()+j], w)
							}
							sumSq += d * d
							count++
						}
					}
				}
			}
			rms := math.Sqrt(sumSq / float64(count))
			t.Logf("%s: max |Δ| %.3g (tolerance %g), RMS %.3g (tolerance %g) over %d values; worst at %s", proj, worst, tolMax, rms, tolRMS, count, where)
			if worst > tolMax || rms > tolRMS {
				t.Errorf("%s: max |Δ| %.3g / RMS %.3g exceed %g / %g (worst at %s)", proj, worst, rms, tolMax, tolRMS, where)
			}
		})
	}
}
