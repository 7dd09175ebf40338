package llama

import (
	"fmt"
	"slices"

	"github.com/smolgo/smolgo/backend"
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
//
// A sliding-window layer whose cache is a ring (kv.go) shifts too: its
// ring is rebuilt so that each kept position sits at its new slot, and its
// keys are rotated like the others. It can do so only while the ring holds
// every position the next step's window needs after the shift; where the
// shift would need positions the ring has overwritten (a kept prefix that
// reaches into the new window), Shift returns an error wrapping
// backend.ErrCannotShift and leaves the cache unchanged, and the caller
// recomputes.
func (c *Cache) Shift(keep, drop int) error {
	if keep < 0 || drop < 0 || keep+drop > c.n {
		return fmt.Errorf("llama: cannot drop positions [%d, %d) of a cache holding %d", keep, keep+drop, c.n)
	}
	if drop == 0 {
		return nil
	}
	if c.recurrent() {
		return fmt.Errorf("llama: a recurrent layer's state cannot drop positions: %w", backend.ErrCannotShift)
	}
	// Plan the rings first, so that a refusal changes nothing.
	lost := slices.Clone(c.lost)
	for l, r := range c.ring {
		if r == 0 {
			continue
		}
		lo, err := c.ringHeld(l, keep, drop)
		if err != nil {
			return err
		}
		lost[l] = lo
	}
	cfg := &c.model.Config
	kv, hd := cfg.KVDim(), cfg.HeadDim
	n := c.n - drop
	moved := n - keep
	row := make([]float32, kv)
	for l, s := range c.kv {
		first := keep // the first moved position whose keys to rotate
		if c.ring[l] > 0 {
			c.shiftRing(l, keep, drop, lost[l], n)
			first = max(keep, lost[l])
		} else {
			s.move(keep, keep+drop, moved)
		}
		r := c.model.Arch.Layers[l].rope()
		if r == nil {
			continue // a NoPE layer's keys carry no position
		}
		half := r.Dims / 2
		cos, sin := make([]float32, half), make([]float32, half)
		r.ShiftAngles(-drop, cos, sin)
		for p := first; p < n; p++ {
			slot := c.slot(l, p)
			s.key(slot, row)
			for h := range cfg.KVHeads {
				r.Rotate(row[h*hd:(h+1)*hd], cos, sin)
			}
			s.setKey(slot, row)
		}
	}
	c.lost = lost
	c.n = n
	return nil
}

// ringHeld returns the first position that ring layer l holds after
// Shift(keep, drop) (every position from it to the end is there; 0 when
// nothing is lost), or an error wrapping backend.ErrCannotShift when the
// next step's window would reach below it.
func (c *Cache) ringHeld(l, keep, drop int) (int, error) {
	n := c.n - drop
	oldLo := c.lost[l] // the ring holds positions [oldLo, c.n)
	held := func(q int) bool {
		if q >= keep {
			q += drop
		}
		return q >= oldLo
	}
	lo := max(0, n-c.ring[l])
	for q := n - 1; q >= lo; q-- {
		if !held(q) {
			lo = q + 1
			break
		}
	}
	if need := n - c.model.Arch.Layers[l].window() + 1; lo > 0 && lo > max(0, need) {
		return 0, fmt.Errorf("llama: layer %d's sliding-window ring no longer holds positions %d to %d, which its window needs after dropping [%d, %d): %w",
			l, max(0, need), lo-1, keep, keep+drop, backend.ErrCannotShift)
	}
	return lo, nil
}

// shiftRing rebuilds ring layer l's slots for Shift(keep, drop): each
// position q in [lo, n) of the shifted sequence moves from the slot of its
// old position (q, or q+drop from keep on) to the slot of q. The moves go
// through a copy of the ring, a run of consecutive slots at a time.
func (c *Cache) shiftRing(l, keep, drop, lo, n int) {
	s, r := c.kv[l], c.ring[l]
	cur := c.slots(l, c.capLen)
	snap := s.clone(cur)
	old := func(q int) int {
		if q >= keep {
			return q + drop
		}
		return q
	}
	for q := lo; q < n; {
		from, to := old(q)%r, q%r
		m := 1
		for q+m < n && q+m != keep && (from+m) < r && (to+m) < r && old(q+m)%r == from+m {
			m++
		}
		if from != to {
			t := snap.clone(cur)
			t.move(to, from, m)
			s.copyFrom(t, to, to+m)
		} else {
			s.copyFrom(snap, to, to+m)
		}
		q += m
	}
}
