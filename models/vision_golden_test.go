package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/vision"
)

// visionRuns are golden-vision's projectors with their text models.
var visionRuns = []struct{ proj, text string }{
	{"gemma3", "gemma3-text-F32"},
	{"idefics3", "idefics3-text-F32"},
	{"qwen2vl", "qwen2vl-text-F32"},
	{"qwen25vl", "qwen2vl-text-F32"},
}

// visionPrompt is golden-vision's prompt for a projector's runs.
func visionPrompt(proj string) string {
	switch proj {
	case "gemma3":
		return "Look: <__media__> What is it?"
	case "idefics3":
		return "User:<__media__>Describe it."
	}
	return "Q: <__media__> A:"
}

// visionTolerance is golden/README.md's rule on golden-vision's
// selfcheck.json logits: twice llama.cpp's worst difference with itself
// over a projector's runs, rounded up to one significant digit.
func visionTolerance(t *testing.T, proj string) goldentest.Tolerance {
	return goldentest.VisionTolerance(t, proj)
}

// visionChunks are the chunk layout of a golden-vision logits file.
type visionChunks struct {
	Prompts []struct {
		Chunks []visionChunk `json:"chunks"`
	} `json:"prompts"`
}

// visionChunk is a chunk of a golden-vision logits file's layout (the
// part goldentest does not read): where it starts and, for an M-RoPE image
// chunk, its rows' (t, y, x) positions.
type visionChunk struct {
	Type     string     `json:"type"`
	Pos0     int        `json:"pos0"`
	MropePos [][3]int32 `json:"mrope_pos"`
}

// visionLogitsDiff runs prompt with image im (encoded by pr) through the
// text model at textPath as mtmd-logits does (each chunk in one step: text
// as tokens, an image chunk as its embedding rows, Gemma 3's attending both
// ways), checks the layout (tokens, -1 for image rows; chunk positions)
// against p and chunks exactly, and returns the difference of every
// prefill row's logits, then the teacher-forced decode steps', from p's.
func visionLogitsDiff(t *testing.T, pr *vision.Projector, im *vision.Image, textPath, prompt string, p goldentest.Prompt, chunks []visionChunk) goldentest.Diff {
	t.Helper()
	rows := make([][]float32, len(im.Chunks))
	for k, c := range im.Chunks {
		if c.Rows == 0 {
			continue
		}
		rows[k] = make([]float32, c.Rows*pr.Width())
		if err := pr.Encode(context.Background(), im, k, rows[k]); err != nil {
			t.Fatal(err)
		}
	}
	m, err := engine.Open(textPath, engine.WithThreads(2), engine.WithBatchSize(512))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok, err := m.Format().Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	segs, err := vision.Split(prompt, vision.Marker, []*vision.Image{im}, func(text string, _, _ bool) []int32 { return tok.Encode(text, true) })
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for _, s := range segs {
		if s.Image != nil {
			for range s.Rows() {
				ids = append(ids, -1)
			}
			continue
		}
		ids = append(ids, s.Tokens...)
	}
	if !slices.Equal(ids, p.Tokens) {
		t.Fatalf("layout %v\n  mtmd %v", ids, p.Tokens)
	}
	b := m.Backend()
	emb, ok := b.(backend.Embedder)
	if !ok {
		t.Fatal("the text model's backend takes no embedding rows")
	}
	c, err := b.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	V := b.Vocab()
	var d goldentest.Diff
	row, pos := 0, 0 // the prompt row, and the next position
	ci := 0          // golden chunk index
	for _, s := range segs {
		n := s.Rows()
		seq := backend.Seq{Cache: c, Tokens: s.Tokens, Logits: make([]float32, n*V)}
		ch := chunks[ci]
		if ch.Pos0 != pos {
			t.Fatalf("chunk %d starts at position %d, mtmd %d", ci, pos, ch.Pos0)
		}
		if s.Image != nil {
			cc := s.Image.Chunks[s.Chunk]
			seq.Tokens = make([]int32, n)
			seq.Embeds = rows[s.Chunk]
			seq.Bidirectional = pr.Bidirectional()
			if emb.MRoPE() {
				seq.Pos = vision.MRoPEPositions(cc, pos)
				for r, q := range seq.Pos {
					if w := ch.MropePos[r]; q != (backend.Position{T: w[0], Y: w[1], X: w[2]}) {
						t.Fatalf("image row %d at %v, mtmd %v", r, q, w)
					}
				}
			}
			pos += cc.Advance
		} else {
			if emb.MRoPE() {
				seq.Pos = vision.TextPositions(pos, n)
			}
			pos += n
		}
		if err := b.Step(context.Background(), []backend.Seq{seq}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			d.Add(fmt.Sprintf("prefill row %d", row+i), seq.Logits[i*V:(i+1)*V], p.Prefill[row+i].Logits)
		}
		row += n
		ci++
	}
	for k, r := range p.Decode {
		seq := backend.Seq{Cache: c, Tokens: []int32{r.Token}, Logits: make([]float32, V)}
		if emb.MRoPE() {
			seq.Pos = vision.TextPositions(pos, 1)
		}
		if err := b.Step(context.Background(), []backend.Seq{seq}); err != nil {
			t.Fatal(err)
		}
		pos++
		d.Add(fmt.Sprintf("decode step %d", k), seq.Logits, r.Logits)
	}
	return d
}

// TestVisionGoldenLogits runs golden-vision's prompts with their images
// through the text models as mtmd-logits does (each chunk in one step: text
// as tokens, an image chunk as its embedding rows, Gemma 3's attending both
// ways) and compares the layout (tokens, -1 for image rows) exactly and
// every prefill row's logits, then the teacher-forced decode steps, with
// llama.cpp's.
func TestVisionGoldenLogits(t *testing.T) {
	for _, run := range visionRuns {
		for _, img := range []string{"gradient-64x64.png", "checker-96x48.ppm", "noise-37x53.png"} {
			name := run.proj + "-" + img[:strings.IndexByte(img, '.')]
			t.Run(name, func(t *testing.T) {
				pr, err := vision.Open(sharedtest.Path(t, "golden-vision/models/mmproj-"+run.proj+"-F32.gguf"), vision.Options{Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				defer pr.Close()
				data, err := os.ReadFile(sharedtest.Path(t, "golden-vision/images/"+img))
				if err != nil {
					t.Fatal(err)
				}
				im, err := pr.Prepare(data, 0)
				if err != nil {
					t.Fatal(err)
				}
				g := goldentest.Load(t, "golden-vision/logits/"+name+".json.gz")
				var gc visionChunks
				if err := json.Unmarshal(sharedtest.ReadGzip(t, "golden-vision/logits/"+name+".json.gz"), &gc); err != nil {
					t.Fatal(err)
				}
				d := visionLogitsDiff(t, pr, im, sharedtest.Path(t, "golden-vision/models/"+run.text+".gguf"), visionPrompt(run.proj), g.Prompts[0], gc.Prompts[0].Chunks)
				tol := visionTolerance(t, run.proj)
				t.Logf("%s: max |Δ| %.3g (tolerance %g), RMS %.3g (tolerance %g) over %d logits", name, d.MaxAbs, tol.MaxAbs, d.RMS(), tol.RMS, d.N)
				if d.MaxAbs > tol.MaxAbs || d.RMS() > tol.RMS {
					t.Errorf("%s: max |Δ| %.3g / RMS %.3g exceed %g / %g (worst at %s)", name, d.MaxAbs, d.RMS(), tol.MaxAbs, tol.RMS, d.Worst)
				}
			})
		}
	}
}

// rawTemplate renders a conversation's first message as it is, so that the
// engine's prompt is golden-vision's prompt text exactly.
const rawTemplate = "{{ messages[0]['content'] }}"

// TestVisionEngineGolden runs golden-vision's prompts through the engine:
// a model opened with its projector (engine.WithProjector), a message with
// the image and its marker, rendered by a template that writes the message
// as it is. The prompt's last logits and the greedy answer must be
// llama.cpp's; asking again with a longer conversation about the same
// image reuses its rows from the session's cache (nothing encoded again).
func TestVisionEngineGolden(t *testing.T) {
	for _, run := range visionRuns {
		name := run.proj + "-checker-96x48"
		t.Run(name, func(t *testing.T) {
			g := goldentest.Load(t, "golden-vision/logits/"+name+".json.gz")
			m, err := engine.Open(sharedtest.Path(t, "golden-vision/models/"+run.text+".gguf"), engine.WithThreads(2),
				engine.WithProjector(sharedtest.Path(t, "golden-vision/models/mmproj-"+run.proj+"-F32.gguf")),
				engine.WithChatTemplate(rawTemplate))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if !m.TakesImages() {
				t.Fatal("TakesImages is false with a projector")
			}
			data, err := os.ReadFile(sharedtest.Path(t, "golden-vision/images/checker-96x48.ppm"))
			if err != nil {
				t.Fatal(err)
			}
			prompt := visionPrompt(run.proj)
			s := m.NewSession()
			msgs := []engine.Message{{Role: "user", Content: prompt, Images: []engine.Image{{Data: data}}}}
			var tokens []int32
			var st engine.Stats
			for ev, err := range s.Generate(context.Background(), msgs, engine.GenerateOptions{MaxTokens: len(g.Prompts[0].Decode) + 1, Logprobs: true}) {
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
			p := g.Prompts[0]
			if st.PromptTokens != len(p.Tokens) {
				t.Fatalf("prompt of %d rows, mtmd %d", st.PromptTokens, len(p.Tokens))
			}
			tol := visionTolerance(t, run.proj)
			var d goldentest.Diff
			d.Add("the prompt's last row", s.PromptLogits(), p.Prefill[len(p.Prefill)-1].Logits)
			if d.MaxAbs > tol.MaxAbs {
				t.Errorf("prompt logits: max |Δ| %.3g > %g (%s)", d.MaxAbs, tol.MaxAbs, d.Worst)
			}
			want := []int32{int32(p.Prefill[len(p.Prefill)-1].Argmax)}
			for _, r := range p.Decode[:len(p.Decode)-1] {
				want = append(want, int32(r.Argmax))
			}
			if n := min(len(tokens), len(want)); !slices.Equal(tokens[:n], want[:n]) || n == 0 {
				t.Errorf("greedy answer %v, llama.cpp %v", tokens, want)
			}
			t.Logf("%s: %d prompt rows (%d image rows encoded), last-row max |Δ| %.3g, answer %v", name, st.PromptTokens, st.ImageRows, d.MaxAbs, tokens)
			// The same image again, the conversation longer: its rows come
			// from the session's cache.
			msgs[0].Content += " Tell me."
			for ev, err := range s.Generate(context.Background(), msgs, engine.GenerateOptions{MaxTokens: 2}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Stats != nil {
					st = *ev.Stats
				}
			}
			if st.ImageRows != 0 || st.CachedTokens < len(p.Tokens)-len("What is it?") {
				t.Errorf("second turn: %d image rows encoded again, %d of %d rows cached", st.ImageRows, st.CachedTokens, st.PromptTokens)
			}
		})
	}
}

// TestVisionUnknownProjector: a projector of a type the package does not
// run (here golden-vision's Qwen2-VL file calling itself GLM-4.1V's) is
// refused when the model opens, naming its type, not at a chat's first
// image; the text model alone opens.
func TestVisionUnknownProjector(t *testing.T) {
	src, err := gguf.Open(sharedtest.Path(t, "golden-vision/models/mmproj-qwen2vl-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	kv := slices.Clone(src.KV)
	for i := range kv {
		if kv[i].Key == "clip.projector_type" {
			kv[i].Value = "glm4v"
		}
	}
	var tensors []gguf.WriterTensor
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		tensors = append(tensors, gguf.WriterTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: src.TensorData(ti)})
	}
	path := filepath.Join(t.TempDir(), "mmproj-glm4v.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(f, kv, tensors); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	text := sharedtest.Path(t, "golden-vision/models/qwen2vl-text-F32.gguf")
	m, err := engine.Open(text, engine.WithThreads(2), engine.WithProjector(path))
	if err == nil {
		m.Close()
		t.Fatal("opened with a projector of an unknown type")
	}
	if !strings.Contains(err.Error(), `"glm4v" is not supported`) {
		t.Fatalf("error %q does not name the projector type", err)
	}
	m, err = engine.Open(text, engine.WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}
