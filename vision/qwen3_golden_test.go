package vision

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/smolgo/smolgo/internal/goldentest"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

// qwen3Embed is testdata/qwen3vl-embed-tiny.json.gz: llama.cpp mtmd's
// embedding rows of golden-vision's images by synth's tiny qwen3vl_merger
// projector (internal/synth/cmd/qwen3vl/golden.sh).
type qwen3Embed struct {
	MmprojSHA256 string     `json:"mmproj_sha256"`
	Selfcheck    [2]float64 `json:"selfcheck"` // haswell against sandybridge: max |Δ|, RMS
	Runs         []struct {
		Image  string `json:"image"`
		NEmbd  int    `json:"n_embd"`
		Chunks []struct {
			Type       string      `json:"type"`
			Tokens     []int32     `json:"tokens"`
			NTokens    int         `json:"n_tokens"`
			NPos       int         `json:"n_pos"`
			Grid       [2]int      `json:"grid"`
			TilePx     [2]int      `json:"tile_px"`
			Embeddings [][]float32 `json:"embeddings"`
		} `json:"chunks"`
	} `json:"runs"`
}

func readQwen3Embed(t *testing.T) *qwen3Embed {
	t.Helper()
	var g qwen3Embed
	goldentest.ReadJSONGz(t, "testdata/qwen3vl-embed-tiny.json.gz", &g)
	return &g
}

// writeQwen3Mmproj writes synth's tiny qwen3vl_merger projector and checks
// that it is the file the reference was made with.
func writeQwen3Mmproj(t *testing.T, want string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := synth.WriteQwen3VLMmproj(&buf, synth.Qwen3VLMmprojTiny()); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(buf.Bytes()); hex.EncodeToString(sum[:]) != want {
		t.Fatalf("synth's projector has SHA-256 %x, the reference was made with %s (run internal/synth/cmd/qwen3vl/golden.sh)", sum, want)
	}
	path := filepath.Join(t.TempDir(), "mmproj-qwen3vl-F32.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestQwen3VLGoldenEmbeddings encodes golden-vision's images with the tiny
// Qwen3-VL projector (learned positions interpolated to three grids and
// taken as they are for the 8 × 8 one, two deepstack mergers) and compares
// the chunks with mtmd's: the layout exactly, every value of the rows
// (main and deepstack slices) within twice llama.cpp's difference with
// itself, rounded up to one significant digit; with the matrices packed
// and as the file lays them out (q, k and v then three views of attn_qkv).
func TestQwen3VLGoldenEmbeddings(t *testing.T) {
	g := readQwen3Embed(t)
	path := writeQwen3Mmproj(t, g.MmprojSHA256)
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "packed", true: "file layout"}[keep], func(t *testing.T) {
			checkQwen3Embed(t, g, path, Options{Threads: 2, KeepLayout: keep})
		})
	}
}

// checkQwen3Embed compares the projector at path, opened with opts, with
// the reference g.
func checkQwen3Embed(t *testing.T, g *qwen3Embed, path string, opts Options) {
	t.Helper()
	pr, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if pr.Type() != Qwen3VL || len(pr.p.deepstack) != 2 || pr.Width() != 3*256 || !pr.MRoPE() {
		t.Fatalf("type %s, deepstack %v, width %d, M-RoPE %v", pr.Type(), pr.p.deepstack, pr.Width(), pr.MRoPE())
	}
	tolMax, tolRMS := roundUp1(2*g.Selfcheck[0]), roundUp1(2*g.Selfcheck[1])
	var worst, sumSq float64
	var count int
	var where string
	for _, run := range g.Runs {
		if run.NEmbd != pr.Width() {
			t.Fatalf("%s: mtmd's rows are %d wide, ours %d", run.Image, run.NEmbd, pr.Width())
		}
		data, err := os.ReadFile(sharedtest.Path(t, "golden-vision/images/"+run.Image))
		if err != nil {
			t.Fatal(err)
		}
		im, err := pr.Prepare(data, 0)
		if err != nil {
			t.Fatalf("%s: %v", run.Image, err)
		}
		if len(im.Chunks) != len(run.Chunks) {
			t.Fatalf("%s: %d chunks, mtmd %d", run.Image, len(im.Chunks), len(run.Chunks))
		}
		for i, c := range im.Chunks {
			gc := run.Chunks[i]
			if (c.Rows > 0) != (gc.Type == "image") {
				t.Fatalf("%s chunk %d: %d rows, mtmd's is %s", run.Image, i, c.Rows, gc.Type)
			}
			if c.Rows == 0 {
				continue
			}
			if c.Rows != gc.NTokens || c.Advance != gc.NPos || c.TilePx != gc.TilePx || [2]int{c.GridW, c.GridH} != gc.Grid {
				t.Fatalf("%s chunk %d: %d rows advancing %d, grid %dx%d, %v px; mtmd %d rows advancing %d, grid %v, %v px",
					run.Image, i, c.Rows, c.Advance, c.GridW, c.GridH, c.TilePx, gc.NTokens, gc.NPos, gc.Grid, gc.TilePx)
			}
			W := pr.Width()
			rows := make([]float32, c.Rows*W)
			if err := pr.Encode(context.Background(), im, i, rows); err != nil {
				t.Fatal(err)
			}
			for r, want := range gc.Embeddings {
				for j, w := range want {
					d := math.Abs(float64(rows[r*W+j]) - float64(w))
					if math.IsNaN(d) {
						d = math.Inf(1)
					}
					if d > worst {
						worst, where = d, fmt.Sprintf("%s row %d value %d (slice %d; got %v, want %v)", run.Image, r, j, j/256, rows[r*W+j], w)
					}
					sumSq += d * d
					count++
				}
			}
		}
	}
	rms := math.Sqrt(sumSq / float64(count))
	t.Logf("max |Δ| %.3g (tolerance %g), RMS %.3g (tolerance %g) over %d values; worst at %s", worst, tolMax, rms, tolRMS, count, where)
	if worst > tolMax || rms > tolRMS {
		t.Errorf("max |Δ| %.3g / RMS %.3g exceed %g / %g (worst at %s)", worst, rms, tolMax, tolRMS, where)
	}
}
