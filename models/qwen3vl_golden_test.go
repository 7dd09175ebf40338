package models_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
	"github.com/smolgo/smolgo/vision"
)

// qwen3VLLogits is testdata/qwen3vl-logits-tiny.json.gz: llama.cpp mtmd's
// logits of synth's tiny qwen3vl text model with golden-vision's images,
// encoded by synth's tiny qwen3vl_merger projector, in the prompt
// (internal/synth/cmd/qwen3vl/golden.sh).
type qwen3VLLogits struct {
	TextSHA256   string     `json:"text_sha256"`
	MmprojSHA256 string     `json:"mmproj_sha256"`
	Selfcheck    [2]float64 `json:"selfcheck"` // haswell against sandybridge: max |Δ|, RMS
	Runs         []struct {
		Image   string        `json:"image"`
		Prompt  string        `json:"prompt"`
		Tokens  []int32       `json:"tokens"`
		Chunks  []visionChunk `json:"chunks"`
		Prefill [][]float32   `json:"prefill"`
		Decode  []struct {
			Token  int32     `json:"token"`
			Argmax int       `json:"argmax"`
			Logits []float32 `json:"logits"`
		} `json:"decode"`
		PrefillArgmax []int `json:"prefill_argmax"`
	} `json:"runs"`
}

func readQwen3VLLogits(t *testing.T) *qwen3VLLogits {
	t.Helper()
	var g qwen3VLLogits
	goldentest.ReadJSONGz(t, "testdata/qwen3vl-logits-tiny.json.gz", &g)
	return &g
}

// tolerance is golden-vision's rule on the reference's self-check: twice
// llama.cpp's worst difference with itself, rounded up to one significant
// digit.
func (g *qwen3VLLogits) tolerance() goldentest.Tolerance {
	up := func(x float64) float64 {
		p := math.Pow(10, math.Floor(math.Log10(x)))
		return math.Ceil(x/p-1e-9) * p
	}
	return goldentest.Tolerance{MaxAbs: up(2 * g.Selfcheck[0]), RMS: up(2 * g.Selfcheck[1])}
}

// writeQwen3VL writes synth's tiny Qwen3-VL pair into a temporary
// directory, checking that they are the files the reference was made with,
// and returns the text model's and the projector's paths.
func writeQwen3VL(t *testing.T, g *qwen3VLLogits) (text, mmproj string) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []struct {
		path, sha string
		write     func(w io.Writer) error
	}{
		{filepath.Join(dir, "qwen3vl-text-F32.gguf"), g.TextSHA256, func(w io.Writer) error {
			return synth.WriteQwen3VLText(context.Background(), w, synth.Qwen3VLTextTiny())
		}},
		{filepath.Join(dir, "mmproj-qwen3vl-F32.gguf"), g.MmprojSHA256, func(w io.Writer) error {
			return synth.WriteQwen3VLMmproj(w, synth.Qwen3VLMmprojTiny())
		}},
	} {
		var buf bytes.Buffer
		if err := f.write(&buf); err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(buf.Bytes()); hex.EncodeToString(sum[:]) != f.sha {
			t.Fatalf("synth's %s has SHA-256 %x, the reference was made with %s (run internal/synth/cmd/qwen3vl/golden.sh)", filepath.Base(f.path), sum, f.sha)
		}
		if err := os.WriteFile(f.path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "qwen3vl-text-F32.gguf"), filepath.Join(dir, "mmproj-qwen3vl-F32.gguf")
}

// prompt is the run's reference as a goldentest prompt.
func (g *qwen3VLLogits) prompt(i int) goldentest.Prompt {
	r := g.Runs[i]
	p := goldentest.Prompt{Tokens: r.Tokens}
	for k, l := range r.Prefill {
		p.Prefill = append(p.Prefill, goldentest.Row{Logits: l, Argmax: r.PrefillArgmax[k]})
	}
	for _, d := range r.Decode {
		p.Decode = append(p.Decode, goldentest.Row{Token: d.Token, Argmax: d.Argmax, Logits: d.Logits})
	}
	return p
}

// TestQwen3VLGoldenLogits runs the reference's prompts with golden-vision's
// images through the tiny qwen3vl text model as mtmd-logits does: the
// image's rows (the main merger's and two deepstack slices, from our
// encoder) at their M-RoPE positions (interleaved sections), the slices
// added after blocks 0 and 1. The layout must be mtmd's exactly, and every
// prefill row's logits and the teacher-forced decode steps' within the
// tolerance.
func TestQwen3VLGoldenLogits(t *testing.T) {
	g := readQwen3VLLogits(t)
	text, mmproj := writeQwen3VL(t, g)
	pr, err := vision.Open(mmproj, vision.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	tol := g.tolerance()
	for i, run := range g.Runs {
		t.Run(run.Image, func(t *testing.T) {
			data, err := os.ReadFile(sharedtest.Path(t, "golden-vision/images/"+run.Image))
			if err != nil {
				t.Fatal(err)
			}
			im, err := pr.Prepare(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			d := visionLogitsDiff(t, pr, im, text, run.Prompt, g.prompt(i), run.Chunks)
			t.Logf("%s: max |Δ| %.3g (tolerance %g), RMS %.3g (tolerance %g) over %d logits", run.Image, d.MaxAbs, tol.MaxAbs, d.RMS(), tol.RMS, d.N)
			if d.MaxAbs > tol.MaxAbs || d.RMS() > tol.RMS {
				t.Errorf("%s: max |Δ| %.3g / RMS %.3g exceed %g / %g (worst at %s)", run.Image, d.MaxAbs, d.RMS(), tol.MaxAbs, tol.RMS, d.Worst)
			}
		})
	}
}

// TestQwen3VLEngine answers a chat with an image through the engine: the
// tiny qwen3vl model opened with its projector (engine.WithProjector).
// With a template that writes the message as it is, the prompt is the
// reference's: its last row's logits and the greedy answer must be
// llama.cpp's, and a second turn reuses the image's rows from the
// session's cache. With the model's own chat format (Qwen3's ChatML) it
// answers too.
func TestQwen3VLEngine(t *testing.T) {
	g := readQwen3VLLogits(t)
	text, mmproj := writeQwen3VL(t, g)
	run := g.Runs[1] // checker-96x48: 18 rows, a 6 × 3 grid
	p := g.prompt(1)
	data, err := os.ReadFile(sharedtest.Path(t, "golden-vision/images/"+run.Image))
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.Open(text, engine.WithThreads(2), engine.WithProjector(mmproj), engine.WithChatTemplate(rawTemplate))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.TakesImages() || m.Projector().Width() != 3*256 {
		t.Fatalf("TakesImages %v, projector %v", m.TakesImages(), m.Projector())
	}
	s := m.NewSession()
	msgs := []engine.Message{{Role: "user", Content: run.Prompt, Images: []engine.Image{{Data: data}}}}
	var tokens []int32
	var st engine.Stats
	for ev, err := range s.Generate(context.Background(), msgs, engine.GenerateOptions{MaxTokens: len(p.Decode) + 1, Logprobs: true}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, lp := range ev.Logprobs {
			tokens = append(tokens, lp.Token)
		}
		if ev.Stats != nil {
			st = *ev.Stats
		}
	}
	if st.PromptTokens != len(p.Tokens) || st.ImageRows != 18 {
		t.Fatalf("prompt of %d rows (%d image rows), mtmd %d (18)", st.PromptTokens, st.ImageRows, len(p.Tokens))
	}
	tol := g.tolerance()
	var d goldentest.Diff
	d.Add("the prompt's last row", s.PromptLogits(), p.Prefill[len(p.Prefill)-1].Logits)
	if d.MaxAbs > tol.MaxAbs {
		t.Errorf("prompt logits: max |Δ| %.3g > %g (%s)", d.MaxAbs, tol.MaxAbs, d.Worst)
	}
	want := []int32{int32(p.Prefill[len(p.Prefill)-1].Argmax)}
	for _, r := range p.Decode[:len(p.Decode)-1] {
		want = append(want, int32(r.Argmax))
	}
	if n := min(len(tokens), len(want)); n == 0 || !slices.Equal(tokens[:n], want[:n]) {
		t.Errorf("greedy answer %v, llama.cpp %v", tokens, want)
	}
	t.Logf("%d prompt rows (%d image rows encoded), last-row max |Δ| %.3g, answer %v", st.PromptTokens, st.ImageRows, d.MaxAbs, tokens)
	msgs[0].Content += " Tell me."
	for ev, err := range s.Generate(context.Background(), msgs, engine.GenerateOptions{MaxTokens: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Stats != nil {
			st = *ev.Stats
		}
	}
	if st.ImageRows != 0 || st.CachedTokens < len(p.Tokens)-len(" A:") {
		t.Errorf("second turn: %d image rows encoded again, %d of %d rows cached", st.ImageRows, st.CachedTokens, st.PromptTokens)
	}

	// The model's own format: a ChatML conversation with the image.
	m2, err := engine.Open(text, engine.WithThreads(2), engine.WithProjector(mmproj))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	chat := []engine.Message{{Role: "user", Content: "What is in " + engine.ImageMarker + "?", Images: []engine.Image{{Data: data}}}}
	for ev, err := range m2.NewSession().Generate(context.Background(), chat, engine.GenerateOptions{MaxTokens: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Stats != nil {
			st = *ev.Stats
		}
	}
	if st.ImageRows != 18 || st.GeneratedTokens == 0 {
		t.Errorf("chat format: %d image rows, %d tokens generated", st.ImageRows, st.GeneratedTokens)
	}
}

// TestQwen3VLMismatch: a projector and a text model that do not fit are
// refused when the model opens, with an error naming what differs: Qwen3-VL's
// projector on Qwen2-VL's text model and the reverse (architectures), and on
// a qwen3vl model with one deepstack layer where the projector has two
// mergers (row widths); and the backend refuses input rows of the
// embedding width alone.
func TestQwen3VLMismatch(t *testing.T) {
	g := readQwen3VLLogits(t)
	text, mmproj := writeQwen3VL(t, g)
	one := synth.Qwen3VLTextTiny()
	one.Deepstack = 1
	var buf bytes.Buffer
	if err := synth.WriteQwen3VLText(context.Background(), &buf, one); err != nil {
		t.Fatal(err)
	}
	text1 := filepath.Join(t.TempDir(), "qwen3vl-deepstack1.gguf")
	if err := os.WriteFile(text1, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, text, mmproj, want string
	}{
		{"qwen3vl projector, qwen2vl text", sharedtest.Path(t, "golden-vision/models/qwen2vl-text-F32.gguf"), mmproj,
			"is of type qwen3vl_merger, which feeds qwen3vl text models, not qwen2vl"},
		{"qwen2vl projector, qwen3vl text", text, sharedtest.Path(t, "golden-vision/models/mmproj-qwen2vl-F32.gguf"),
			"is of type qwen2vl_merger, which feeds qwen2vl text models, not qwen3vl"},
		{"two mergers, one deepstack layer", text1, mmproj,
			"makes rows of width 768, but the qwen3vl text model's input rows are 512 wide"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := engine.Open(c.text, engine.WithThreads(2), engine.WithProjector(c.mmproj))
			if err == nil {
				m.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
	m, err := engine.Open(text, engine.WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b := m.Backend()
	if w := b.(backend.Embedder).EmbedWidth(); w != 3*256 {
		t.Fatalf("EmbedWidth %d, want 768", w)
	}
	c, err := b.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = b.Step(context.Background(), []backend.Seq{{Cache: c, Tokens: make([]int32, 2), Embeds: make([]float32, 2*256)}})
	if err == nil || !strings.Contains(err.Error(), "512 input values for 2 rows of 768") {
		t.Fatalf("rows of 256: %v", err)
	}
}
