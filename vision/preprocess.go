package vision

import (
	"fmt"
	"math"

	"github.com/smolgo/smolgo/vision/pixels"
)

// A tile is one picture the encoder takes: W × H pixels, normalized with
// the file's mean and std, three floats a pixel (red, green, blue), row
// after row.
type tile struct {
	W, H int
	x    []float32
}

// normalize turns 8-bit pixels into the encoder's input as mtmd does:
// x/255, then (x - mean) / std per channel, each step rounded to float32.
func (p *params) normalize(img *pixels.RGB) tile {
	t := tile{W: img.W, H: img.H, x: make([]float32, len(img.Pix))}
	for i, v := range img.Pix {
		c := i % 3
		f := float32(v) / 255
		t.x[i] = (f - p.mean[c]) / p.std[c]
	}
	return t
}

// A Chunk is one piece of an image's place in a prompt: text (delimiter
// tokens, written with special tokens) or a run of embedding rows.
type Chunk struct {
	// Text, when not empty, is text to tokenize (special tokens parsed);
	// the chunk has no rows then.
	Text string
	// Rows is the number of embedding rows of an image chunk.
	Rows int
	// Advance is how many positions the chunk moves the sequence on: Rows,
	// but for M-RoPE chunks max(GridW, GridH).
	Advance int
	// GridW and GridH are, for M-RoPE chunks, the grid of the rows (row r
	// at column r % GridW of line r / GridW).
	GridW, GridH int
	// TilePx is the preprocessed picture's size, width and height.
	TilePx [2]int

	tile tile
}

// Image is an image ready for the encoder: its chunks, in prompt order.
type Image struct {
	Chunks []Chunk
	// W, H are the decoded picture's size.
	W, H int
}

// Prepare decodes an image file (pixels.Decode, with a budget of
// maxPixels; 0: pixels.DefaultMaxPixels) and preprocesses it for the
// projector's type, as mtmd does: the chunks it takes in a prompt, the
// image chunks with their normalized pictures. Encode computes each image
// chunk's rows.
func (pr *Projector) Prepare(data []byte, maxPixels int) (*Image, error) {
	img, err := pixels.Decode(data, maxPixels)
	if err != nil {
		return nil, err
	}
	return pr.PreparePixels(img)
}

// PreparePixels is Prepare for a decoded picture.
func (pr *Projector) PreparePixels(img *pixels.RGB) (*Image, error) {
	p := &pr.p
	out := &Image{W: img.W, H: img.H}
	add := func(t tile, rows, adv, gw, gh int) {
		out.Chunks = append(out.Chunks, Chunk{Rows: rows, Advance: adv, GridW: gw, GridH: gh, TilePx: [2]int{t.W, t.H}, tile: t})
	}
	text := func(s string) { out.Chunks = append(out.Chunks, Chunk{Text: s}) }
	switch p.typ {
	case Gemma3:
		r, err := img.Fit(p.imageSize, p.imageSize, p.filter, [3]uint8{})
		if err != nil {
			return nil, err
		}
		n := p.imageSize / p.patch / p.merge
		text("<start_of_image>")
		add(p.normalize(r), n*n, n*n, 0, 0)
		text("<end_of_image>")
	case Idefics3:
		tiles, gx, gy, overview, err := p.idefics3Tiles(img)
		if err != nil {
			return nil, err
		}
		n := p.imageSize / p.patch / p.merge
		rows := n * n
		for y := range gy {
			for x := range gx {
				text(fmt.Sprintf("<fake_token_around_image><row_%d_col_%d>", y+1, x+1))
				add(p.normalize(tiles[y*gx+x]), rows, rows, 0, 0)
			}
			if y != gy-1 {
				text("\n")
			}
		}
		text("\n\n<fake_token_around_image><global-img>")
		add(p.normalize(overview), rows, rows, 0, 0)
		text("<fake_token_around_image>")
	case Qwen2VL, Qwen25VL, Qwen3VL:
		w, h, err := p.qwenSize(img.W, img.H)
		if err != nil {
			return nil, err
		}
		r, err := img.Fit(w, h, p.filter, [3]uint8{})
		if err != nil {
			return nil, err
		}
		gw, gh := w/(p.patch*p.merge), h/(p.patch*p.merge)
		text("<|vision_start|>")
		add(p.normalize(r), gw*gh, max(gw, gh), gw, gh)
		text("<|vision_end|>")
	default:
		return nil, fmt.Errorf("vision: no preprocessing for %s", p.typ)
	}
	return out, nil
}

// idefics3Tiles cuts img as Idefics3's processor does: the longest side
// resized to the preprocessing size (the other in proportion, rounded up
// to even), Lanczos; that resized again to whole tiles; the tiles row by
// row, and the whole resized to one tile as the overview.
func (p *params) idefics3Tiles(img *pixels.RGB) (tiles []*pixels.RGB, gx, gy int, overview *pixels.RGB, err error) {
	T, L := p.imageSize, p.longestEdge
	if L <= 0 {
		L = T
	}
	aspect := float64(img.W) / float64(img.H)
	var w, h int
	if img.W >= img.H {
		w = L
		h = int(float64(L) / aspect)
		h += h % 2
	} else {
		h = L
		w = int(float64(L) * aspect)
		w += w % 2
	}
	w, h = max(w, 1), max(h, 1)
	gx, gy = (w+T-1)/T, (h+T-1)/T
	resized, err := img.Resize(w, h, p.filter)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	refined, err := resized.Resize(gx*T, gy*T, p.filter)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	if overview, err = refined.Resize(T, T, p.filter); err != nil {
		return nil, 0, 0, nil, err
	}
	for y := range gy {
		for x := range gx {
			t, err := refined.Crop(x*T, y*T, T, T)
			if err != nil {
				return nil, 0, 0, nil, err
			}
			tiles = append(tiles, t)
		}
	}
	return tiles, gx, gy, overview, nil
}

// qwenMaxAspect is the largest ratio of an image's sides Qwen-VL takes:
// transformers' smart_resize refuses more. mtmd does not, but past it the
// short side's floor of two patches lets the area grow without bound
// (a 10⁶ × 1 picture would become 10⁶ × 16 px).
const qwenMaxAspect = 200

// qwenSize is the size a Qwen-VL image is resized to (transformers'
// smart_resize, as mtmd computes it in float32): each side rounded to the
// nearest multiple of two patches, then, if the area is outside
// [minPixels, maxPixels], both scaled by the square root of the ratio and
// rounded up (down, for the maximum) to multiples again. An image whose
// sides' ratio is over qwenMaxAspect is refused: within it the area stays
// at most maxPixels.
func (p *params) qwenSize(w, h int) (int, int, error) {
	if w <= 0 || h <= 0 || max(w, h) > qwenMaxAspect*min(w, h) {
		return 0, 0, fmt.Errorf("vision: a %dx%d image has sides in a ratio over %d, which %s does not take", w, h, qwenMaxAspect, p.typ)
	}
	f := p.patch * p.merge
	round := func(x float32) int { return int(math.Round(float64(x/float32(f)))) * f }
	ceil := func(x float32) int { return int(math.Ceil(float64(x/float32(f)))) * f }
	floor := func(x float32) int { return int(math.Floor(float64(x/float32(f)))) * f }
	wb := max(f, round(float32(w)))
	hb := max(f, round(float32(h)))
	switch {
	case p.maxPixels > 0 && wb*hb > p.maxPixels:
		beta := float32(math.Sqrt(float64(float32(h) * float32(w) / float32(p.maxPixels))))
		hb = max(f, floor(float32(h)/beta))
		wb = max(f, floor(float32(w)/beta))
	case p.minPixels > 0 && wb*hb < p.minPixels:
		beta := float32(math.Sqrt(float64(float32(p.minPixels) / (float32(h) * float32(w)))))
		hb = ceil(float32(h) * beta)
		wb = ceil(float32(w) * beta)
	}
	if wb*hb > p.maxPixels {
		return 0, 0, fmt.Errorf("vision: a %dx%d image resizes to %dx%d, over %s's %d pixels", w, h, wb, hb, p.typ, p.maxPixels)
	}
	return wb, hb, nil
}
