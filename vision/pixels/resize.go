package pixels

import (
	"fmt"
	"math"
)

// Filter is a resampling filter.
type Filter int

const (
	// Bilinear is the triangle filter (support 1).
	Bilinear Filter = iota
	// Bicubic is the cubic convolution filter with a = -0.5, Pillow's
	// (support 2).
	Bicubic
	// Lanczos is the windowed sinc filter of three lobes (support 3).
	Lanczos
)

func (f Filter) String() string {
	switch f {
	case Bilinear:
		return "bilinear"
	case Bicubic:
		return "bicubic"
	case Lanczos:
		return "lanczos"
	}
	return fmt.Sprintf("Filter(%d)", int(f))
}

// support is the filter's radius at scale 1.
func (f Filter) support() float64 {
	switch f {
	case Bicubic:
		return 2
	case Lanczos:
		return 3
	}
	return 1
}

// weight is the filter's value at distance x from a pixel centre.
func (f Filter) weight(x float64) float64 {
	switch f {
	case Lanczos:
		if x < -3 || x >= 3 {
			return 0
		}
		return sinc(x) * sinc(x/3)
	case Bicubic:
		const a = -0.5
		x = math.Abs(x)
		switch {
		case x < 1:
			return ((a+2)*x-(a+3))*x*x + 1
		case x < 2:
			return (((x-5)*x+8)*x - 4) * a
		}
		return 0
	}
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	px := x * math.Pi
	return math.Sin(px) / px
}

// fracBits is the fixed-point precision of the weights: 32 bits less 8 for
// a pixel and 2 of headroom for the sums.
const fracBits = 22

// MaxSide is the longest side Resize makes.
const MaxSide = 65536

// kernel is one dimension's resampling: for output pixel i, the inputs
// first[i] ... first[i]+count[i]-1 weighted by w[i*size:].
type kernel struct {
	size         int
	first, count []int
	w            []int32
}

// newKernel computes the fixed-point weights of resampling in pixels to out
// with f: the filter widened by the scale when shrinking, each output's
// weights normalized to sum to 1 and rounded half away from zero.
func newKernel(in, out int, f Filter) kernel {
	scale := float64(in) / float64(out)
	fscale := max(scale, 1)
	support := f.support() * fscale
	size := int(math.Ceil(support))*2 + 1
	k := kernel{size: size, first: make([]int, out), count: make([]int, out), w: make([]int32, out*size)}
	pre := make([]float64, size)
	one := math.Ldexp(1, fracBits)
	ss := 1 / fscale
	for i := range out {
		centre := (float64(i) + 0.5) * scale
		lo := max(int(centre-support+0.5), 0)
		hi := min(int(centre+support+0.5), in)
		n := hi - lo
		var sum float64
		for j := range n {
			v := f.weight((float64(j+lo) - centre + 0.5) * ss)
			pre[j] = v
			sum += v
		}
		for j := range size {
			v := 0.0
			if j < n {
				v = pre[j]
				if sum != 0 {
					v /= sum
				}
			}
			r := v * one
			if v < 0 {
				r -= 0.5
			} else {
				r += 0.5
			}
			k.w[i*size+j] = int32(r)
		}
		k.first[i], k.count[i] = lo, n
	}
	return k
}

func clip8(v int32) uint8 {
	v >>= fracBits
	switch {
	case v < 0:
		return 0
	case v > 255:
		return 255
	}
	return uint8(v)
}

// Resize returns p resampled to w × h with f: a horizontal pass, then a
// vertical one, each skipped when that side keeps its length.
func (p *RGB) Resize(w, h int, f Filter) (*RGB, error) {
	if w <= 0 || h <= 0 || w > MaxSide || h > MaxSide {
		return nil, fmt.Errorf("pixels: resize to %dx%d is out of range (1 to %d a side)", w, h, MaxSide)
	}
	if p.W <= 0 || p.H <= 0 || len(p.Pix) != 3*p.W*p.H {
		return nil, fmt.Errorf("pixels: resizing a %dx%d picture of %d bytes", p.W, p.H, len(p.Pix))
	}
	src := p
	if w != p.W {
		src = horizontal(src, w, newKernel(p.W, w, f))
	}
	if h != p.H {
		src = vertical(src, h, newKernel(p.H, h, f))
	}
	if src == p {
		d := New(w, h)
		copy(d.Pix, p.Pix)
		return d, nil
	}
	return src, nil
}

func horizontal(src *RGB, w int, k kernel) *RGB {
	d := New(w, src.H)
	const half = 1 << (fracBits - 1)
	for y := range src.H {
		row := src.Pix[3*y*src.W : 3*(y+1)*src.W]
		out := d.Pix[3*y*w : 3*(y+1)*w]
		for x := range w {
			s0, s1, s2 := int32(half), int32(half), int32(half)
			kw := k.w[x*k.size : x*k.size+k.count[x]]
			in := row[3*k.first[x]:]
			for j, c := range kw {
				s0 += int32(in[3*j]) * c
				s1 += int32(in[3*j+1]) * c
				s2 += int32(in[3*j+2]) * c
			}
			out[3*x], out[3*x+1], out[3*x+2] = clip8(s0), clip8(s1), clip8(s2)
		}
	}
	return d
}

func vertical(src *RGB, h int, k kernel) *RGB {
	d := New(src.W, h)
	n := 3 * src.W
	acc := make([]int32, n)
	for y := range h {
		for i := range acc {
			acc[i] = 1 << (fracBits - 1)
		}
		for j, c := range k.w[y*k.size : y*k.size+k.count[y]] {
			row := src.Pix[(k.first[y]+j)*n : (k.first[y]+j+1)*n]
			for i, v := range row {
				acc[i] += int32(v) * c
			}
		}
		out := d.Pix[y*n : (y+1)*n]
		for i, a := range acc {
			out[i] = clip8(a)
		}
	}
	return d
}
