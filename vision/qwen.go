package vision

import (
	"fmt"
	"math"
	"sync"

	"github.com/smolgo/smolgo/tensor"
)

// Qwen2-VL's and Qwen2.5-VL's encoder (clip.cpp's clip_graph_qwen2vl):
//
//   - The two patch kernels (the converter's halves of the temporal
//     Conv3d) are applied to the same picture and added.
//   - The ViT reads the patches merge group by merge group: the 2 × 2
//     patches that become one output row are consecutive, in row-major
//     order of the merged grid, each group line by line. Qwen2.5-VL
//     reorders the groups once more so that each attention window's
//     groups are consecutive, windows in row-major order; its windowed
//     blocks attend within their window only, its full blocks (every
//     n_wa_pattern-th) over all, and the output rows are put back in the
//     merged grid's order at the end.
//   - q and k turn by 2-D rotary positions (ggml's GGML_ROPE_TYPE_VISION):
//     in each head of hd values, pair k is (k, k + hd/2); the first hd/4
//     pairs turn by the patch's line, the other hd/4 by its column, each
//     quarter's angles a running float32 product of base^(-4/hd) from the
//     position.
//   - The merger is the final norm (v.post_ln), the 4 rows of each group
//     read as one row of 4 × embd, mm.0, GELU and mm.2.

// qwenLayout fills b.order (the ViT's patch sequence: slot → the raster
// index of the patch it holds), b.groups (slot group → the merged grid's
// row-major index of the output row it makes) and b.wins (the attention
// windows, spans of slots; nil without window attention) for a pw × ph
// patch grid.
func (pr *Projector) qwenLayout(pw, ph int) error {
	p := &pr.p
	b := &pr.buf
	m := p.merge
	if pw%m != 0 || ph%m != 0 {
		return fmt.Errorf("vision: a %d × %d patch grid is not whole %d × %d merge groups", pw, ph, m, m)
	}
	gw, gh := pw/m, ph/m
	b.groups = b.groups[:0]
	b.wins = b.wins[:0]
	if p.waPattern > 0 {
		side := p.window / p.patch / m // merged rows per window side (clip.cpp's grid_window)
		for y := 0; y < gh; y += side {
			for x := 0; x < gw; x += side {
				lo := len(b.groups)
				for dy := range min(side, gh-y) {
					for dx := range min(side, gw-x) {
						b.groups = append(b.groups, (y+dy)*gw+x+dx)
					}
				}
				b.wins = append(b.wins, span{lo * m * m, len(b.groups) * m * m})
			}
		}
	} else {
		for g := range gw * gh {
			b.groups = append(b.groups, g)
		}
	}
	b.order = b.order[:0]
	for _, g := range b.groups {
		gy, gx := g/gw, g%gw
		for dy := range m {
			for dx := range m {
				b.order = append(b.order, (gy*m+dy)*pw+gx*m+dx)
			}
		}
	}
	return nil
}

// visionRope fills b.cos and b.sin, n rows of hd/2 values, with the
// angles of the patches in slot order (b.order) of a grid pw patches wide,
// as ggml_mrope_cache_init computes them for GGML_ROPE_TYPE_VISION with
// sections of hd/4: theta_scale = base^(-2/(hd/2)) in float32, the line's
// angle for the first hd/4 pairs and the column's, started again, for the
// others.
func (pr *Projector) visionRope(n, pw int) {
	p := &pr.p
	b := &pr.buf
	half, quarter := p.headDim/2, p.headDim/4
	b.cos = grow(b.cos, n*half)
	b.sin = grow(b.sin, n*half)
	scale := float32(math.Pow(float64(p.ropeTheta), float64(-2/float32(half))))
	for s := range n {
		y, x := b.order[s]/pw, b.order[s]%pw
		cos, sin := b.cos[s*half:(s+1)*half], b.sin[s*half:(s+1)*half]
		ty, tx := float32(y), float32(x)
		for k := range half {
			th := ty
			if k == quarter {
				tx = float32(x) // the column's section starts its product again
			}
			if k >= quarter {
				th = tx
			}
			cos[k] = float32(math.Cos(float64(th)))
			sin[k] = float32(math.Sin(float64(th)))
			ty *= scale
			tx *= scale
		}
	}
}

// ropeJob turns the heads of n rows of q and k (E values each) by b.cos
// and b.sin; units are rows.
type ropeJob struct {
	q, k, cos, sin []float32
	E, hd          int
}

func (j *ropeJob) Do(lo, hi int) {
	half := j.hd / 2
	for s := lo; s < hi; s++ {
		cos, sin := j.cos[s*half:(s+1)*half], j.sin[s*half:(s+1)*half]
		for _, m := range [2][]float32{j.q, j.k} {
			row := m[s*j.E : (s+1)*j.E]
			for h := 0; h < j.E; h += j.hd {
				a, c := row[h:h+half], row[h+half:h+j.hd]
				for i := range half {
					x0, x1 := a[i], c[i]
					a[i] = float32(x0*cos[i]) - float32(x1*sin[i])
					c[i] = float32(x0*sin[i]) + float32(x1*cos[i])
				}
			}
		}
	}
}

// rope turns b.q and b.k of n rows.
func (pr *Projector) rope(n int) {
	b := &pr.buf
	j := &ropeJob{q: b.q, k: b.k, cos: b.cos, sin: b.sin, E: pr.p.embd, hd: pr.p.headDim}
	pr.pool.Run(n, max(1, 4096/pr.p.embd), j)
}

// qwenMerger is the merger on the n rows of b.x (already normed): each
// group's 4 rows as one, mm.0 with GELU, mm.2, the rows written to dst in
// the merged grid's row-major order, each followed by the deepstack
// mergers' rows of its group (Qwen3-VL; b.ds).
func (pr *Projector) qwenMerger(dst []float32, n int) error {
	p := &pr.p
	b := &pr.buf
	mm := p.merge * p.merge
	g := n / mm
	M := p.embd * mm
	D, W := p.projDim, pr.Width()
	b.up = grow(b.up, max(n*p.ff, g*M))
	if err := pr.w.mm0.mul(pr.pool, &b.s, b.up, b.x[:g*M], g, true); err != nil {
		return err
	}
	direct := p.waPattern == 0 && W == D
	out := dst
	if !direct {
		b.att = grow(b.att, max(n*p.embd, g*D))
		out = b.att
	}
	if err := pr.w.mm2.mul(pr.pool, &b.s, out, b.up[:g*M], g, false); err != nil {
		return err
	}
	if direct {
		return nil
	}
	for s, r := range b.groups {
		row := dst[r*W : (r+1)*W]
		copy(row[:D], out[s*D:(s+1)*D])
		for k := range pr.w.deep {
			copy(row[(1+k)*D:(2+k)*D], b.ds[(k*g+s)*D:(k*g+s+1)*D])
		}
	}
	return nil
}

// quickGELUs sets dst[i] = x·σ(1.702·x) as ggml's CPU backend computes
// ggml_gelu_quick (GGML_GELU_QUICK_FP16): the float16 table of its values
// looked up at the float16 rounding of x. dst may alias x.
func quickGELUs(dst, x []float32) {
	t := quickGELUTable()
	x = x[:len(dst)]
	var bits [256]uint16
	for len(x) > 0 {
		c := min(len(x), len(bits))
		tensor.ToF16s(bits[:c], x[:c])
		for i, h := range bits[:c] {
			dst[i] = tensor.FromF16(t[h])
		}
		x, dst = x[c:], dst[c:]
	}
}

// quickGELUTable is ggml_table_gelu_quick_f16: at every float16 input f,
// the float16 rounding of f·(1/(1+e^(−1.702·f))) in float32.
var quickGELUTable = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for i := range t {
		f := tensor.FromF16(uint16(i))
		e := float32(math.Exp(float64(float32(-1.702) * f)))
		t[i] = tensor.ToF16(f * (1 / (1 + e)))
	}
	return &t
})
