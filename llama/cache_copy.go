package llama

import (
	"fmt"
	"slices"
)

// Clone returns a new cache holding a copy of the first n positions of c,
// with memory for exactly those n (a sliding-window layer: its ring, or
// less): a snapshot of a prompt's keys and values that outlives c's next
// turns (package engine's prompt cache keeps such snapshots and copies them
// into other sessions' caches with CopyFrom). The clone has c's type and
// MaxLen; it allocates its work buffers only if Forward runs on it. With
// sliding-window layers, n must be 0 or at least MinRewind.
func (c *Cache) Clone(n int) (*Cache, error) {
	if n < 0 || n > c.n {
		return nil, fmt.Errorf("llama: cannot clone %d positions of a cache holding %d", n, c.n)
	}
	if err := c.rewindable(n); err != nil {
		return nil, err
	}
	state, ok := c.stateAt(n)
	if c.recurrent() && !ok {
		return nil, fmt.Errorf("llama: cannot clone %d of %d positions: the recurrent layers' state is kept only at checkpoints (Floor(%d) = %d)", n, c.n, n, c.Floor(n))
	}
	d := &Cache{model: c.model, typ: c.typ, maxLen: c.maxLen, n: n, capLen: n, ring: c.ring, lost: slices.Clone(c.lost)}
	if n == 0 {
		clear(d.lost)
	}
	if c.recurrent() {
		d.initState(c.maxCheckpoints)
		if state != nil {
			d.copyState(d.state, state)
		}
		d.clonePoints(c, 0, n)
	}
	for l, s := range c.kv {
		d.kv = append(d.kv, s.clone(d.slots(l, n))) // a wrapped ring whole
	}
	return d, nil
}

// CopyFrom copies positions [from, to) of src into c and makes c hold to
// positions: c's first from positions are kept, so they must already be
// the same tokens' keys and values (from = 0 copies the whole prefix). src
// must come from the same runner and have the same type. It is how a
// session resumes from a snapshot of a shared prefix without computing it.
// With sliding-window layers, from must be 0 or at least c's MinRewind, and
// src must still hold the window before to.
func (c *Cache) CopyFrom(src *Cache, from, to int) error {
	switch {
	case src.model != c.model:
		return fmt.Errorf("llama: copying between caches of different models")
	case src.typ != c.typ:
		return fmt.Errorf("llama: copying a %v cache into a %v cache", src.typ, c.typ)
	case from < 0 || from > to || to > src.n:
		return fmt.Errorf("llama: cannot copy positions [%d, %d) of a cache holding %d", from, to, src.n)
	case from > c.n:
		return fmt.Errorf("llama: copying from position %d into a cache holding only %d", from, c.n)
	case to > c.maxLen:
		return fmt.Errorf("llama: %d positions exceed the cache length %d: %w", to, c.maxLen, ErrContextFull)
	}
	if err := c.rewindable(from); err != nil {
		return err
	}
	state, ok := src.stateAt(to)
	if c.recurrent() && !ok {
		return fmt.Errorf("llama: copying %d positions: the snapshot's recurrent state is kept only at checkpoints (Floor(%d) = %d)", to, to, src.Floor(to))
	}
	// Each ring layer needs at least the window before to from src (or,
	// where from is later, what c keeps).
	for l, r := range c.ring {
		w := c.model.Arch.Layers[l].window()
		if r > 0 && src.lost[l] > max(from, to-w+1) {
			return fmt.Errorf("llama: copying positions [%d, %d): the snapshot's sliding-window layer %d no longer holds positions before %d", from, to, l, src.lost[l])
		}
	}
	c.n = from
	if from == 0 {
		clear(c.lost)
	}
	c.reserve(to)
	for l, s := range c.kv {
		r := c.ring[l]
		if r == 0 {
			s.copyFrom(src.kv[l], from, to)
			continue
		}
		lo := max(from, to-r, src.lost[l])
		if lo > from {
			c.lost[l] = max(c.lost[l], lo) // positions [from, lo) are not there
		}
		c.lost[l] = max(c.lost[l], to-r)
		for lo < to {
			sl := lo % r
			n := min(to-lo, r-sl)
			s.copyFrom(src.kv[l], sl, sl+n)
			lo += n
		}
	}
	c.n = to
	if c.recurrent() {
		if state == nil {
			for _, l := range c.state {
				clear(l)
			}
		} else {
			c.copyState(c.state, state)
		}
		c.valid = true
		c.dropPoints(func(p *statePoint) bool { return p.pos > from })
		c.clonePoints(src, from, to)
	}
	return nil
}
