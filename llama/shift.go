package llama

import (
	"fmt"

	"github.com/smolgo/smolgo/tensor"
)

// Shift drops the drop positions that follow the first keep, like
// llama.cpp's context shift: positions [keep, keep+drop) are forgotten,
// the ones after them move down by drop, and the cache then holds
// Len()-drop positions (the next Forward continues there). A conversation
// that outgrows the context keeps its system prompt (the first keep
// positions) and loses its oldest turns without recomputing the rest.
//
// The moved keys of RoPE layers were rotated for their old positions; Shift
// rotates them by -drop (rope.Config.ShiftAngles), which puts them where a
// fresh pass at the new positions would. Keys of NoPE layers carry no
// position and values never do: they are moved unchanged. An f16 or q8_0
// key is widened to f32, rotated and rounded back, which adds one rounding
// (a q8_0 key also leaves and re-enters its Hadamard rotation, as in
// llama.cpp).
//
// Shift is not a recomputation: the moved positions keep what they computed
// while the dropped tokens were in view (their keys and values past the
// first layer depend on every earlier token). The result is what llama.cpp's
// context shift gives, close to a fresh prefill of the shortened sequence
// but not equal to it; Truncate plus a new prefill is the exact (slower)
// alternative.
func (c *Cache) Shift(keep, drop int) error {
	if keep < 0 || drop < 0 || keep+drop > c.n {
		return fmt.Errorf("llama: cannot drop positions [%d, %d) of a cache holding %d", keep, keep+drop, c.n)
	}
	if drop == 0 {
		return nil
	}
	cfg := &c.model.Config
	kv, hd, half := cfg.KVDim(), cfg.HeadDim, cfg.Rope.Dims/2
	moved := c.n - keep - drop
	cos, sin := make([]float32, half), make([]float32, half)
	cfg.Rope.ShiftAngles(-drop, cos, sin)
	row := make([]float32, kv)
	for l := range cfg.Layers {
		c.move(l, keep, keep+drop, moved)
		if !c.model.nope.Rotates(l) {
			continue
		}
		for p := keep; p < keep+moved; p++ {
			c.readKey(l, p, row)
			hadamard(row, c.rotK) // undo the q8_0 cache's rotation (its own inverse)
			for h := range cfg.KVHeads {
				cfg.Rope.Rotate(row[h*hd:(h+1)*hd], cos, sin)
			}
			hadamard(row, c.rotK)
			c.writeKey(l, p, row)
		}
	}
	c.n -= drop
	return nil
}

// move copies n positions of layer l's keys and values from position src to
// position dst.
func (c *Cache) move(l, dst, src, n int) {
	switch c.typ {
	case KVQ8_0:
		rb := c.rowQ8
		copy(c.k8[l][dst*rb:], c.k8[l][src*rb:(src+n)*rb])
		copy(c.v8[l][dst*rb:], c.v8[l][src*rb:(src+n)*rb])
	case KVF16:
		kv := c.model.Config.KVDim()
		copy(c.k16[l][dst*kv:], c.k16[l][src*kv:(src+n)*kv])
		copy(c.v16[l][dst*kv:], c.v16[l][src*kv:(src+n)*kv])
	default:
		kv := c.model.Config.KVDim()
		copy(c.k32[l][dst*kv:], c.k32[l][src*kv:(src+n)*kv])
		copy(c.v32[l][dst*kv:], c.v32[l][src*kv:(src+n)*kv])
	}
}

// readKey widens the keys of position p in layer l to f32.
func (c *Cache) readKey(l, p int, dst []float32) {
	kv := len(dst)
	switch c.typ {
	case KVQ8_0:
		tensor.DequantizeQ8_0(dst, c.k8[l][p*c.rowQ8:(p+1)*c.rowQ8])
	case KVF16:
		for i, h := range c.k16[l][p*kv : (p+1)*kv] {
			dst[i] = tensor.FromF16(h)
		}
	default:
		copy(dst, c.k32[l][p*kv:(p+1)*kv])
	}
}

// writeKey stores the f32 keys of position p in layer l, rounding them to
// the cache's type as a forward pass would.
func (c *Cache) writeKey(l, p int, src []float32) {
	kv := len(src)
	switch c.typ {
	case KVQ8_0:
		tensor.QuantizeQ8_0(c.k8[l][p*c.rowQ8:(p+1)*c.rowQ8], src)
	case KVF16:
		dst := c.k16[l][p*kv : (p+1)*kv]
		for i, x := range src {
			dst[i] = tensor.ToF16(x)
		}
	default:
		copy(c.k32[l][p*kv:(p+1)*kv], src)
	}
}
