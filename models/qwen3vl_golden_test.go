package models_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

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
	f, err := os.Open("testdata/qwen3vl-logits-tiny.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var g qwen3VLLogits
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
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
