package smollm3

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// goldenModels are all models of ../shared/golden (README.md, "Files").
var goldenModels = []string{
	"smollm3-tinyq-F32", "smollm3-tinyq-F16", "smollm3-tinyq-BF16", "smollm3-tinyq-Q8_0",
	"smollm3-tinyq-Q4_0", "smollm3-tinyq-Q4_1", "smollm3-tinyq-Q5_0", "smollm3-tinyq-Q5_1",
	"smollm3-tinyq-Q2_K", "smollm3-tinyq-Q3_K_M", "smollm3-tinyq-Q4_K_M", "smollm3-tinyq-Q5_K_M",
	"smollm3-tinyq-Q6_K", "llama-tiny-F32", "smollm3-tinyyarn-F32",
}

type goldenRow struct {
	Pos    int       `json:"pos"`
	Token  int32     `json:"token"`
	Argmax int       `json:"argmax"`
	Margin float64   `json:"margin"`
	Logits []float32 `json:"logits"`
}

type goldenPrompt struct {
	Name    string      `json:"name"`
	Tokens  []int32     `json:"tokens"`
	Prefill []goldenRow `json:"prefill"`
	Decode  []goldenRow `json:"decode"`
}

type goldenFile struct {
	Schema  string         `json:"schema"`
	Model   string         `json:"model"`
	NVocab  int            `json:"n_vocab"`
	Prompts []goldenPrompt `json:"prompts"`
}

type tolerance struct {
	MaxAbs float64 `json:"max_abs"`
	RMS    float64 `json:"rms"`
}

var (
	selfcheckOnce sync.Once
	selfcheck     struct {
		Models map[string]struct {
			Tolerance tolerance `json:"tolerance"`
		} `json:"models"`
	}
	selfcheckErr error
)

func goldenTolerance(t *testing.T, model string) tolerance {
	t.Helper()
	path := sharedtest.Path(t, "golden/selfcheck.json")
	selfcheckOnce.Do(func() {
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &selfcheck)
		}
		selfcheckErr = err
	})
	if selfcheckErr != nil {
		t.Fatalf("selfcheck.json: %v", selfcheckErr)
	}
	tol, ok := selfcheck.Models[model]
	if !ok || tol.Tolerance.MaxAbs <= 0 || tol.Tolerance.RMS <= 0 {
		t.Fatalf("selfcheck.json has no tolerance for %s", model)
	}
	return tol.Tolerance
}

func loadGolden(t *testing.T, model string) goldenFile {
	t.Helper()
	var g goldenFile
	if err := json.Unmarshal(sharedtest.ReadGzip(t, "golden/logits/"+model+".json.gz"), &g); err != nil {
		t.Fatalf("%s golden: %v", model, err)
	}
	if g.Schema != "smolgo-golden-logits/1" || len(g.Prompts) == 0 {
		t.Fatalf("%s golden: schema %q, %d prompts", model, g.Schema, len(g.Prompts))
	}
	return g
}

// goldenModelPath returns the model file, unpacking the gzip'ed F32 one.
func goldenModelPath(t testing.TB, model string) string {
	t.Helper()
	if model == "smollm3-tinyq-F32" {
		return sharedtest.Gunzip(t, "golden/models/"+model+".gguf.gz")
	}
	return sharedtest.Path(t, "golden/models/"+model+".gguf")
}

// diffStats accumulates |ours - golden| over many logits.
type diffStats struct {
	maxAbs     float64
	sumSq      float64
	n          int
	worstWhere string
}

func (d *diffStats) add(where string, got, want []float32) {
	for i := range want {
		e := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if e > d.maxAbs {
			d.maxAbs, d.worstWhere = e, fmt.Sprintf("%s logit %d (got %v, want %v)", where, i, got[i], want[i])
		}
		d.sumSq += e * e
	}
	d.n += len(want)
}

func (d *diffStats) rms() float64 { return math.Sqrt(d.sumSq / float64(max(1, d.n))) }

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// heavyPrompt reports whether a prompt runs only under SMOLGO_HEAVY=1.
// long600 runs by default for the Q4_K_M model (the one the project ships);
// F32's long600 only in heavy mode.
func heavyPrompt(model, prompt string) bool {
	return prompt == "long600" && model != "smollm3-tinyq-Q4_K_M"
}

// TestGoldenLogits compares our logits with llama.cpp's for every golden
// model and prompt: the whole prompt in one Forward (all rows), then the 16
// decode steps fed the golden tokens (teacher forcing); max abs and RMS over
// the model's file must be within selfcheck.json's tolerance. Then greedy
// decoding from our own argmax must reproduce llama.cpp's tokens for as long
// as every golden margin on the way exceeds twice the max-abs tolerance.
func TestGoldenLogits(t *testing.T) {
	heavy := os.Getenv("SMOLGO_HEAVY") == "1"
	for _, name := range goldenModels {
		t.Run(name, func(t *testing.T) {
			tol := goldenTolerance(t, name)
			g := loadGolden(t, name)
			// Like the reference run: the whole prompt in one batch.
			m, err := family.Load(goldenModelPath(t, name), engine.WithThreads(2), engine.WithBatchSize(1024))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if got := m.LLM().Config.Vocab; got != g.NVocab {
				t.Fatalf("vocab %d, golden %d", got, g.NVocab)
			}
			var all diffStats
			for _, p := range g.Prompts {
				if heavyPrompt(name, p.Name) && !heavy {
					t.Logf("%s: skipped (SMOLGO_HEAVY=1 runs it)", p.Name)
					continue
				}
				d := checkPrompt(t, m, p, tol)
				t.Logf("%-8s max abs %.4g  RMS %.3g  (%d logits)", p.Name, d.maxAbs, d.rms(), d.n)
				all.maxAbs = max(all.maxAbs, d.maxAbs)
				all.sumSq += d.sumSq
				all.n += d.n
			}
			t.Logf("%s: max abs %.4g (tolerance %g), RMS %.3g (tolerance %g)", name, all.maxAbs, tol.MaxAbs, all.rms(), tol.RMS)
			if all.maxAbs > tol.MaxAbs || all.rms() > tol.RMS {
				t.Errorf("%s: max abs %.4g / RMS %.3g exceed the tolerance %g / %g", name, all.maxAbs, all.rms(), tol.MaxAbs, tol.RMS)
			}
		})
	}
}

func checkPrompt(t *testing.T, m *Model, p goldenPrompt, tol tolerance) diffStats {
	t.Helper()
	ctx := context.Background()
	var d diffStats
	cache, err := m.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	V := m.LLM().Config.Vocab
	logits, err := m.Forward(ctx, cache, p.Tokens, 0, true)
	if err != nil {
		t.Fatalf("%s prefill: %v", p.Name, err)
	}
	if len(logits) != len(p.Tokens)*V || len(p.Prefill) != len(p.Tokens) {
		t.Fatalf("%s: %d logits for %d tokens, %d golden rows", p.Name, len(logits), len(p.Tokens), len(p.Prefill))
	}
	lastPrefill := make([]float32, V)
	for i, r := range p.Prefill {
		row := logits[i*V : (i+1)*V]
		d.add(fmt.Sprintf("%s prefill pos %d", p.Name, r.Pos), row, r.Logits)
		if r.Margin > 2*tol.MaxAbs && argmax(row) != r.Argmax {
			t.Errorf("%s prefill pos %d: argmax %d, golden %d (margin %g)", p.Name, r.Pos, argmax(row), r.Argmax, r.Margin)
		}
	}
	copy(lastPrefill, logits[(len(p.Tokens)-1)*V:])
	// Teacher-forced decode.
	for _, r := range p.Decode {
		logits, err := m.Forward(ctx, cache, []int32{r.Token}, r.Pos, false)
		if err != nil {
			t.Fatalf("%s decode pos %d: %v", p.Name, r.Pos, err)
		}
		d.add(fmt.Sprintf("%s decode pos %d", p.Name, r.Pos), logits, r.Logits)
	}
	if d.maxAbs > tol.MaxAbs {
		t.Logf("%s: worst at %s", p.Name, d.worstWhere)
	}
	// Free-running greedy decode from our own argmax, resuming from the
	// prompt with a truncated cache.
	if err := cache.Truncate(len(p.Tokens)); err != nil {
		t.Fatal(err)
	}
	prev, margin := lastPrefill, p.Prefill[len(p.Prefill)-1].Margin
	for k, r := range p.Decode {
		if margin <= 2*tol.MaxAbs {
			break // a near tie: llama.cpp's own variants may choose either way
		}
		if tok := int32(argmax(prev)); tok != r.Token {
			t.Errorf("%s greedy step %d: token %d, golden %d (margin %g)", p.Name, k, tok, r.Token, margin)
			break
		}
		logits, err := m.Forward(ctx, cache, []int32{r.Token}, r.Pos, false)
		if err != nil {
			t.Fatal(err)
		}
		prev, margin = logits, r.Margin
	}
	return d
}

// TestGoldenModelsListed guards against a golden model being added to
// ../shared without a test here.
func TestGoldenModelsListed(t *testing.T) {
	entries, err := os.ReadDir(sharedtest.Path(t, "golden/logits"))
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Join(goldenModels, " ")
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json.gz")
		if !strings.Contains(" "+listed+" ", " "+name+" ") {
			t.Errorf("golden logits %s have no test", e.Name())
		}
	}
}
