package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/vision"
)

// ImageOutput is the JSON document printed for a prompt with images: the
// schema of llamaref mtmd-logits (../shared/tools/llamaref), with the
// header fields smolgo knows.
type ImageOutput struct {
	Engine         string      `json:"engine"` // "smolgo"
	MMProj         string      `json:"mmproj"` // the files' base names
	Model          string      `json:"model"`
	ProjectorType  string      `json:"projector_type"`
	ImageSize      int         `json:"image_size"`
	PatchSize      int         `json:"patch_size"`
	Merge          int         `json:"merge"`
	Images         []ImageDims `json:"images"`
	Prompt         string      `json:"prompt"`
	NEmbd          int         `json:"n_embd"`
	Threads        int         `json:"threads,omitempty"`
	NonCausalImage bool        `json:"non_causal_image"` // an image's rows attend both ways (Gemma 3)
	MRoPE          bool        `json:"mrope"`
	NVocab         int         `json:"n_vocab"`
	KVType         string      `json:"kv_type"`
	Mode           string      `json:"mode"` // "greedy"
	Chunks         []ChunkInfo `json:"chunks"`
	// Tokens are the prompt's rows as the text model reads them: token
	// ids, -1 for an image row.
	Tokens  []int32    `json:"tokens"`
	Prefill []ImageRow `json:"prefill"`
	Decode  []ImageRow `json:"decode"`
}

// ImageDims is a decoded image's size.
type ImageDims struct {
	NX int `json:"nx"`
	NY int `json:"ny"`
}

// ChunkInfo is one chunk of the prompt's layout, as mtmd_tokenize cuts it:
// a text run with its tokens, or an image chunk's rows.
type ChunkInfo struct {
	Pos0   int     `json:"pos0"` // the position the chunk starts at
	Type   string  `json:"type"` // "text" or "image"
	Tokens []int32 `json:"tokens,omitempty"`
	// NTokens is an image chunk's row count, NPos the positions it moves
	// the sequence on, Grid its rows' grid (mtmd's: [rows, 1] without
	// M-RoPE), TilePx the preprocessed picture's size.
	NTokens int     `json:"n_tokens,omitempty"`
	NPos    int     `json:"n_pos,omitempty"`
	Grid    *[2]int `json:"grid,omitempty"`
	TilePx  *[2]int `json:"tile_px,omitempty"`
	// MRoPEPos are, for an M-RoPE image chunk, each row's (t, y, x).
	MRoPEPos [][3]int32 `json:"mrope_pos,omitempty"`
}

// ImageRow is one row of logits: its position (the chunk's pos0 plus the
// row's index in it; an M-RoPE image row's real position is in
// mrope_pos), the token fed (-1 for an image row), the argmax and its
// margin over the runner-up, and the logits or the top K pairs.
type ImageRow struct {
	Pos    int          `json:"pos"`
	Token  int32        `json:"token"`
	Argmax int          `json:"argmax"`
	Margin float64      `json:"margin"`
	Logits []float32    `json:"logits,omitempty"`
	Top    [][2]float32 `json:"top,omitempty"`
}

// imageRun is what runImages needs of the command line.
type imageRun struct {
	model, mmproj, prompt string
	images                []string // files, one per marker
	all                   bool
	top, decode, threads  int
	batch                 int
	kv                    string
}

// checkImageFlags checks -image and -mmproj against -text and -tokenize
// before anything is loaded, and returns the image files (nil without
// -image): both flags or neither, a -text prompt with one marker per
// image.
func checkImageFlags(images, mmproj, text string, tokenize bool) ([]string, error) {
	switch {
	case images == "" && mmproj == "":
		return nil, nil
	case mmproj == "":
		return nil, errors.New("-image needs -mmproj (the vision projector GGUF, llama.cpp's mmproj file)")
	case images == "":
		return nil, errors.New("-mmproj needs -image (the image files)")
	case text == "":
		return nil, fmt.Errorf("-image needs -text, the prompt with a %s marker where each image goes", vision.Marker)
	case tokenize:
		return nil, errors.New("-tokenize does not take -image (it prints only the ids of a text prompt)")
	}
	files := strings.Split(images, ",")
	for i, f := range files {
		if f == "" {
			return nil, fmt.Errorf("-image %q: image %d has no file name", images, i+1)
		}
	}
	if n := strings.Count(text, vision.Marker); n != len(files) {
		return nil, fmt.Errorf("-text has %d %s markers for %d images (-image): give one marker per image", n, vision.Marker, len(files))
	}
	return files, nil
}

// runImages runs a prompt with images as llamaref mtmd-logits does: the
// text model with its projector, the prompt cut into chunks at its
// markers (vision.Split), each chunk in one step (text as tokens, an image
// chunk as its embedding rows, attending both ways for Gemma 3, at M-RoPE
// positions for Qwen), then greedy decode steps.
func runImages(ctx context.Context, r imageRun, stdout io.Writer, log *slog.Logger) error {
	data := make([][]byte, len(r.images))
	for i, f := range r.images {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("-image: %w", err)
		}
		data[i] = b
	}
	em, err := engine.Open(r.model, engine.WithProjector(r.mmproj), engine.WithThreads(r.threads), engine.WithKVType(r.kv),
		engine.WithBatchSize(r.batch), engine.WithLogger(log))
	if err != nil {
		return err
	}
	defer em.Close()
	parts, ok := family.Of(em)
	if !ok {
		return fmt.Errorf("%s: not a llama family's model", r.model)
	}
	pr, ok := vision.Of(em.Projector())
	if !ok {
		return fmt.Errorf("%s: not a projector of package vision", r.mmproj)
	}
	tok, err := parts.Tokenizer()
	if err != nil {
		return err
	}
	out := ImageOutput{Engine: "smolgo", MMProj: filepath.Base(r.mmproj), Model: filepath.Base(r.model),
		ProjectorType: pr.Type(), ImageSize: pr.ImageSize(), PatchSize: pr.PatchSize(), Merge: pr.Merge(), Prompt: r.prompt, NEmbd: pr.Width(),
		NonCausalImage: pr.Bidirectional(), MRoPE: pr.MRoPE(), KVType: r.kv, Mode: "greedy"}
	if cpu := parts.CPU(); cpu != nil {
		out.Threads = cpu.Threads()
	}
	imgs := make([]*vision.Image, len(data))
	for i, b := range data {
		if imgs[i], err = pr.Prepare(b, 0); err != nil {
			return fmt.Errorf("-image %s: %w", r.images[i], err)
		}
		out.Images = append(out.Images, ImageDims{NX: imgs[i].W, NY: imgs[i].H})
	}
	// As mtmd_tokenize with add_special: BOS before the prompt and EOS
	// after it where the vocabulary asks (as -text does for a text prompt).
	bos, hasBOS := tok.BOS()
	segs, err := vision.Split(r.prompt, vision.Marker, imgs, func(text string, first, _ bool) []int32 {
		ids := tok.Encode(text, true)
		if first && hasBOS && tok.AddBOS() {
			ids = append([]int32{bos}, ids...)
		}
		return ids
	})
	if err != nil {
		return err
	}
	if eos, ok := tok.EOS(); ok && tok.AddEOS() {
		if n := len(segs); n > 0 && segs[n-1].Image == nil {
			segs[n-1].Tokens = append(segs[n-1].Tokens, eos)
		} else {
			segs = append(segs, vision.Segment{Tokens: []int32{eos}})
		}
	}

	b := em.Backend()
	V := b.Vocab()
	out.NVocab = V
	cache, err := b.NewCache()
	if err != nil {
		return err
	}
	defer cache.Close()
	row := func(pos int, token int32, logits []float32) ImageRow {
		a, margin := top2(logits)
		r2 := ImageRow{Pos: pos, Token: token, Argmax: a, Margin: margin}
		if r.top > 0 {
			r2.Top = topK(logits, r.top)
		} else {
			r2.Logits = append([]float32(nil), logits...)
		}
		return r2
	}
	var rows []float32
	last := make([]float32, V)
	pos := 0 // where the next segment starts
	start := time.Now()
	for si, s := range segs {
		n := s.Rows()
		seq := backend.Seq{Cache: cache, Tokens: s.Tokens}
		ci := ChunkInfo{Pos0: pos, Type: "text", Tokens: s.Tokens}
		if r.all {
			seq.Logits = make([]float32, n*V)
		} else if si == len(segs)-1 {
			seq.Logits = make([]float32, V)
		}
		if out.MRoPE {
			seq.Pos = s.Positions(pos)
		}
		if s.Image != nil {
			c := s.Image.Chunks[s.Chunk]
			ci = ChunkInfo{Pos0: pos, Type: "image", NTokens: c.Rows, NPos: c.Advance, Grid: &[2]int{c.Rows, 1}, TilePx: &c.TilePx}
			if out.MRoPE {
				ci.Grid = &[2]int{c.GridW, c.GridH}
				for _, p := range seq.Pos {
					ci.MRoPEPos = append(ci.MRoPEPos, [3]int32{p.T, p.Y, p.X})
				}
			}
			rows = slices.Grow(rows[:0], n*pr.Width())[:n*pr.Width()]
			if err := pr.Encode(ctx, s.Image, s.Chunk, rows); err != nil {
				return fmt.Errorf("encoding image chunk at position %d: %w", pos, err)
			}
			seq.Tokens = make([]int32, n) // only counted: the rows are the inputs
			seq.Embeds = rows
			seq.Bidirectional = pr.Bidirectional()
			if seq.Bidirectional && n > r.batch {
				return fmt.Errorf("-batch %d: an image chunk of %d rows attending both ways must run in one step; give -batch %d or more (or 0)", r.batch, n, n)
			}
		}
		if err := b.Step(ctx, []backend.Seq{seq}); err != nil {
			return fmt.Errorf("%s chunk at position %d: %w", ci.Type, pos, err)
		}
		out.Chunks = append(out.Chunks, ci)
		for i := range n {
			id := int32(-1)
			if s.Image == nil {
				id = s.Tokens[i]
			}
			out.Tokens = append(out.Tokens, id)
			if k := i - (n - len(seq.Logits)/V); k >= 0 {
				lg := seq.Logits[k*V : (k+1)*V]
				out.Prefill = append(out.Prefill, row(pos+i, id, lg))
				copy(last, lg)
			}
		}
		pos += s.Advance()
	}
	log.Info("prefill", "rows", len(out.Tokens), "chunks", len(segs), "seconds", time.Since(start).Seconds())
	out.Decode = []ImageRow{}
	logits := make([]float32, V)
	for k := range r.decode {
		tok := int32(argmax(last))
		seq := backend.Seq{Cache: cache, Tokens: []int32{tok}, Logits: logits}
		if out.MRoPE {
			seq.Pos = vision.TextPositions(pos, 1)
		}
		if err := b.Step(ctx, []backend.Seq{seq}); err != nil {
			return fmt.Errorf("decode step %d: %w", k, err)
		}
		out.Decode = append(out.Decode, row(pos, tok, logits))
		copy(last, logits)
		pos++
	}
	return json.NewEncoder(stdout).Encode(out)
}

// top2 returns the argmax of x (ties to the lowest id) and its margin over
// the runner-up, as llamaref computes them (in float64).
func top2(x []float32) (int, float64) {
	a := argmax(x)
	second := math.Inf(-1)
	for i, v := range x {
		if i != a && float64(v) > second {
			second = float64(v)
		}
	}
	if len(x) < 2 {
		return a, 0
	}
	return a, float64(x[a]) - second
}
