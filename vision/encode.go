package vision

import (
	"context"
	"fmt"

	"github.com/smolgo/smolgo/tensor"
)

// buffers are an encoding's work memory, grown to the largest image.
type buffers struct {
	x, h, q, k, v, att, up, gate []float32
	sc                           []float32
	k16, v16                     []uint16
	qwin                         []span
	s                            scratch
	attn                         attnJob

	// Qwen (qwenLayout, visionRope)
	order, groups []int
	wins          []span
	cos, sin      []float32
	// Qwen3-VL: the positions interpolated to the grid, and the deepstack
	// mergers' rows (merger k's in ds[k·g·projDim:], g merged rows)
	pos, ds []float32
}

// Encode computes the embedding rows of image chunk k of img (a chunk with
// Rows > 0) into dst, Rows × Width floats: what the text model reads in
// place of token embeddings. A cancelled ctx stops it between layers.
func (pr *Projector) Encode(ctx context.Context, img *Image, k int, dst []float32) error {
	if k < 0 || k >= len(img.Chunks) || img.Chunks[k].Rows == 0 {
		return fmt.Errorf("vision: chunk %d of the image is not an image chunk", k)
	}
	c := &img.Chunks[k]
	if W := pr.Width(); len(dst) != c.Rows*W {
		return fmt.Errorf("vision: %d floats for %d rows of %d", len(dst), c.Rows, W)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.encode(ctx, &c.tile, c.Rows, dst)
}

func (pr *Projector) encode(ctx context.Context, t *tile, rows int, dst []float32) error {
	p := &pr.p
	b := &pr.buf
	P, E := p.patch, p.embd
	if t.W%P != 0 || t.H%P != 0 {
		return fmt.Errorf("vision: a %dx%d picture is not whole %d px patches", t.W, t.H, P)
	}
	pw, ph := t.W/P, t.H/P
	n := pw * ph
	if n > maxPatches {
		return fmt.Errorf("vision: a %dx%d picture is %d patches, over the %d an encoding takes", t.W, t.H, n, maxPatches)
	}
	qwen := p.qwen()
	var order []int // the ViT's patch sequence (slot → raster index); nil: raster order
	if qwen {
		if err := pr.qwenLayout(pw, ph); err != nil {
			return err
		}
		order = b.order
	}
	if want := pr.rows(n); rows != want {
		return fmt.Errorf("vision: %d rows for %d patches, the projector makes %d", rows, n, want)
	}
	b.x = grow(b.x, n*E)
	b.h = grow(b.h, n*max(E, 3*P*P))
	// The patches, channel-major as ggml's im2col lays them out.
	im := b.h[:n*3*P*P]
	for s := range n {
		pi := s
		if order != nil {
			pi = order[s]
		}
		py, px := pi/pw, pi%pw
		row := im[s*3*P*P:]
		for c := range 3 {
			for ky := range P {
				src := t.x[3*((py*P+ky)*t.W+px*P):]
				for kx := range P {
					row[(c*P+ky)*P+kx] = src[3*kx+c]
				}
			}
		}
	}
	tensor.RoundF16s(im, im)
	if err := pr.w.patch.mul(pr.pool, &b.s, b.x, im, n, false); err != nil {
		return err
	}
	if pr.w.patch1 != nil {
		// The second half of the temporal kernel, on the same picture.
		b.att = grow(b.att, n*E)
		if err := pr.w.patch1.mul(pr.pool, &b.s, b.att, im, n, false); err != nil {
			return err
		}
		tensor.Add(b.x[:n*E], b.att[:n*E])
	}
	if pr.w.patchBias != nil {
		for s := range n {
			tensor.Add(b.x[s*E:(s+1)*E], pr.w.patchBias)
		}
	}
	switch {
	case p.typ == Qwen3VL:
		pr.qwen3Positions(pw, ph)
	case pr.w.pos != nil:
		tensor.Add(b.x[:n*E], pr.w.pos[:n*E])
	}
	if qwen {
		pr.visionRope(n, pw)
	}
	if err := pr.vit(ctx, n, qwen); err != nil {
		return err
	}
	switch p.typ {
	case Gemma3:
		return pr.gemma3Head(pw, ph, dst)
	case Idefics3:
		return pr.idefics3Head(pw, ph, dst)
	case Qwen2VL, Qwen25VL, Qwen3VL:
		return pr.qwenMerger(dst, n)
	}
	return fmt.Errorf("vision: no head for %s", p.typ)
}

// maxPatches bounds the patches of one encoding (its memory is some
// multiples of patches × width floats): Qwen's largest resize is 4096
// merged rows of 4 patches, and the fixed-size types' tiles are far
// smaller.
const maxPatches = 4 * 4096

// rows is the number of rows the projector makes of n patches.
func (pr *Projector) rows(n int) int {
	m := pr.p.merge * pr.p.merge
	return n / m
}

// vit runs the encoder's blocks over the n patch rows of b.x: pre-norm
// attention and MLP with residuals, then the final norm (clip.cpp's
// build_vit, and clip_graph_qwen2vl's blocks with rope: q and k turned by
// b.cos and b.sin, and the windowed blocks of Qwen2.5-VL attending within
// b.wins).
func (pr *Projector) vit(ctx context.Context, n int, rope bool) error {
	p := &pr.p
	b := &pr.buf
	E, F := p.embd, p.ff
	for _, buf := range []*[]float32{&b.q, &b.k, &b.v, &b.att} {
		*buf = grow(*buf, n*E)
	}
	b.up = grow(b.up, n*F)
	x := b.x[:n*E]
	for l := range pr.w.blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		w := &pr.w.blocks[l]
		h := b.h[:n*E]
		pr.norm(h, x, w.ln1, n)
		if err := pr.qkv(w, h, n); err != nil {
			return err
		}
		if rope {
			pr.rope(n)
		}
		var wins []span
		if p.waPattern > 0 && (l+1)%p.waPattern != 0 {
			wins = b.wins
		}
		if err := pr.attention(b, b.att, b.q, b.k, b.v, n, wins); err != nil {
			return err
		}
		if err := w.o.mul(pr.pool, &b.s, h, b.att, n, false); err != nil {
			return err
		}
		tensor.Add(x, h)
		pr.norm(h, x, w.ln2, n)
		if err := pr.ffn(w, h, n); err != nil {
			return err
		}
		tensor.Add(x, h)
		for k := range pr.w.deep {
			if pr.w.deep[k].block == l {
				if err := pr.deepstack(k, n); err != nil {
					return err
				}
			}
		}
	}
	if pr.w.post.w != nil {
		pr.norm(x, x, pr.w.post, n)
	}
	return nil
}

// ffn replaces the n normed rows h with the block's MLP of them: up (and
// gate), the activation of the file's clip.use_gelu / clip.use_silu (quick
// GELU with neither), down (clip.cpp's build_ffn).
func (pr *Projector) ffn(w *block, h []float32, n int) error {
	p := &pr.p
	b := &pr.buf
	F := p.ff
	up := b.up[:n*F]
	fused := w.gate == nil && p.gelu // GELU after the bias, in the product
	if err := w.up.mul(pr.pool, &b.s, up, h, n, fused); err != nil {
		return err
	}
	var g []float32
	if w.gate != nil {
		b.gate = grow(b.gate, n*F)
		g = b.gate[:n*F]
		if err := w.gate.mul(pr.pool, &b.s, g, h, n, false); err != nil {
			return err
		}
	}
	if !fused {
		act := actQuickGELU
		switch {
		case p.silu:
			act = actSiLU
		case p.gelu:
			act = actGELU
		}
		pr.pool.Run(n, max(1, 8192/F), &actJob{up: up, gate: g, F: F, act: act})
	}
	return w.down.mul(pr.pool, &b.s, h, up, n, false)
}

// qkv computes b.q, b.k, b.v from the normed rows h.
func (pr *Projector) qkv(w *block, h []float32, n int) error {
	b := &pr.buf
	if w.qkv != nil {
		return w.qkv.p.MulInto(pr.pool, &b.s.pack, h, n,
			tensor.PackedOut{Dst: b.q, Bias: w.qb}, tensor.PackedOut{Dst: b.k, Bias: w.kb}, tensor.PackedOut{Dst: b.v, Bias: w.vb})
	}
	for _, m := range []struct {
		l   *linear
		dst []float32
	}{{w.q, b.q}, {w.k, b.k}, {w.v, b.v}} {
		if err := m.l.mul(pr.pool, &b.s, m.dst, h, n, false); err != nil {
			return err
		}
	}
	return nil
}

// norm writes the n rows of x normed (LayerNorm, or RMSNorm for Qwen2.5)
// with nm's weight and bias to dst.
func (pr *Projector) norm(dst, x []float32, nm norm, n int) {
	E := len(nm.w)
	for t := range n {
		d, s := dst[t*E:(t+1)*E], x[t*E:(t+1)*E]
		if pr.p.rmsNorm {
			tensor.RMSNorm(d, s, nm.w, pr.p.eps)
			if nm.b != nil {
				tensor.Add(d, nm.b)
			}
			continue
		}
		tensor.LayerNorm(d, s, nm.w, nm.b, pr.p.eps)
	}
}

// gemma3Head pools the pw × ph patch rows of b.x in merge × merge squares
// (their average), RMSNorms them with the soft-embedding norm and projects
// them to the text width.
func (pr *Projector) gemma3Head(pw, ph int, dst []float32) error {
	p := &pr.p
	b := &pr.buf
	E, k := p.embd, p.merge
	ow, oh := pw/k, ph/k
	m := ow * oh
	pooled := b.h[:m*E]
	inv := float32(k * k)
	for oy := range oh {
		for ox := range ow {
			out := pooled[(oy*ow+ox)*E : (oy*ow+ox+1)*E]
			for e := range E {
				var s float32
				for ky := range k {
					for kx := range k {
						s += b.x[((oy*k+ky)*pw+ox*k+kx)*E+e]
					}
				}
				out[e] = s / inv
			}
		}
	}
	for r := range m {
		tensor.RMSNorm(pooled[r*E:(r+1)*E], pooled[r*E:(r+1)*E], pr.w.softNorm, p.eps)
	}
	return pr.w.inProj.mul(pr.pool, &b.s, dst, pooled, m, false)
}

// idefics3Head is the pixel shuffle (each merge × merge square of patches
// becomes one row, the patches concatenated line by line) and the
// projection (mm.model.fc).
func (pr *Projector) idefics3Head(pw, ph int, dst []float32) error {
	p := &pr.p
	b := &pr.buf
	E, s := p.embd, p.merge
	ow, oh := pw/s, ph/s
	m := ow * oh
	W := E * s * s
	b.att = grow(b.att, m*W)
	sh := b.att[:m*W]
	for oy := range oh {
		for ox := range ow {
			row := sh[(oy*ow+ox)*W:]
			for dy := range s {
				for dx := range s {
					src := b.x[((oy*s+dy)*pw+ox*s+dx)*E:]
					copy(row[(dy*s+dx)*E:(dy*s+dx+1)*E], src[:E])
				}
			}
		}
	}
	return pr.w.fc.mul(pr.pool, &b.s, dst, sh, m, false)
}

// The MLP activations (clip.cpp's ffn_op_type).
const (
	actQuickGELU = iota // x·σ(1.702·x), ggml's float16 table
	actGELU             // ggml's tanh GELU table
	actSiLU             // x·σ(x)
)

// actJob applies an activation to rows of F values of up, in place, or
// with a gate, up = act(gate) · up (ggml's swiglu/geglu split ops); units
// are rows.
type actJob struct {
	up, gate []float32
	F, act   int
}

func (j *actJob) Do(lo, hi int) {
	up := j.up[lo*j.F : hi*j.F]
	if j.gate == nil {
		switch j.act {
		case actSiLU:
			tensor.SiLU(up, up)
		case actGELU:
			tensor.GELUs(up, up)
		default:
			quickGELUs(up, up)
		}
		return
	}
	g := j.gate[lo*j.F : hi*j.F]
	switch j.act {
	case actSiLU:
		tensor.SwiGLU(up, g, up)
	case actGELU:
		tensor.GEGLU(up, g, up)
	default:
		quickGELUs(g, g)
		for i := range up {
			up[i] *= g[i]
		}
	}
}
