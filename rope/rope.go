package rope

import (
	"fmt"
	"math"
)

// Layout says which dimensions of a head are rotated together.
type Layout int

const (
	// Norm rotates adjacent pairs (x[2i], x[2i+1]). This is llama.cpp's
	// LLAMA_ROPE_TYPE_NORM, used by the llama and smollm3 architectures
	// (their GGUF converters permute the q/k rows to make it match Hugging
	// Face's rotate-half).
	Norm Layout = iota
	// NeoX rotates the two halves against each other: (x[i], x[i+Dims/2]).
	NeoX
)

func (l Layout) String() string {
	switch l {
	case Norm:
		return "norm"
	case NeoX:
		return "neox"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Scaling is a context-extension method.
type Scaling int

const (
	// None: plain RoPE.
	None Scaling = iota
	// Linear divides every angle by Factor (position interpolation).
	Linear
	// YaRN interpolates the low frequencies by Factor, keeps the high ones,
	// ramps in between and scales cos and sin by 1 + 0.1·ln(Factor).
	YaRN
)

func (s Scaling) String() string {
	switch s {
	case None:
		return "none"
	case Linear:
		return "linear"
	case YaRN:
		return "yarn"
	}
	return fmt.Sprintf("Scaling(%d)", int(s))
}

// ParseScaling maps a GGUF rope.scaling.type value ("none", "linear",
// "yarn") to a Scaling. An empty string means None.
func ParseScaling(s string) (Scaling, error) {
	switch s {
	case "", "none":
		return None, nil
	case "linear":
		return Linear, nil
	case "yarn":
		return YaRN, nil
	}
	return None, fmt.Errorf("rope: unsupported scaling type %q (want none, linear or yarn)", s)
}

// Config describes the rotation applied to one attention head.
//
// The zero values of the optional fields mean llama.cpp's defaults; call
// Validate (or NewConfig-style constructors in higher packages) before use.
type Config struct {
	Dims   int     // rotated dimensions per head (rope.dimension_count), even
	Base   float32 // rope.freq_base, e.g. 10000
	Layout Layout

	Scaling     Scaling
	Factor      float32 // rope.scaling.factor; freq_scale = 1/Factor (Linear, YaRN)
	OrigContext int     // rope.scaling.original_context_length (YaRN)
	// YaRN knobs; zero means llama.cpp's defaults: ExtFactor 1,
	// AttnFactor 1, BetaFast 32, BetaSlow 1.
	ExtFactor  float32
	AttnFactor float32
	BetaFast   float32
	BetaSlow   float32

	// Factors, when not nil, divide the angle of each rotated pair (Dims/2
	// of them): pair i turns by θ_i/Factors[i] (before any scaling). This is
	// Llama 3's per-frequency scaling, stored in GGUF files as
	// rope_freqs.weight and passed to ggml's rope as its freq_factors.
	Factors []float32

	// Sections, when one of them is positive, makes the rotation
	// multimodal RoPE (M-RoPE: Qwen2-VL, Qwen3-VL, Qwen3.5;
	// rope.dimension_sections): each rotated pair belongs to one of four
	// position components, temporal, height, width and an extra one, and
	// turns by the angle of that component's position. Pair i belongs by
	// its sector i mod (the sections' sum): in order, the first
	// Sections[0] sectors temporal, the next Sections[1] height, then
	// Sections[2] width, the rest extra; with Interleaved (Qwen3-VL's and
	// Qwen3.5's layout, llama.cpp's IMROPE) sector s is temporal, height or
	// width by s mod 3 (0, 1, 2) while s < 3·Sections[0], 3·Sections[1],
	// 3·Sections[2] respectively, and extra otherwise.
	//
	// A text token's position gives the first three components its
	// position and the extra one position 0, as llama.cpp fills them for
	// text: so a pair of the extra component does not turn at all, and the
	// others turn as plain RoPE's pairs do. The pairing of the halves is
	// Layout's (llama.cpp rotates M-RoPE as NeoX). An image row has
	// distinct temporal, height and width positions (AnglesAt); with the
	// three equal its angles are Angles' exactly.
	Sections    [4]int
	Interleaved bool
}

// MRoPE reports whether the rotation has M-RoPE sections (its rows take
// three positions: AnglesAt).
func (c Config) MRoPE() bool { return c.mrope() }

// Validate checks the configuration and reports the first problem found.
func (c Config) Validate() error {
	switch {
	case c.Dims <= 0 || c.Dims%2 != 0:
		return fmt.Errorf("rope: dimension count %d must be positive and even", c.Dims)
	case !(c.Base > 1) || math.IsInf(float64(c.Base), 0):
		return fmt.Errorf("rope: frequency base %v must be a finite number above 1", c.Base)
	case c.Layout != Norm && c.Layout != NeoX:
		return fmt.Errorf("rope: unknown layout %v", c.Layout)
	case c.Factors != nil && len(c.Factors) != c.Dims/2:
		return fmt.Errorf("rope: %d frequency factors for %d rotated pairs", len(c.Factors), c.Dims/2)
	}
	for i, f := range c.Factors {
		if !(f > 0) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("rope: frequency factor %d is %v, want a finite number above 0", i, f)
		}
	}
	for i, n := range c.Sections {
		if n < 0 || n > 1<<16 {
			return fmt.Errorf("rope: M-RoPE section %d has %d pairs, want 0 to 65536", i, n)
		}
	}
	if c.Interleaved && !c.mrope() {
		return fmt.Errorf("rope: interleaved M-RoPE without sections")
	}
	switch c.Scaling {
	case None:
	case Linear, YaRN:
		if !(c.Factor > 0) || math.IsInf(float64(c.Factor), 0) {
			return fmt.Errorf("rope: %v scaling needs a positive factor, have %v", c.Scaling, c.Factor)
		}
		if c.Scaling == YaRN && c.OrigContext <= 0 {
			return fmt.Errorf("rope: yarn scaling needs the original context length, have %d", c.OrigContext)
		}
	default:
		return fmt.Errorf("rope: unknown scaling %v", c.Scaling)
	}
	return nil
}

// params resolves the defaults into the numbers ggml's rope kernel takes.
type params struct {
	thetaScale float32
	freqScale  float32
	extFactor  float32
	mscale     float32 // attn_factor, before YaRN's own factor
	unit       bool    // no magnitude factors at all (ShiftAngles)
	lo, hi     float32 // YaRN correction dims
	factors    []float32
	// M-RoPE (Config.Sections): the pairs of the extra component stay at
	// position 0.
	sections    [4]int
	interleaved bool
}

func (c Config) params() params {
	p := params{
		thetaScale: powf(c.Base, -2.0/float32(c.Dims)),
		freqScale:  1,
		mscale:     1,
		factors:    c.Factors,
	}
	p.sections, p.interleaved = c.Sections, c.Interleaved
	if c.AttnFactor != 0 {
		p.mscale = c.AttnFactor
	}
	switch c.Scaling {
	case Linear:
		p.freqScale = 1 / c.Factor
	case YaRN:
		p.freqScale = 1 / c.Factor
		p.extFactor = 1
		if c.ExtFactor != 0 {
			p.extFactor = c.ExtFactor
		}
		fast, slow := c.BetaFast, c.BetaSlow
		if fast == 0 {
			fast = 32
		}
		if slow == 0 {
			slow = 1
		}
		p.lo, p.hi = CorrDims(c.Dims, c.OrigContext, c.Base, fast, slow)
	}
	return p
}

// CorrDims returns YaRN's correction range [lo, hi] of pair indices, as
// ggml_rope_yarn_corr_dims computes it in float32: d(b) = Dims·ln(orig /
// (2π·b)) / (2·ln base), lo = max(0, floor(d(betaFast))),
// hi = min(Dims-1, ceil(d(betaSlow))).
func CorrDims(dims, origCtx int, base, betaFast, betaSlow float32) (lo, hi float32) {
	d := func(b float32) float32 {
		return float32(dims) * logf(float32(origCtx)/(b*2*float32(math.Pi))) / (2 * logf(base))
	}
	lo = max(0, floorf(d(betaFast)))
	hi = min(float32(dims-1), ceilf(d(betaSlow)))
	return lo, hi
}

// Angles writes the cos and sin of every rotated pair at position pos into
// cos and sin (each at least Dims/2 long), exactly as ggml's rope cache:
// theta starts at float32(pos) and is multiplied by base^(-2/Dims) once per
// pair (a running float32 product), divided by the pair's frequency factor
// (Factors), then scaled (linear / YaRN ramp), and cos and sin are
// multiplied by the attention factor (and YaRN's mscale).
func (c Config) Angles(pos int, cos, sin []float32) {
	c.params().angles(pos, cos[:c.Dims/2], sin[:c.Dims/2])
}

// AnglesAt is Angles for a row at temporal, height and width positions
// t, y, x (an image row of Qwen2-VL's and its successors'): with Sections,
// pair i turns by the position of its component (see Sections; the extra
// component's position is 0, as llama.cpp fills it for images too), each
// position a running product multiplied by base^(-2/Dims) at every pair as
// in ggml's M-RoPE cache, so equal positions give Angles' bits. Without
// Sections only t counts.
func (c Config) AnglesAt(t, y, x int, cos, sin []float32) {
	p := c.params()
	if !c.mrope() || (t == y && t == x) {
		p.angles(t, cos[:c.Dims/2], sin[:c.Dims/2])
		return
	}
	th := [4]float32{float32(t), float32(y), float32(x), 0}
	for i := range c.Dims / 2 {
		p.angle(i, th[component(c.Sections, c.Interleaved, i)], cos, sin)
		for j := range th {
			th[j] *= p.thetaScale
		}
	}
}

func (p params) angles(pos int, cos, sin []float32) {
	theta := float32(pos)
	for i := range cos {
		if p.sections != ([4]int{}) && extraPair(p.sections, p.interleaved, i) {
			p.angle(i, 0, cos, sin) // ggml's extra M-RoPE component: position 0, an angle of 0 at every pair
		} else {
			p.angle(i, theta, cos, sin)
		}
		theta *= p.thetaScale
	}
}

// angle writes pair i's cos and sin at angle theta (before factors and
// scaling).
func (p params) angle(i int, theta float32, cos, sin []float32) {
	extrap := theta
	if p.factors != nil {
		extrap = theta / p.factors[i]
	}
	thetaInterp := p.freqScale * extrap
	t := thetaInterp
	ms := p.mscale
	if p.extFactor != 0 {
		mix := ramp(p.lo, p.hi, i) * p.extFactor
		t = thetaInterp*(1-mix) + extrap*mix
		ms *= 1 + 0.1*logf(1/p.freqScale)
	}
	if p.unit {
		ms = 1
	}
	cos[i] = float32(math.Cos(float64(t))) * ms
	sin[i] = float32(math.Sin(float64(t))) * ms
}

// mrope reports whether the rotation is M-RoPE (see Sections).
func (c Config) mrope() bool {
	return c.Sections != [4]int{}
}

// extraPair reports whether rotated pair i belongs to M-RoPE's extra
// (fourth) position component, as ggml_mrope_cache_init assigns sectors.
func extraPair(s [4]int, interleaved bool, i int) bool {
	return component(s, interleaved, i) == 3
}

// component is the M-RoPE position component (0 temporal, 1 height, 2
// width, 3 extra) that turns rotated pair i, as ggml_mrope_cache_init
// assigns sectors (see Config.Sections).
func component(s [4]int, interleaved bool, i int) int {
	sector := i % (s[0] + s[1] + s[2] + s[3])
	if interleaved {
		switch {
		case sector%3 == 1 && sector < 3*s[1]:
			return 1
		case sector%3 == 2 && sector < 3*s[2]:
			return 2
		case sector%3 == 0 && sector < 3*s[0]:
			return 0
		}
		return 3
	}
	switch {
	case sector < s[0]:
		return 0
	case sector < s[0]+s[1]:
		return 1
	case sector < s[0]+s[1]+s[2]:
		return 2
	}
	return 3
}

// ramp is YaRN's blend weight of the extrapolated angle for pair i:
// 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1).
func ramp(lo, hi float32, i int) float32 {
	y := (float32(i) - lo) / max(0.001, hi-lo)
	return 1 - min(1, max(0, y))
}

// Rotate applies the rotation for one position (cos and sin from Angles) to
// one head x in place. Dimensions from Dims on are left unchanged.
func (c Config) Rotate(x, cos, sin []float32) {
	half := c.Dims / 2
	cos, sin = cos[:half], sin[:half]
	switch c.Layout {
	case NeoX:
		a, b := x[:half], x[half:c.Dims]
		for i := range half {
			x0, x1 := a[i], b[i]
			a[i] = float32(x0*cos[i]) - float32(x1*sin[i])
			b[i] = float32(x0*sin[i]) + float32(x1*cos[i])
		}
	default:
		x = x[:c.Dims]
		for i := range half {
			x0, x1 := x[2*i], x[2*i+1]
			x[2*i] = float32(x0*cos[i]) - float32(x1*sin[i])
			x[2*i+1] = float32(x0*sin[i]) + float32(x1*cos[i])
		}
	}
}

func logf(x float32) float32   { return float32(math.Log(float64(x))) }
func floorf(x float32) float32 { return float32(math.Floor(float64(x))) }
func ceilf(x float32) float32  { return float32(math.Ceil(float64(x))) }
func powf(x, y float32) float32 {
	return float32(math.Pow(float64(x), float64(y)))
}

// NoPE says, per layer, whether the layer skips RoPE ("no positional
// encoding"): NoPE[i] true means layer i leaves q and k unrotated. A nil
// mask rotates every layer.
type NoPE []bool

// EveryNth returns the mask of n layers where layer i skips RoPE iff
// (i+1) % period == 0. SmolLM3 uses period 4 (layers 3, 7, 11, ...).
// period <= 0 returns a mask with RoPE in every layer.
func EveryNth(layers, period int) NoPE {
	m := make(NoPE, layers)
	if period > 0 {
		for i := range m {
			m[i] = (i+1)%period == 0
		}
	}
	return m
}

// Rotates reports whether layer i applies RoPE.
func (m NoPE) Rotates(layer int) bool {
	return layer >= len(m) || !m[layer]
}
