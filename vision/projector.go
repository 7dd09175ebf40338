package vision

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/bigmem"
	"github.com/smolgo/smolgo/tensor"
	"github.com/smolgo/smolgo/vision/pixels"
)

// The projector types this package runs (clip.projector_type).
const (
	Gemma3   = "gemma3"           // Gemma 3: SigLIP, average pool, soft-embedding norm, projection
	Idefics3 = "idefics3"         // SmolVLM: SigLIP on tiles, pixel shuffle, projection
	Qwen2VL  = "qwen2vl_merger"   // Qwen2-VL: patch conv pair, 2-D M-RoPE ViT, merger MLP
	Qwen25VL = "qwen2.5vl_merger" // Qwen2.5-VL: as Qwen2-VL with RMSNorm, SwiGLU and window attention
	Qwen3VL  = "qwen3vl_merger"   // Qwen3-VL: as Qwen2-VL with a patch bias, learned positions, GELU and deepstack mergers
)

// Types lists the projector types Open loads.
var Types = []string{Gemma3, Idefics3, Qwen2VL, Qwen25VL, Qwen3VL}

// params are a projector file's hyper-parameters (clip.vision.*), with
// mtmd's defaults for what a type leaves out.
type params struct {
	typ          string
	imageSize    int // the side of a fixed-size image or a tile
	patch        int
	embd, ff     int
	layers       int
	heads        int
	headDim      int
	eps          float32
	projDim      int // the text model's width: what a row is
	mean, std    [3]float32
	merge        int // gemma3's pool, idefics3's shuffle, Qwen's spatial merge (per side)
	longestEdge  int // idefics3: clip.vision.preproc_image_size
	minPixels    int // Qwen: the smallest resized area
	maxPixels    int // Qwen: the largest resized area
	waPattern    int // Qwen2.5: every n-th block attends fully, the others in windows
	window       int // Qwen2.5: the attention window's side in pixels
	filter       pixels.Filter
	gelu, silu   bool // clip.use_gelu, clip.use_silu (neither: quick GELU)
	rmsNorm      bool // the blocks' norms are RMSNorms (Qwen2.5)
	ropeTheta    float32
	patchesPerSd int
	deepstack    []int // Qwen3-VL: the blocks whose output also goes through a deepstack merger, in order
}

// qwen reports whether the type is one of the Qwen-VL family's: patch conv
// pair, 2-D M-RoPE in the ViT, 2 × 2 merger, dynamic size.
func (p *params) qwen() bool { return p.typ == Qwen2VL || p.typ == Qwen25VL || p.typ == Qwen3VL }

// A Projector is a vision encoder with the projection that turns its
// output into rows of the text model's embedding width: what llama.cpp
// calls an mmproj file. It is safe for concurrent use; encodings run one at
// a time on its threads.
type Projector struct {
	p    params
	w    weights
	f    *gguf.File
	pool *tensor.Pool
	mem  []byte // the packed float matrices (outside the Go heap)

	mu  sync.Mutex // one encoding at a time: buf
	buf buffers
}

// Options configure Open.
type Options struct {
	// Threads is the number of threads an encoding uses (0: every core).
	Threads int
	// KeepLayout multiplies by the file's matrices as they are instead of
	// packed copies of the F32 and F16 ones (slower; for tests).
	KeepLayout bool
}

// Open reads a projector (mmproj) GGUF file. The file stays open until
// Close.
func Open(path string, opts Options) (*Projector, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vision: %w", err)
	}
	p, err := Load(f, opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("vision: %s: %w", path, err)
	}
	return p, nil
}

// Load makes a projector of an open file, which it then owns (Close closes
// it). Errors name the key or tensor that is missing or wrong.
func Load(f *gguf.File, opts Options) (*Projector, error) {
	p, err := readParams(f)
	if err != nil {
		return nil, err
	}
	pr := &Projector{p: p, f: f}
	pk := &packer{on: !opts.KeepLayout && tensor.CanPack(gguf.TypeF32)}
	if err := pr.w.load(f, &pr.p, pk); err != nil {
		return nil, err
	}
	if err := pk.finish(f); err != nil {
		return nil, err
	}
	pr.mem = pk.mem
	pr.pool = tensor.NewPool(opts.Threads)
	return pr, nil
}

// Close stops the projector's threads and closes its file.
func (pr *Projector) Close() error {
	pr.pool.Close()
	if pr.mem != nil {
		bigmem.Free(pr.mem)
		pr.mem = nil
	}
	return pr.f.Close()
}

// Type is the projector's clip.projector_type.
func (pr *Projector) Type() string { return pr.p.typ }

// Width is the width of the rows it makes: the text model's embedding
// width (clip.vision.projection_dim), times 1 + the deepstack mergers for
// Qwen3-VL, whose rows carry each deepstack merger's output after the
// main one's (what llama.cpp's qwen3vl text model reads as
// n_embd × (1 + n_deepstack_layers)).
func (pr *Projector) Width() int { return pr.p.projDim * (1 + len(pr.p.deepstack)) }

// ImageSize is the side of the square image (or tile) the encoder takes,
// for the fixed-size and tiled types.
func (pr *Projector) ImageSize() int { return pr.p.imageSize }

// PatchSize is the side in pixels of the square patches the encoder cuts
// a picture into (clip.vision.patch_size).
func (pr *Projector) PatchSize() int { return pr.p.patch }

// Merge is how many patches per side one row gathers after the encoder:
// Gemma 3's average pool, Idefics3's pixel shuffle, Qwen's spatial merge
// (clip.vision.projector.scale_factor or clip.vision.spatial_merge_size).
func (pr *Projector) Merge() int { return pr.p.merge }

// MRoPE reports whether the rows take M-RoPE positions in the text model
// (Qwen's (t, y, x)).
func (pr *Projector) MRoPE() bool { return pr.p.qwen() }

// Bidirectional reports whether an image's rows attend to each other in
// both directions in the text model (Gemma 3).
func (pr *Projector) Bidirectional() bool { return pr.p.typ == Gemma3 }

// TextArchitectures are the text models' general.architecture values the
// projector type feeds.
func (pr *Projector) TextArchitectures() []string {
	switch pr.p.typ {
	case Gemma3:
		return []string{"gemma3"}
	case Idefics3:
		return []string{"llama"}
	case Qwen3VL:
		return []string{"qwen3vl"}
	}
	return []string{"qwen2vl"}
}

func readParams(f *gguf.File) (params, error) {
	var p params
	arch, err := f.Architecture()
	if err != nil {
		return p, err
	}
	if arch != "clip" {
		return p, fmt.Errorf("general.architecture is %q, not a vision projector (\"clip\")", arch)
	}
	if v, err := f.Bool("clip.has_vision_encoder"); err != nil || !v {
		return p, errors.New("the file has no vision encoder (clip.has_vision_encoder)")
	}
	if p.typ, err = f.String("clip.projector_type"); err != nil {
		return p, err
	}
	known := false
	for _, t := range Types {
		known = known || t == p.typ
	}
	if !known {
		return p, fmt.Errorf("projector type %q is not supported (supported: %v)", p.typ, Types)
	}
	u := func(key string, dst *int, required bool, lo, hi int) error {
		v, err := f.Uint32(key)
		if err != nil {
			if _, ok := f.Get(key); !ok && !required {
				return nil
			}
			return err
		}
		if int(v) < lo || int(v) > hi {
			return fmt.Errorf("%s is %d, want %d to %d", key, v, lo, hi)
		}
		*dst = int(v)
		return nil
	}
	const big = 1 << 16
	for _, k := range []struct {
		key string
		dst *int
		lo  int
	}{
		{"clip.vision.image_size", &p.imageSize, 1},
		{"clip.vision.patch_size", &p.patch, 1},
		{"clip.vision.embedding_length", &p.embd, 1},
		{"clip.vision.feed_forward_length", &p.ff, 1},
		{"clip.vision.block_count", &p.layers, 1},
		{"clip.vision.attention.head_count", &p.heads, 1},
		{"clip.vision.projection_dim", &p.projDim, 1},
	} {
		if err := u(k.key, k.dst, true, k.lo, big); err != nil {
			return p, err
		}
	}
	if p.layers > 256 {
		return p, fmt.Errorf("clip.vision.block_count is %d", p.layers)
	}
	if p.embd%p.heads != 0 {
		return p, fmt.Errorf("embedding width %d is not a multiple of the %d heads", p.embd, p.heads)
	}
	p.headDim = p.embd / p.heads
	p.eps = 1e-6
	if _, ok := f.Get("clip.vision.attention.layer_norm_epsilon"); ok {
		if p.eps, err = f.Float32("clip.vision.attention.layer_norm_epsilon"); err != nil {
			return p, err
		}
	}
	if !(p.eps > 0 && p.eps < 1) {
		return p, fmt.Errorf("clip.vision.attention.layer_norm_epsilon is %v", p.eps)
	}
	for _, k := range []struct {
		key string
		dst *[3]float32
	}{{"clip.vision.image_mean", &p.mean}, {"clip.vision.image_std", &p.std}} {
		v, err := f.Float32s(k.key)
		if err != nil {
			return p, err
		}
		if len(v) < 3 {
			return p, fmt.Errorf("%s has %d values, want 3", k.key, len(v))
		}
		copy(k.dst[:], v)
		for _, x := range k.dst {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || (k.key == "clip.vision.image_std" && !(x > 0)) {
				return p, fmt.Errorf("%s holds %v", k.key, *k.dst)
			}
		}
	}
	if v, ok := f.Get("clip.use_gelu"); ok {
		p.gelu, _ = v.(bool)
	}
	if v, ok := f.Get("clip.use_silu"); ok {
		p.silu, _ = v.(bool)
	}
	if p.gelu && p.silu {
		return p, errors.New("clip.use_gelu and clip.use_silu are both set")
	}
	if side := p.imageSize / p.patch; !p.qwen() && side*side > maxPatches {
		return p, fmt.Errorf("clip.vision.image_size %d with patch_size %d is %d patches a tile, over the %d an encoding takes", p.imageSize, p.patch, side*side, maxPatches)
	}
	switch p.typ {
	case Gemma3:
		p.merge, p.filter = 4, pixels.Bilinear
		if err := u("clip.vision.projector.scale_factor", &p.merge, false, 1, big); err != nil {
			return p, err
		}
		side := p.imageSize / p.patch
		if p.imageSize%p.patch != 0 || side%p.merge != 0 {
			return p, fmt.Errorf("gemma3: image size %d, patch %d and pool %d do not divide", p.imageSize, p.patch, p.merge)
		}
	case Idefics3:
		p.merge, p.filter = 1, pixels.Lanczos
		if err := u("clip.vision.projector.scale_factor", &p.merge, false, 1, big); err != nil {
			return p, err
		}
		if err := u("clip.vision.preproc_image_size", &p.longestEdge, false, 1, big); err != nil {
			return p, err
		}
		if p.merge < 2 || p.imageSize%p.patch != 0 || (p.imageSize/p.patch)%p.merge != 0 {
			return p, fmt.Errorf("idefics3: image size %d, patch %d and scale factor %d do not divide", p.imageSize, p.patch, p.merge)
		}
	case Qwen2VL, Qwen25VL, Qwen3VL:
		p.merge, p.filter = 2, pixels.Bicubic
		if err := u("clip.vision.spatial_merge_size", &p.merge, false, 2, 2); err != nil {
			return p, err
		}
		if p.typ == Qwen25VL {
			if err := u("clip.vision.n_wa_pattern", &p.waPattern, true, 0, big); err != nil {
				return p, err
			}
			p.rmsNorm = true
			p.window = 112 // mtmd's, whatever the file says
			if p.waPattern > 0 && p.window < p.patch*p.merge {
				return p, fmt.Errorf("%s: a window of %d px is less than one merged patch (%d px)", p.typ, p.window, p.patch*p.merge)
			}
		}
		if p.headDim%4 != 0 {
			return p, fmt.Errorf("%s: head size %d is not a multiple of 4 (2-D M-RoPE)", p.typ, p.headDim)
		}
		area := p.patch * p.patch * p.merge * p.merge
		p.minPixels, p.maxPixels = 8*area, 4096*area
		p.ropeTheta = 10000
	}
	return p, nil
}
