package vision

import "github.com/smolgo/smolgo/tensor"

// Qwen3-VL's encoder (clip.cpp's clip_graph_qwen3vl) is Qwen2-VL's with:
//
//   - v.patch_embd.bias added to the two patch kernels' sum;
//   - learned positions (v.position_embd.weight, a side × side grid),
//     resized to the image's patch grid by bilinear interpolation with
//     aligned corners (ggml_interpolate, GGML_SCALE_FLAG_ALIGN_CORNERS; a
//     grid of the table's size takes it as it is) and added in the ViT's
//     patch order;
//   - LayerNorm blocks with q, k and v stacked (attn_qkv) and a GELU MLP;
//   - deepstack: the output of some blocks (those with a
//     v.deepstack.N merger) goes, like the final output, through a merger
//     of its own: each 2 × 2 group's rows read as one, LayerNorm over that
//     width, fc1, GELU, fc2. An output row is the main merger's row followed
//     by each deepstack merger's, in block order: projDim × (1 + mergers)
//     wide, which the qwen3vl text model reads as its input row and the
//     slices it adds after its first blocks.

// qwen3Positions adds the learned positions, interpolated to the pw × ph
// patch grid, to the patch rows of b.x (in slot order, b.order).
func (pr *Projector) qwen3Positions(pw, ph int) {
	E := pr.p.embd
	b := &pr.buf
	side := pr.w.posSide
	pos := pr.w.pos
	if pw != side || ph != side {
		b.pos = grow(b.pos, pw*ph*E)
		pos = b.pos[:pw*ph*E]
		bilinearAligned(pos, pr.w.pos, side, side, pw, ph, E)
	}
	for s, pi := range b.order {
		tensor.Add(b.x[s*E:(s+1)*E], pos[pi*E:(pi+1)*E])
	}
}

// bilinearAligned resizes src, a sw × sh grid of E-value rows (row-major),
// to dst, dw × dh, as ggml's CPU upscale does in bilinear mode with
// GGML_SCALE_FLAG_ALIGN_CORNERS: in float32, the scale (d−1)/(s−1) per
// axis (d/s where either side is 1), source coordinate i/scale, the two
// neighbours clamped to the grid and the fraction to [0, 1].
func bilinearAligned(dst, src []float32, sw, sh, dw, dh, E int) {
	scale := func(d, s int) float32 {
		if d > 1 && s > 1 {
			return float32(d-1) / float32(s-1)
		}
		return float32(d) / float32(s)
	}
	sfx, sfy := scale(dw, sw), scale(dh, sh)
	taps := func(i int, sf float32, n int) (lo, hi int, f float32) {
		c := float32(i) / sf
		lo = int(float32floor(c))
		f = c - float32(lo)
		hi = min(max(lo+1, 0), n-1)
		lo = min(max(lo, 0), n-1)
		f = min(max(f, 0), 1)
		return lo, hi, f
	}
	for y := range dh {
		y0, y1, dy := taps(y, sfy, sh)
		for x := range dw {
			x0, x1, dx := taps(x, sfx, sw)
			a, bb := src[(y0*sw+x0)*E:], src[(y0*sw+x1)*E:]
			c, d := src[(y1*sw+x0)*E:], src[(y1*sw+x1)*E:]
			out := dst[(y*dw+x)*E : (y*dw+x+1)*E]
			for e := range out {
				// ggml's a*(1-dx)*(1-dy) + b*dx*(1-dy) + c*(1-dx)*dy + d*dx*dy, left to right
				v := float32(float32(a[e]*(1-dx)) * (1 - dy))
				v = float32(v + float32(float32(bb[e]*dx)*(1-dy)))
				v = float32(v + float32(float32(c[e]*(1-dx))*dy))
				v = float32(v + float32(float32(d[e]*dx)*dy))
				out[e] = v
			}
		}
	}
}

// float32floor is floorf.
func float32floor(x float32) float32 {
	t := float32(int64(x))
	if t > x {
		t--
	}
	return t
}

// deepstack runs deepstack merger k on the n patch rows of b.x (the output
// of its block), writing its g = n/4 rows of projDim to b.ds[k·g·projDim:].
func (pr *Projector) deepstack(k, n int) error {
	p := &pr.p
	b := &pr.buf
	d := &pr.w.deep[k]
	mm := p.merge * p.merge
	g, M, D := n/mm, p.embd*mm, p.projDim
	h := b.h[:g*M]
	pr.norm(h, b.x[:n*p.embd], d.norm, g)
	b.up = grow(b.up, max(n*p.ff, g*M))
	if err := d.fc1.mul(pr.pool, &b.s, b.up, h, g, true); err != nil {
		return err
	}
	b.ds = grow(b.ds, len(pr.w.deep)*g*D)
	return d.fc2.mul(pr.pool, &b.s, b.ds[k*g*D:(k+1)*g*D], b.up[:g*M], g, false)
}
