package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

func runImageJSON(t *testing.T, args ...string) ImageOutput {
	t.Helper()
	var buf bytes.Buffer
	if err := run(context.Background(), args, &buf, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	var out ImageOutput
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, buf.String())
	}
	return out
}

// visionRun is one of golden-vision's runs: a projector (file stem), its
// text model, its prompt and an image.
type visionRun struct{ proj, text, prompt, image string }

func (r visionRun) name() string { return r.proj + "-" + r.image[:strings.IndexByte(r.image, '.')] }

func (r visionRun) model(t *testing.T) string {
	return sharedtest.Path(t, "golden-vision/models/"+r.text+"-text-F32.gguf")
}

func (r visionRun) mmproj(t *testing.T) string {
	return sharedtest.Path(t, "golden-vision/models/mmproj-"+r.proj+"-F32.gguf")
}

// args are the command line of the run.
func (r visionRun) args(t *testing.T) []string {
	return r.argsWith(t, r.prompt, sharedtest.Path(t, "golden-vision/images/"+r.image))
}

// argsWith is the command line of the run's models with another prompt
// and images.
func (r visionRun) argsWith(t *testing.T, prompt string, images ...string) []string {
	return []string{"-model", r.model(t), "-mmproj", r.mmproj(t), "-image", strings.Join(images, ","), "-text", prompt, "-threads", "2"}
}

var (
	gemma3Run   = visionRun{"gemma3", "gemma3", "Look: <__media__> What is it?", "checker-96x48.ppm"}
	qwen2vlRun  = visionRun{"qwen2vl", "qwen2vl", "Q: <__media__> A:", "noise-37x53.png"}
	idefics3Run = visionRun{"idefics3", "idefics3", "User:<__media__>Describe it.", "gradient-64x64.png"}
)

// -image with -all -decode 8 prints what llamaref mtmd-logits printed for
// golden-vision's runs: the same layout (chunks with their first positions,
// M-RoPE positions, rows with -1 for image rows), the same greedy tokens,
// and every prefill and decode row's logits within golden-vision's
// tolerance; for Gemma 3 (image rows attending both ways), Qwen2-VL
// (M-RoPE positions) and Idefics3 (several image chunks between text).
func TestImageLogitsMatchGolden(t *testing.T) {
	for _, r := range []visionRun{gemma3Run, qwen2vlRun, {"qwen2vl", "qwen2vl", "Q: <__media__> A:", "checker-96x48.ppm"}, idefics3Run} {
		t.Run(r.name(), func(t *testing.T) {
			rel := "golden-vision/logits/" + r.name() + ".json.gz"
			g := goldentest.Load(t, rel)
			var gc struct {
				Prompts []struct {
					Chunks []ChunkInfo `json:"chunks"`
				} `json:"prompts"`
			}
			if err := json.Unmarshal(sharedtest.ReadGzip(t, rel), &gc); err != nil {
				t.Fatal(err)
			}
			p := g.Prompts[0]
			out := runImageJSON(t, append(r.args(t), "-all", "-decode", fmt.Sprint(len(p.Decode)))...)
			if out.NVocab != g.NVocab || out.Prompt != r.prompt || len(out.Images) != 1 {
				t.Fatalf("header: n_vocab %d (mtmd %d), prompt %q, %d images", out.NVocab, g.NVocab, out.Prompt, len(out.Images))
			}
			if !slices.Equal(out.Tokens, p.Tokens) {
				t.Fatalf("tokens %v\n  mtmd %v", out.Tokens, p.Tokens)
			}
			if !reflect.DeepEqual(out.Chunks, gc.Prompts[0].Chunks) {
				t.Errorf("chunks %+v\n  mtmd %+v", out.Chunks, gc.Prompts[0].Chunks)
			}
			tol := goldentest.VisionTolerance(t, r.proj)
			d := checkRows(t, out, ImageOutput{Prefill: toRows(p.Prefill), Decode: toRows(p.Decode)}, tol)
			t.Logf("%s: max |Δ| %.3g (tolerance %g), RMS %.3g (tolerance %g) over %d logits", r.name(), d.MaxAbs, tol.MaxAbs, d.RMS(), tol.RMS, d.N)
		})
	}
}

// checkRows compares the prefill and decode rows of got with want's: the
// same positions and tokens fed, an argmax that is the logits' largest,
// and logits within tol.
func checkRows(t *testing.T, got, want ImageOutput, tol goldentest.Tolerance) goldentest.Diff {
	t.Helper()
	if len(got.Prefill) != len(want.Prefill) || len(got.Decode) != len(want.Decode) {
		t.Fatalf("%d prefill and %d decode rows, llama.cpp %d and %d", len(got.Prefill), len(got.Decode), len(want.Prefill), len(want.Decode))
	}
	var d goldentest.Diff
	for _, part := range []struct {
		name string
		g, w []ImageRow
	}{{"prefill", got.Prefill, want.Prefill}, {"decode", got.Decode, want.Decode}} {
		for i, row := range part.g {
			w := part.w[i]
			if row.Pos != w.Pos || row.Token != w.Token {
				t.Fatalf("%s row %d: pos %d token %d, llama.cpp pos %d token %d", part.name, i, row.Pos, row.Token, w.Pos, w.Token)
			}
			if a, _ := top2(row.Logits); row.Argmax != a {
				t.Errorf("%s row %d: argmax %d, but the logits' largest is %d", part.name, i, row.Argmax, a)
			}
			d.Add(fmt.Sprintf("%s row %d", part.name, i), row.Logits, w.Logits)
		}
	}
	if d.MaxAbs > tol.MaxAbs || d.RMS() > tol.RMS {
		t.Errorf("max |Δ| %.3g / RMS %.3g exceed %g / %g (worst at %s)", d.MaxAbs, d.RMS(), tol.MaxAbs, tol.RMS, d.Worst)
	}
	return d
}

// The command prints what llama.cpp itself (llamaref mtmd-logits, run
// here) prints for prompts golden-vision does not hold, two images each:
// the same header (what smolgo knows of it), layout and tokens, and logits
// within golden-vision's tolerance.
func TestImageMatchesLlamaref(t *testing.T) {
	bin := sharedtest.Llamaref(t)
	const prompt = "Look: <__media__> and <__media__> What?"
	for _, r := range []visionRun{gemma3Run, qwen2vlRun, idefics3Run} {
		t.Run(r.proj, func(t *testing.T) {
			images := sharedtest.Path(t, "golden-vision/images/checker-96x48.ppm") + "," + sharedtest.Path(t, "golden-vision/images/noise-37x53.png")
			file := filepath.Join(t.TempDir(), "ref.json")
			cmd := exec.Command(bin, "mtmd-logits", "--model", r.model(t), "--mmproj", r.mmproj(t), "--image", images, "--prompt", prompt,
				"--decode", "8", "--add-special", "--out", file)
			if b, err := cmd.CombinedOutput(); err != nil {
				if strings.Contains(string(b), "without libmtmd") && os.Getenv("CI") != "true" {
					t.Skipf("llamaref has no mtmd-logits (%s); rerun ../shared/tools/llamaref/build.sh", bytes.TrimSpace(b))
				}
				t.Fatalf("llamaref mtmd-logits: %v\n%s", err, b)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var want ImageOutput
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("llamaref's output: %v", err)
			}
			got := runImageJSON(t, append(r.argsWith(t, prompt, images), "-all", "-decode", "8")...)
			header := func(o ImageOutput) ImageOutput {
				o.Engine, o.Threads, o.Chunks, o.Tokens, o.Prefill, o.Decode = "", 0, nil, nil, nil, nil
				return o
			}
			if g, w := header(got), header(want); !reflect.DeepEqual(g, w) {
				t.Errorf("header %+v\nllama.cpp %+v", g, w)
			}
			if !slices.Equal(got.Tokens, want.Tokens) || !reflect.DeepEqual(got.Chunks, want.Chunks) {
				t.Fatalf("layout: tokens %v chunks %+v\nllama.cpp tokens %v chunks %+v", got.Tokens, got.Chunks, want.Tokens, want.Chunks)
			}
			tol := goldentest.VisionTolerance(t, r.proj)
			d := checkRows(t, got, want, tol)
			t.Logf("%s, two images: %d rows, max |Δ| %.3g (tolerance %g), RMS %.3g (tolerance %g)", r.proj, len(got.Prefill)+len(got.Decode), d.MaxAbs, tol.MaxAbs, d.RMS(), tol.RMS)
		})
	}
}

func toRows(rs []goldentest.Row) []ImageRow {
	out := make([]ImageRow, len(rs))
	for i, r := range rs {
		out[i] = ImageRow{Pos: r.Pos, Token: r.Token, Argmax: r.Argmax, Margin: r.Margin, Logits: r.Logits}
	}
	return out
}

// Without -all only the prompt's last row is printed; -top K prints its K
// largest pairs, the argmax first, and the margin is the gap to the second.
func TestImageTopLastRow(t *testing.T) {
	g := goldentest.Load(t, "golden-vision/logits/"+gemma3Run.name()+".json.gz")
	out := runImageJSON(t, append(gemma3Run.args(t), "-top", "3", "-decode", "1")...)
	want := g.Prompts[0].Prefill[len(g.Prompts[0].Prefill)-1]
	if len(out.Prefill) != 1 || len(out.Decode) != 1 || len(out.Tokens) != len(g.Prompts[0].Tokens) {
		t.Fatalf("%d prefill rows, %d decode rows, %d tokens", len(out.Prefill), len(out.Decode), len(out.Tokens))
	}
	r := out.Prefill[0]
	if r.Pos != want.Pos || r.Logits != nil || len(r.Top) != 3 {
		t.Fatalf("last row: pos %d (mtmd %d), %d logits, top %v", r.Pos, want.Pos, len(r.Logits), r.Top)
	}
	if int(r.Top[0][0]) != r.Argmax || r.Argmax != want.Argmax {
		t.Errorf("top %v, argmax %d, mtmd's argmax %d", r.Top, r.Argmax, want.Argmax)
	}
	if m := float64(r.Top[0][1]) - float64(r.Top[1][1]); m != r.Margin {
		t.Errorf("margin %g, the top pairs differ by %g", r.Margin, m)
	}
	if out.Decode[0].Token != int32(r.Argmax) {
		t.Errorf("decoded %d after a prompt whose argmax is %d", out.Decode[0].Token, r.Argmax)
	}
}

// -image a,b fills the prompt's markers in order: each image's chunks
// where its marker stands, positions running on through both (M-RoPE's
// image chunk advancing by its grid's longer side), and the rows before
// the second image as in the prompt with the first image alone.
func TestImageTwoImages(t *testing.T) {
	a := sharedtest.Path(t, "golden-vision/images/noise-37x53.png")
	b := sharedtest.Path(t, "golden-vision/images/checker-96x48.ppm")
	out := runImageJSON(t, append(qwen2vlRun.argsWith(t, "Q: <__media__> A: <__media__> B:", a, b), "-all")...)
	one := runImageJSON(t, append(qwen2vlRun.args(t), "-all")...)
	if len(out.Images) != 2 || out.Images[1] != (ImageDims{NX: 96, NY: 48}) {
		t.Fatalf("images %v", out.Images)
	}
	var kinds []string
	pos := 0
	for i, c := range out.Chunks {
		kinds = append(kinds, c.Type)
		if c.Pos0 != pos {
			t.Errorf("chunk %d starts at %d, the one before ends at %d", i, c.Pos0, pos)
		}
		pos += len(c.Tokens) + c.NPos
	}
	if want := []string{"text", "image", "text", "image", "text"}; !slices.Equal(kinds, want) {
		t.Fatalf("chunks %v, want %v", kinds, want)
	}
	if imageRows := strings.Count(fmt.Sprint(out.Tokens), "-1"); imageRows != out.Chunks[1].NTokens+out.Chunks[3].NTokens || out.Chunks[3].NTokens != 18 {
		t.Errorf("%d image rows in tokens, chunks of %d and %d rows", imageRows, out.Chunks[1].NTokens, out.Chunks[3].NTokens)
	}
	// The rows up to the first image's end delimiter and the text after it.
	n := len(one.Chunks[0].Tokens) + one.Chunks[1].NTokens + 1
	var d goldentest.Diff
	for i := range n {
		if out.Tokens[i] != one.Tokens[i] {
			t.Fatalf("row %d: token %d, %d with one image", i, out.Tokens[i], one.Tokens[i])
		}
		d.Add(fmt.Sprintf("row %d", i), out.Prefill[i].Logits, one.Prefill[i].Logits)
	}
	if d.MaxAbs > 1e-4 {
		t.Errorf("the rows before the second image differ from the one-image prompt's by %g (%s)", d.MaxAbs, d.Worst)
	}
}

// Image input the command cannot take is refused with an error naming
// what is wrong, before any model is loaded when the flags alone tell.
func TestImageFlagErrors(t *testing.T) {
	model := sharedtest.Path(t, "golden-vision/models/gemma3-text-F32.gguf")
	proj := sharedtest.Path(t, "golden-vision/models/mmproj-gemma3-F32.gguf")
	qwenProj := sharedtest.Path(t, "golden-vision/models/mmproj-qwen2vl-F32.gguf")
	img := sharedtest.Path(t, "golden-vision/images/gradient-64x64.png")
	notImage := filepath.Join(t.TempDir(), "notes.png")
	if err := os.WriteFile(notImage, []byte("not a picture"), 0o600); err != nil {
		t.Fatal(err)
	}
	const prompt = "Look: <__media__> What is it?"
	for _, c := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"no projector", []string{"-model", model, "-image", img, "-text", prompt}, "-image needs -mmproj"},
		{"no image", []string{"-model", model, "-mmproj", proj, "-text", prompt}, "-mmproj needs -image"},
		{"token ids", []string{"-model", model, "-mmproj", proj, "-image", img, "-tokens", "1,2"}, "-image needs -text"},
		{"tokenize", []string{"-model", model, "-mmproj", proj, "-image", img, "-text", prompt, "-tokenize"}, "-tokenize does not take -image"},
		{"no marker", []string{"-model", model, "-mmproj", proj, "-image", img, "-text", "What is it?"}, "0 <__media__> markers for 1 images"},
		{"more images than markers", []string{"-model", model, "-mmproj", proj, "-image", img + "," + img, "-text", prompt}, "1 <__media__> markers for 2 images"},
		{"more markers than images", []string{"-model", model, "-mmproj", proj, "-image", img, "-text", prompt + prompt}, "2 <__media__> markers for 1 images"},
		{"empty image name", []string{"-model", model, "-mmproj", proj, "-image", img + ",", "-text", prompt + prompt}, "image 2 has no file name"},
		{"unreadable image", []string{"-model", model, "-mmproj", proj, "-image", "/nonexistent/cat.png", "-text", prompt}, "/nonexistent/cat.png"},
		{"not an image", []string{"-model", model, "-mmproj", proj, "-image", notImage, "-text", prompt}, notImage},
		{"unreadable projector", []string{"-model", model, "-mmproj", "/nonexistent/mmproj.gguf", "-image", img, "-text", prompt}, "/nonexistent/mmproj.gguf"},
		{"projector of another model", []string{"-model", model, "-mmproj", qwenProj, "-image", img, "-text", prompt}, "qwen2vl"},
		{"image rows over the batch", []string{"-model", model, "-mmproj", proj, "-image", img, "-text", prompt, "-batch", "8"}, "give -batch 16 or more"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := run(context.Background(), c.args, io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("%v: error %v, want one mentioning %q", c.args, err, c.errHas)
			}
		})
	}
}
