package cuda

import (
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/llama"
	_ "github.com/smolgo/smolgo/models"
)

// openModel reads a model's weights, described by its family (SmolLM3's
// NoPE layers included), for the checks that run before any upload.
func openModel(t testing.TB, path string) *llama.Weights {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cfg, arch, err := family.Describe(f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.LoadWeights(f, cfg, arch)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// demoModel is the tiny Q4_K_M model in testdata (q4_K, q6_K and f32).
func demoModel(t *testing.T) *llama.Weights {
	return openModel(t, "../testdata/smollm3-tinyq-Q4_K_M.gguf")
}

func TestParseDevice(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		err  string
	}{
		{"cuda", 0, ""},
		{"cuda:0", 0, ""},
		{"cuda:3", 3, ""},
		{"cuda:", 0, `"" is not a device number`},
		{"cuda:-1", 0, "not a device number"},
		{"cuda:01", 0, "not a device number"},
		{"cuda:x", 0, "not a device number"},
		{"gpu:0", 0, `not "cuda" or "cuda:N"`},
		{"cpu", 0, `not "cuda" or "cuda:N"`},
	} {
		n, err := ParseDevice(c.in)
		if c.err == "" {
			if err != nil || n != c.want {
				t.Errorf("ParseDevice(%q) = %d, %v; want %d", c.in, n, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("ParseDevice(%q) error %v, want one containing %q", c.in, err, c.err)
		}
	}
}

func TestCheckDevice(t *testing.T) {
	for _, c := range []struct {
		n, count int
		err      string
	}{
		{0, 1, ""},
		{1, 2, ""},
		{0, 0, "sees no device"},
		{1, 1, "no device cuda:1: the CUDA driver sees 1 (cuda:0 to cuda:0)"},
		{7, 4, "no device cuda:7: the CUDA driver sees 4 (cuda:0 to cuda:3)"},
	} {
		err := checkDevice(c.n, c.count)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("checkDevice(%d, %d) = %v, want %q", c.n, c.count, err, c.err)
		}
	}
}

func TestPlanSizesTheUpload(t *testing.T) {
	m := demoModel(t)
	p, err := newPlan(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.Config
	if want := 7*cfg.Layers + 1; len(p.mats) != want {
		t.Errorf("%d matrices to upload, want %d", len(p.mats), want)
	}
	var sum int64
	for _, mat := range p.mats {
		sum += int64(len(mat.Data))
	}
	if norms := int64(4 * cfg.Embd * (2*cfg.Layers + 1)); p.normBytes != norms || p.weights != sum+norms {
		t.Errorf("weights %d (norms %d), want %d + %d", p.weights, p.normBytes, sum, norms)
	}
	if p.batch != llama.DefaultBatchSize || p.context != cfg.Context {
		t.Errorf("defaults: batch %d context %d", p.batch, p.context)
	}
	need := p.weights + p.work + cfg.KVBytes(llama.KVF16, p.context)
	if err := p.fits(need, 0, "test"); err != nil {
		t.Errorf("exactly enough memory: %v", err)
	}
	err = p.fits(need-1, 1, "Tiny GPU")
	if err == nil || !strings.Contains(err.Error(), "cuda:1 (Tiny GPU) has") || !strings.Contains(err.Error(), "weights") {
		t.Errorf("one byte short: %v", err)
	}
}

func TestPlanRejects(t *testing.T) {
	m := demoModel(t)
	for _, c := range []struct {
		opts Options
		err  string
	}{
		{Options{KVType: backend.KVQ8_0}, `KV cache type "q8_0"`},
		{Options{BatchSize: -1}, "batch size -1"},
		{Options{Context: m.Config.Context + 1}, "context 4097: must be in [1, 4096]"},
		{Options{Context: -5}, "context -5"},
	} {
		if _, err := newPlan(m, c.opts); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%+v: error %v, want %q", c.opts, err, c.err)
		}
	}
	if _, err := newPlan(nil, Options{}); err == nil {
		t.Error("nil model accepted")
	}
}

// A model with a weight type the kernels lack is refused by name.
func TestPlanRejectsUnsupportedType(t *testing.T) {
	m := openModel(t, sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_0.gguf"))
	_, err := newPlan(m, Options{})
	if err == nil || !strings.Contains(err.Error(), "blk.0.attn_q.weight has type q4_0") {
		t.Fatalf("Q4_0 model: %v", err)
	}
}

// The CUDA backend reads the same architecture description as the CPU and
// refuses, by name, the features its kernels lack, before touching a device.
func TestPlanRefusesUnsupportedFeatures(t *testing.T) {
	for _, c := range []struct{ model, feature string }{
		{"qwen3-tiny-Q8_0", "qk norm"},
		{"qwen2-tiny-Q8_0", "qkv bias"},
		{"gemma3-tiny-Q8_0", "sliding window"},
	} {
		w := openModel(t, sharedtest.Path(t, "golden-families/models/"+c.model+".gguf"))
		_, err := newPlan(w, Options{})
		if err == nil || !strings.Contains(err.Error(), c.feature) {
			t.Errorf("%s: %v, want an error naming %q", c.model, err, c.feature)
		}
	}
	// Llama 3's RoPE factors are computed with the angles on the host.
	w := openModel(t, sharedtest.Path(t, "golden-families/models/llama32-tiny-Q8_0.gguf"))
	if _, err := newPlan(w, Options{}); err != nil {
		t.Errorf("llama32-tiny: %v", err)
	}
}
