//go:build cuda

package cuda

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

// The golden reference (../shared/golden, see its README): llama.cpp's
// logits per prompt position and the tolerance selfcheck.json derives from
// llama.cpp's own spread across its CPU paths.

// goldenPrompt is one prompt's tokens and llama.cpp's logits: a row per
// prompt position, then a row per teacher-forced decode step.
type goldenPrompt struct {
	Name            string
	Tokens          []int32
	Prefill, Decode []struct {
		Pos    int
		Token  int32
		Logits []float32
	}
}

type goldenTol struct {
	MaxAbs float64 `json:"max_abs"`
	RMS    float64 `json:"rms"`
}

func loadGolden(t *testing.T, model string) (g struct {
	Schema  string         `json:"schema"`
	Prompts []goldenPrompt `json:"prompts"`
}) {
	t.Helper()
	if err := json.Unmarshal(sharedtest.ReadGzip(t, "golden/logits/"+model+".json.gz"), &g); err != nil || len(g.Prompts) == 0 {
		t.Fatalf("golden logits of %s: %v (%d prompts)", model, err, len(g.Prompts))
	}
	return g
}

func goldenTolerance(t *testing.T, model string) goldenTol {
	t.Helper()
	var sc struct {
		Models map[string]struct {
			Tolerance goldenTol `json:"tolerance"`
		} `json:"models"`
	}
	b, err := os.ReadFile(sharedtest.Path(t, "golden/selfcheck.json"))
	if err == nil {
		err = json.Unmarshal(b, &sc)
	}
	tol := sc.Models[model].Tolerance
	if err != nil || tol.MaxAbs <= 0 {
		t.Fatalf("selfcheck.json: no tolerance for %s (%v)", model, err)
	}
	return tol
}

// goldenModelPath is the model file; the F32 source is stored gzip'ed.
func goldenModelPath(t *testing.T, model string) string {
	if model == "smollm3-tinyq-F32" {
		return sharedtest.Gunzip(t, "golden/models/"+model+".gguf.gz")
	}
	return sharedtest.Path(t, "golden/models/"+model+".gguf")
}

// diffStats gathers |got - want| over many logits.
type diffStats struct {
	maxAbs, sumSq float64
	n             int
	worstWhere    string
}

func (d *diffStats) add(where string, got, want []float32) {
	for i, w := range want {
		e := math.Abs(float64(got[i] - w))
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if e > d.maxAbs {
			d.maxAbs, d.worstWhere = e, fmt.Sprintf("%s logit %d (got %v, want %v)", where, i, got[i], w)
		}
		d.sumSq += e * e
		d.n++
	}
}

func (d *diffStats) rms() float64 { return math.Sqrt(d.sumSq / float64(max(1, d.n))) }
