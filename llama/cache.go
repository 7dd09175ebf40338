package llama

import (
	"fmt"
	"slices"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/tensor"
)

// ErrContextFull is wrapped by Forward's error when the tokens would not fit
// in the cache (its MaxLen, by default the model's context length). It is
// backend.ErrContextFull, so sessions and Forward report the same error.
var ErrContextFull = backend.ErrContextFull

// CacheOptions configure a Cache; the zero value means an f16 cache bounded
// by the model's context length. The fields are named as Options' are.
type CacheOptions struct {
	KVType KVType
	// Context is the longest sequence the cache may hold (Cache.MaxLen); 0
	// means Config.Context, the length the model was trained for. A longer
	// one is allowed, as llama.cpp allows it: positions past the trained
	// context are extrapolated (RoPE rotates further), which a model may
	// handle well or badly; its program should say so (webchat warns).
	Context int
	// BatchSize is the most new tokens of this sequence one pass computes
	// (0: the runner's batch size). It sizes the rings of sliding-window
	// layers: window + BatchSize positions.
	BatchSize int
	// Checkpoints is the most checkpoints of the recurrent layers' state
	// the cache keeps (see state.go): 0 means DefaultCheckpoints, a
	// negative number none. A model of attention layers keeps none.
	Checkpoints int
}

// Cache is one sequence's state: the keys and values of every position seen
// so far, plus the work buffers of the forward pass, so that decoding a token
// allocates nothing once the buffers have grown. Memory grows with the
// sequence (doubling) up to MaxLen; the layers of a sliding window keep a
// ring of window + Batch positions instead (see kv.go).
//
// A Cache belongs to one CPU runner and must not be used by two goroutines
// at once; give every session its own.
type Cache struct {
	model  *CPU
	typ    KVType
	maxLen int
	n      int       // positions held
	capLen int       // positions allocated (a ring layer: at most its ring)
	kv     []kvStore // per layer: keys and values, in the cache's type
	ring   []int     // per layer: ring size, 0 for an ordinary layer
	lost   []int     // per layer: positions below it were overwritten in its ring
	buf    buffers

	// The recurrent layers' states (state.go): nil for a model of
	// attention only.
	state          [][]float32 // per layer: the state after n positions (nil for attention layers)
	valid          bool        // state is the state after n positions (false after a failed step)
	points         []*statePoint
	free           []*statePoint // dropped points, for reuse
	maxCheckpoints int
}

// NewCache returns an empty cache for sequences run on m.
func (m *CPU) NewCache(opts CacheOptions) (*Cache, error) {
	if opts.KVType != KVF16 && opts.KVType != KVF32 && opts.KVType != KVQ8_0 {
		return nil, fmt.Errorf("llama: unknown KV cache type %v", opts.KVType)
	}
	if opts.KVType == KVQ8_0 && m.Config.HeadDim%q8Block != 0 {
		return nil, fmt.Errorf("llama: a q8_0 KV cache needs a head size that is a multiple of %d, the model's is %d", q8Block, m.Config.HeadDim)
	}
	if opts.Context < 0 || opts.BatchSize < 0 {
		return nil, fmt.Errorf("llama: negative cache length %d or batch %d", opts.Context, opts.BatchSize)
	}
	max := opts.Context
	if max == 0 {
		max = m.Config.Context
	}
	batch := opts.BatchSize
	if batch == 0 {
		batch = m.batch
	}
	c := &Cache{model: m, typ: opts.KVType, maxLen: max}
	kv, hd := m.Config.KVDim(), m.Config.HeadDim
	for _, l := range m.Arch.Layers {
		switch {
		case l.Attention() == nil:
			c.kv = append(c.kv, &f32KV{}) // no keys or values: a store of width 0
		case c.typ == KVQ8_0:
			c.kv = append(c.kv, newQ8KV(kv, hd))
		case c.typ == KVF16:
			c.kv = append(c.kv, &f16KV{kv: kv})
		default:
			c.kv = append(c.kv, &f32KV{kv: kv})
		}
		r := 0
		if w := l.window(); w > 0 && w+batch < max {
			r = w + batch
		}
		c.ring = append(c.ring, r)
	}
	c.lost = make([]int, len(c.ring))
	cps := opts.Checkpoints
	if cps == 0 {
		cps = DefaultCheckpoints
	}
	c.initState(cps)
	return c, nil
}

// Len is the number of positions the cache holds: the position the next
// Forward call must start at.
func (c *Cache) Len() int { return c.n }

// MaxLen is the longest sequence the cache accepts.
func (c *Cache) MaxLen() int { return c.maxLen }

// Type is the cache's element type.
func (c *Cache) Type() KVType { return c.typ }

// MinRewind is the shortest length Truncate and Clone can go back to
// besides 0 (backend.Rewinder): 0 while every position is held, else the
// first length whose window the rings of sliding-window layers still hold.
func (c *Cache) MinRewind() int {
	lo := 0
	for l, lost := range c.lost {
		if lost > 0 {
			// Continuing at m needs the Window-1 positions before m.
			lo = max(lo, lost+c.model.Arch.Layers[l].window()-1)
		}
	}
	return lo
}

// rewindable reports whether n is a length Truncate and Clone can go back
// to, with an error saying why not.
func (c *Cache) rewindable(n int) error {
	if n != 0 && n < c.MinRewind() {
		return fmt.Errorf("llama: cannot go back to %d of %d positions: the sliding-window layers keep only positions from %d on (see MinRewind)", n, c.n, c.MinRewind())
	}
	return nil
}

// Truncate forgets every position from n on, keeping the prefix [0, n): the
// next Forward continues at position n. It is how a conversation resumes from
// shared history without recomputing it. Sliding-window layers can go back
// only as far as MinRewind (or to 0).
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.n {
		return fmt.Errorf("llama: cannot truncate a cache of %d positions to %d", c.n, n)
	}
	if err := c.rewindable(n); err != nil {
		return err
	}
	if err := c.setState(n); err != nil {
		return err
	}
	c.dropPoints(func(p *statePoint) bool { return p.pos > n })
	c.n = n
	if n == 0 {
		clear(c.lost)
	}
	return nil
}

// Reset empties the cache, keeping its memory for reuse.
func (c *Cache) Reset() {
	c.n = 0
	clear(c.lost)
	c.setState(0)
	c.dropPoints(func(*statePoint) bool { return true })
}

// slots is how many slots layer l has for capLen positions.
func (c *Cache) slots(l, capLen int) int {
	if r := c.ring[l]; r > 0 {
		if c.lost[l] > 0 {
			return r // the ring has wrapped: it is full
		}
		return min(capLen, r)
	}
	return capLen
}

// slot is the slot of position p in layer l.
func (c *Cache) slot(l, p int) int {
	if r := c.ring[l]; r > 0 {
		return p % r
	}
	return p
}

// reserve makes room for n positions.
func (c *Cache) reserve(n int) {
	if n <= c.capLen {
		return
	}
	newCap := max(256, c.capLen)
	for newCap < n {
		newCap *= 2
	}
	newCap = min(newCap, c.maxLen)
	for l, s := range c.kv {
		// Before a ring fills, its slots are the positions, so keeping
		// the first min(n, old slots) keeps everything.
		if old, nw := c.slots(l, c.capLen), c.slots(l, newCap); nw > old {
			s.grow(nw, min(c.n, old))
		}
	}
	c.capLen = newCap
}

// put writes the new keys and values of layer l (whole positions, back to
// back) at positions pos...
func (c *Cache) put(l, pos int, k, v []float32) {
	kv := c.model.Config.KVDim()
	n := len(k) / kv
	if c.ring[l] == 0 {
		c.kv[l].put(pos, k, v)
		return
	}
	for i := 0; i < n; {
		s := c.slot(l, pos+i)
		m := min(n-i, c.ring[l]-s) // up to the end of the ring
		c.kv[l].put(s, k[i*kv:(i+m)*kv], v[i*kv:(i+m)*kv])
		i += m
	}
	c.lost[l] = max(c.lost[l], pos+n-c.ring[l])
}

// buffers are the forward pass's work areas, sized for the largest batch
// seen so far.
type buffers struct {
	cap      int         // rows the buffers below hold
	x, xb    []float32   // residual stream, normed input   [rows × Embd]
	q, att   []float32   // queries, attention output      [rows × QDim]
	k, v     []float32   // new keys and values            [rows × KVDim]
	proj     []float32   // projection output              [rows × Embd]
	xb2      []float32   // a mixer's inner rows            [rows × Embd]
	conv     []float32   // a short convolution's b, c, x   [rows × 3·Embd]
	gate, up []float32   //                                 [rows × FFN]
	cos, sin [][]float32 // RoPE angles per distinct rotation [rows × Dims/2]
	runM     []float32   // attention running max and sum   [rows × Heads]
	runS     []float32
	qq       []byte    // KVQ8_0: queries rounded to Q8_0 [rows × QDim/32 blocks]
	logits   []float32 // logits of product calls shared by several pieces
	logits1  []float32 // Forward's result
	mm       tensor.Scratch

	// The pass's bookkeeping (step.go), reused from call to call.
	tokens    []int32
	jobs      []job
	pieces    []piece
	counts    []int
	rows      []int
	spans     []span
	attnJobs  []attnJob
	attnEnds  []int
	attn      attnBatch
	pass      pass
	moe       moeScratch    // the mixture-of-experts layers' buffers
	gdn       gdnScratch    // the Gated DeltaNet layers' buffers (and the gated attention's)
	mamba2    mamba2Scratch // the Mamba-2 layers' buffers
	shortConv shortConvJob  // the short convolutions' job
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func (b *buffers) ensure(m *CPU, rows int) {
	if rows <= b.cap {
		return
	}
	cfg := &m.Config
	b.cap = rows
	b.x = grow(b.x, rows*cfg.Embd)
	b.xb = grow(b.xb, rows*cfg.Embd)
	b.proj = grow(b.proj, rows*cfg.Embd)
	b.xb2 = grow(b.xb2, rows*cfg.Embd)
	b.q = grow(b.q, rows*cfg.QDim())
	b.att = grow(b.att, rows*cfg.QDim())
	b.k = grow(b.k, rows*cfg.KVDim())
	b.v = grow(b.v, rows*cfg.KVDim())
	b.gate = grow(b.gate, rows*cfg.FFN)
	b.up = grow(b.up, rows*cfg.FFN)
	b.cos = slices.Grow(b.cos[:0], len(m.ropes))[:len(m.ropes)]
	b.sin = slices.Grow(b.sin[:0], len(m.ropes))[:len(m.ropes)]
	for k, r := range m.ropes {
		b.cos[k] = grow(b.cos[k], rows*r.Dims/2)
		b.sin[k] = grow(b.sin[k], rows*r.Dims/2)
	}
	b.runM = grow(b.runM, rows*cfg.Heads)
	b.runS = grow(b.runS, rows*cfg.Heads)
	if n := rows * cfg.QDim() / q8Block * q8Bytes; cap(b.qq) < n {
		b.qq = make([]byte, n)
	} else {
		b.qq = b.qq[:n]
	}
}

// release drops the cache's memory (keys, values and work buffers) and
// empties it; it can grow again from nothing.
func (c *Cache) release() {
	for _, s := range c.kv {
		s.release()
	}
	clear(c.lost)
	c.n, c.capLen, c.buf = 0, 0, buffers{}
	c.setState(0)
	c.points, c.free = nil, nil
}
