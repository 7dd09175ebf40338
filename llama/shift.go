package llama

import "fmt"

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
//
// Sliding-window layers cannot shift (their rings no longer hold the
// positions before the window): Shift refuses a cache with such layers.
func (c *Cache) Shift(keep, drop int) error {
	if keep < 0 || drop < 0 || keep+drop > c.n {
		return fmt.Errorf("llama: cannot drop positions [%d, %d) of a cache holding %d", keep, keep+drop, c.n)
	}
	if c.model.Arch.Windowed() {
		return fmt.Errorf("llama: %s has sliding-window layers, whose caches cannot shift (recompute instead)", c.model.Arch.Name)
	}
	if drop == 0 {
		return nil
	}
	cfg := &c.model.Config
	kv, hd := cfg.KVDim(), cfg.HeadDim
	moved := c.n - keep - drop
	row := make([]float32, kv)
	for l, s := range c.kv {
		s.move(keep, keep+drop, moved)
		r := c.model.Arch.Layers[l].Rope
		if r == nil {
			continue // a NoPE layer's keys carry no position
		}
		half := r.Dims / 2
		cos, sin := make([]float32, half), make([]float32, half)
		r.ShiftAngles(-drop, cos, sin)
		for p := keep; p < keep+moved; p++ {
			s.key(p, row)
			for h := range cfg.KVHeads {
				r.Rotate(row[h*hd:(h+1)*hd], cos, sin)
			}
			s.setKey(p, row)
		}
	}
	c.n -= drop
	return nil
}
