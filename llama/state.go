package llama

import (
	"fmt"
	"slices"
)

// Recurrent state.
//
// A layer whose mixer is recurrent (ShortConv, Mamba2, GatedDeltaNet) keeps
// no keys and values: each sequence holds a fixed-size state for it (the
// last inputs of a causal convolution, a state matrix per head) that every
// new token updates in place. The state is constant in the context length,
// but it cannot be cut back: the state after 100 tokens does not give the
// state after 80. So a Cache of such a model keeps copies of its states
// at chosen positions, its points:
//
//   - checkpoints, taken by Checkpoint at the cache's current length (the
//     engine takes one at the end of every prompt and every
//     CheckpointInterval tokens of a long one), at most CacheOptions'
//     Checkpoints of them, the oldest dropped first;
//   - the rows of the last step whose logits were asked for (a draft's
//     rows being checked), at most maxStepPoints, so that the rejected
//     part of a draft can be dropped again: these last until the next
//     step;
//   - one held point (Hold), where a draft model's cache starts drafting
//     one token per step, so that the drafted tokens the target model
//     rejects can be dropped without a checkpoint: it lasts until the next
//     Hold and never pushes a checkpoint out.
//
// Truncate, Clone and CopyFrom go to a length only where the state there is
// known: 0, the current length, or a point (Floor says which). A step that
// fails half way (a cancelled context) leaves the state of no length; the
// cache then goes back only to a point.

// errInterrupted refuses a step on a cache whose state an earlier step left
// half done.
var errInterrupted = fmt.Errorf("llama: the recurrent state is that of an interrupted step; go back to a checkpoint (Truncate to Floor) first")

// stateful is implemented by the kinds whose sequences keep a state.
type stateful interface {
	// stateSize is the number of float32 values of one sequence's state of
	// such a layer.
	stateSize(cfg Config) int
}

// maxStepPoints bounds the rows of one step whose states a cache keeps for
// going back (a draft checked in one step has fewer).
const maxStepPoints = 16

// DefaultCheckpoints is how many checkpoints a cache of a recurrent model
// keeps by default (CacheOptions.Checkpoints), as llama.cpp's
// --ctx-checkpoints keeps several per slot.
const DefaultCheckpoints = 8

// statePoint is a copy of every recurrent layer's state at a length.
type statePoint struct {
	pos        int
	checkpoint bool
	held       bool        // Hold's point
	state      [][]float32 // per layer, as Cache.state (nil where the layer keeps none)
}

// initState gives the cache a zero state for each recurrent layer.
func (c *Cache) initState(checkpoints int) {
	c.maxCheckpoints = checkpoints
	for l, ly := range c.model.Arch.Layers {
		if s, ok := ly.Mixer.(stateful); ok {
			if c.state == nil {
				c.state = make([][]float32, len(c.model.Arch.Layers))
			}
			c.state[l] = make([]float32, s.stateSize(c.model.Config))
		}
	}
	c.valid = true
}

// recurrent reports whether some layer keeps a state.
func (c *Cache) recurrent() bool { return c.state != nil }

// StateBytes is the memory of the cache's recurrent states: the live one
// and its points (0 for a model of attention only).
func (c *Cache) StateBytes() int64 {
	var n int64
	for _, s := range c.state {
		n += 4 * int64(len(s))
	}
	return n * int64(1+len(c.points))
}

// Floor is the largest length m <= n that Truncate(m) and Clone(m) accept
// now: n itself for a model of attention layers (or 0, where sliding-window
// layers no longer hold n's window, see MinRewind); for a recurrent model
// the largest of 0, the current length (while its state is whole) and the
// points.
func (c *Cache) Floor(n int) int {
	n = min(max(n, 0), c.n)
	ok := func(m int) bool { return c.rewindable(m) == nil }
	if !c.recurrent() {
		if ok(n) {
			return n
		}
		return 0
	}
	if n == c.n && c.valid && ok(n) {
		return n
	}
	best := 0
	for _, p := range c.points {
		if p.pos <= n && p.pos > best && ok(p.pos) {
			best = p.pos
		}
	}
	return best
}

// Checkpoint keeps a copy of the recurrent states at the current length,
// so that Truncate and Clone can come back to it later (Floor). It drops
// the oldest checkpoint beyond the cache's Checkpoints. It does nothing for
// a model of attention layers, whose caches go back anywhere.
func (c *Cache) Checkpoint() error {
	if !c.recurrent() || c.maxCheckpoints <= 0 {
		return nil
	}
	if !c.valid {
		return fmt.Errorf("llama: no checkpoint of an interrupted step's state (go back to a checkpoint first)")
	}
	p := c.pointAt(c.n)
	if p == nil {
		p = c.newPoint(c.n)
		c.copyState(p.state, c.state)
	}
	p.checkpoint = true
	cps := 0
	for _, q := range c.points {
		if q.checkpoint {
			cps++
		}
	}
	for cps > c.maxCheckpoints {
		oldest := -1
		for i, q := range c.points {
			if q.checkpoint && (oldest < 0 || q.pos < c.points[oldest].pos) {
				oldest = i
			}
		}
		c.dropPoint(oldest)
		cps--
	}
	return nil
}

// pointAt returns the point at length pos, or nil.
func (c *Cache) pointAt(pos int) *statePoint {
	for _, p := range c.points {
		if p.pos == pos {
			return p
		}
	}
	return nil
}

// newPoint adds a point at pos (not a checkpoint), reusing a dropped
// point's memory where there is one.
func (c *Cache) newPoint(pos int) *statePoint {
	var p *statePoint
	if n := len(c.free); n > 0 {
		p, c.free = c.free[n-1], c.free[:n-1]
	} else {
		p = &statePoint{state: make([][]float32, len(c.state))}
		for l, s := range c.state {
			if s != nil {
				p.state[l] = make([]float32, len(s))
			}
		}
	}
	p.pos, p.checkpoint, p.held = pos, false, false
	c.points = append(c.points, p)
	return p
}

func (c *Cache) dropPoint(i int) {
	c.free = append(c.free, c.points[i])
	c.points = slices.Delete(c.points, i, i+1)
}

// dropPoints drops the points drop says.
func (c *Cache) dropPoints(drop func(*statePoint) bool) {
	for i := 0; i < len(c.points); {
		if drop(c.points[i]) {
			c.dropPoint(i)
			continue
		}
		i++
	}
}

func (c *Cache) copyState(dst, src [][]float32) {
	for l := range dst {
		copy(dst[l], src[l])
	}
}

// stateAt returns the recurrent states at length n: the live one, a
// point's, or nil with ok where n is 0 (zero states); ok false where no
// state of that length is known.
func (c *Cache) stateAt(n int) (state [][]float32, ok bool) {
	switch {
	case n == c.n && c.valid:
		return c.state, true
	case n == 0:
		return nil, true
	}
	if p := c.pointAt(n); p != nil {
		return p.state, true
	}
	return nil, false
}

// setState makes the live state the one at length n (see stateAt), or
// fails saying which lengths the cache can go back to.
func (c *Cache) setState(n int) error {
	if !c.recurrent() {
		return nil
	}
	s, ok := c.stateAt(n)
	if !ok {
		return fmt.Errorf("llama: cannot go back to %d of %d positions: the recurrent layers' state is kept only at checkpoints (Floor(%d) = %d)", n, c.n, n, c.Floor(n))
	}
	switch {
	case s == nil:
		for _, l := range c.state {
			clear(l)
		}
	case &s[0] != &c.state[0]:
		c.copyState(c.state, s)
	}
	c.valid = true
	return nil
}

// beginStep drops the points of the last step's rows: a new step moves on.
func (c *Cache) beginStep() {
	if c.recurrent() {
		c.dropPoints(func(p *statePoint) bool { return !p.checkpoint && !p.held })
	}
}

// failStep marks the state of a step that failed half way as unknown.
func (c *Cache) failStep() {
	if c.recurrent() {
		c.valid = false
		c.dropPoints(func(p *statePoint) bool { return !p.checkpoint && !p.held })
	}
}

// Hold keeps a copy of the recurrent states at the current length until
// the next Hold or a Truncate below it, besides the checkpoints: Floor
// reaches it, and it never pushes a checkpoint out. A draft model's cache
// holds where a draft starts, drafts one token per step, and goes back to
// the hold when the target model rejects part of the draft. Neither Clone
// nor SaveTo copies it. It does nothing for a model of attention layers.
func (c *Cache) Hold() error {
	if !c.recurrent() {
		return nil
	}
	if !c.valid {
		return fmt.Errorf("llama: no hold of an interrupted step's state (go back to a checkpoint first)")
	}
	c.dropPoints(func(p *statePoint) bool { return p.held && !p.checkpoint && p.pos != c.n })
	for _, p := range c.points {
		p.held = false
	}
	p := c.pointAt(c.n)
	if p == nil {
		p = c.newPoint(c.n)
		c.copyState(p.state, c.state)
	}
	p.held = true
	return nil
}

// keepState returns where layer l's state after the first pos positions
// goes, for a row of a step that asked for its logits (the piece's
// keepFrom...): a point at pos, made if need be.
func (c *Cache) keepState(l, pos int) []float32 {
	p := c.pointAt(pos)
	if p == nil {
		p = c.newPoint(pos)
	}
	return p.state[l]
}

// clonePoints copies the checkpoints of src at lengths in (lo, hi] into c.
func (c *Cache) clonePoints(src *Cache, lo, hi int) {
	for _, p := range src.points {
		if p.checkpoint && p.pos > lo && p.pos <= hi && c.pointAt(p.pos) == nil {
			q := c.newPoint(p.pos)
			q.checkpoint = true
			c.copyState(q.state, p.state)
		}
	}
}
