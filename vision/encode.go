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
}

// Encode computes the embedding rows of image chunk k of img (a chunk with
// Rows > 0) into dst, Rows × Width floats: what the text model reads in
// place of token embeddings. A cancelled ctx stops it between layers.
func (pr *Projector) Encode(ctx context.Context, img *Image, k int, dst []float32) error {
	if k < 0 || k >= len(img.Chunks) || img.Chunks[k].Rows == 0 {
		return fmt.Errorf("vision: chunk %d of the image is not an image chunk", k)
	}
	c := &img.Chunks[k]
	if len(dst) != c.Rows*pr.p.projDim {
		return fmt.Errorf("vision: %d floats for %d rows of %d", len(dst), c.Rows, pr.p.projDim)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.encode(ctx, &c.tile, dst)
}

func (pr *Projector) encode(ctx context.Context, t *tile, dst []float32) error {
	p := &pr.p
	b := &pr.buf
	P, E := p.patch, p.embd
	if t.W%P != 0 || t.H%P != 0 {
		return fmt.Errorf("vision: a %dx%d picture is not whole %d px patches", t.W, t.H, P)
	}
	pw, ph := t.W/P, t.H/P
	n := pw * ph
	b.x = grow(b.x, n*E)
	b.h = grow(b.h, n*max(E, 3*P*P))
	// The patches, channel-major as ggml's im2col lays them out.
	im := b.h[:n*3*P*P]
	for py := range ph {
		for px := range pw {
			row := im[(py*pw+px)*3*P*P:]
			for c := range 3 {
				for ky := range P {
					src := t.x[3*((py*P+ky)*t.W+px*P):]
					for kx := range P {
						row[(c*P+ky)*P+kx] = src[3*kx+c]
					}
				}
			}
		}
	}
	tensor.RoundF16s(im, im)
	if err := pr.w.patch.mul(pr.pool, &b.s, b.x, im, n, false); err != nil {
		return err
	}
	if pr.w.pos != nil {
		tensor.Add(b.x[:n*E], pr.w.pos[:n*E])
	}
	switch p.typ {
	case Gemma3, Idefics3:
		if err := pr.siglip(ctx, n); err != nil {
			return err
		}
	default:
		return fmt.Errorf("vision: %s is not implemented yet", p.typ)
	}
	switch p.typ {
	case Gemma3:
		return pr.gemma3Head(pw, ph, dst)
	case Idefics3:
		return pr.idefics3Head(pw, ph, dst)
	}
	return nil
}

// siglip runs the SigLIP encoder's blocks over the n patch rows of b.x:
// pre-LayerNorm attention and GELU MLP with residuals, then the final
// LayerNorm (clip.cpp's build_vit).
func (pr *Projector) siglip(ctx context.Context, n int) error {
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
		if err := pr.attention(b, b.att, b.q, b.k, b.v, n, nil); err != nil {
			return err
		}
		if err := w.o.mul(pr.pool, &b.s, h, b.att, n, false); err != nil {
			return err
		}
		tensor.Add(x, h)
		pr.norm(h, x, w.ln2, n)
		if err := w.up.mul(pr.pool, &b.s, b.up, h, n, true); err != nil {
			return err
		}
		if err := w.down.mul(pr.pool, &b.s, h, b.up[:n*F], n, false); err != nil {
			return err
		}
		tensor.Add(x, h)
	}
	if pr.w.post.w != nil {
		pr.norm(x, x, pr.w.post, n)
	}
	return nil
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

// encodeSupported reports whether Encode runs the projector's type yet.
func (pr *Projector) encodeSupported() (bool, error) {
	switch pr.p.typ {
	case Gemma3, Idefics3:
		return true, nil
	}
	return false, fmt.Errorf("vision: encoding %s is not implemented yet", pr.p.typ)
}
