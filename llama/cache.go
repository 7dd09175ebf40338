package llama

import (
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/tensor"
)

// ErrContextFull is wrapped by Forward's error when the tokens would not fit
// in the cache (its MaxLen, by default the model's context length). It is
// engine.ErrContextFull, so sessions and Forward report the same error.
var ErrContextFull = engine.ErrContextFull

// KVType is the element type of the key/value cache.
type KVType int

const (
	// KVF16 stores keys and values as float16, like llama.cpp's default. It
	// is also what reproduces llama.cpp's logits most closely: its flash
	// attention rounds to f16 whatever the cache type.
	KVF16 KVType = iota
	// KVF32 stores float32 and attends in float32 throughout: twice the
	// memory, slightly more precise, slightly further from llama.cpp.
	KVF32
	// KVQ8_0 stores keys and values in ggml's Q8_0 blocks (llama.cpp's
	// -ctk q8_0 -ctv q8_0): along each head, blocks of 32 values share one
	// f16 scale, 34 bytes per 32 values, 53% of an f16 cache. See
	// cache_q8.go for how attention reads it.
	KVQ8_0
)

func (t KVType) String() string {
	switch t {
	case KVF16:
		return "f16"
	case KVF32:
		return "f32"
	case KVQ8_0:
		return "q8_0"
	}
	return fmt.Sprintf("KVType(%d)", int(t))
}

// CacheOptions configure a Cache; the zero value means an f16 cache bounded
// by the model's context length.
type CacheOptions struct {
	Type KVType
	// MaxLen is the longest sequence the cache may hold; 0 means
	// Config.Context, the length the model was trained for. A longer one
	// is allowed, as llama.cpp allows it: positions past the trained
	// context are extrapolated (RoPE rotates further), which a model may
	// handle well or badly; its program should say so (webchat warns).
	MaxLen int
}

// Cache is one sequence's state: the keys and values of every position seen
// so far, plus the work buffers of the forward pass, so that decoding a token
// allocates nothing once the buffers have grown. Memory grows with the
// sequence (doubling) up to MaxLen.
//
// A Cache belongs to one Model and must not be used by two goroutines at
// once; give every session its own.
type Cache struct {
	model  *Model
	typ    KVType
	maxLen int
	n      int // positions held
	capLen int // positions allocated
	k16    [][]uint16
	v16    [][]uint16
	k32    [][]float32
	v32    [][]float32
	k8     [][]byte // KVQ8_0: per layer, rowQ8 bytes per position
	v8     [][]byte
	rowQ8  int // bytes of one position's keys (or values) in Q8_0
	rotK   int // KVQ8_0: Walsh-Hadamard size applied to Q and K (0: none)
	rotV   int // KVQ8_0: Walsh-Hadamard size applied to V and undone on the output
	buf    buffers
}

// NewCache returns an empty cache for sequences run on m.
func (m *Model) NewCache(opts CacheOptions) (*Cache, error) {
	if opts.Type != KVF16 && opts.Type != KVF32 && opts.Type != KVQ8_0 {
		return nil, fmt.Errorf("llama: unknown KV cache type %v", opts.Type)
	}
	if opts.Type == KVQ8_0 && m.Config.HeadDim%q8Block != 0 {
		return nil, fmt.Errorf("llama: a q8_0 KV cache needs a head size that is a multiple of %d, the model's is %d", q8Block, m.Config.HeadDim)
	}
	if opts.MaxLen < 0 {
		return nil, fmt.Errorf("llama: negative cache length %d", opts.MaxLen)
	}
	max := opts.MaxLen
	if max == 0 {
		max = m.Config.Context
	}
	c := &Cache{model: m, typ: opts.Type, maxLen: max}
	L := m.Config.Layers
	switch c.typ {
	case KVQ8_0:
		c.k8, c.v8 = make([][]byte, L), make([][]byte, L)
		c.initQ8()
	case KVF16:
		c.k16, c.v16 = make([][]uint16, L), make([][]uint16, L)
	default:
		c.k32, c.v32 = make([][]float32, L), make([][]float32, L)
	}
	return c, nil
}

// Len is the number of positions the cache holds: the position the next
// Forward call must start at.
func (c *Cache) Len() int { return c.n }

// MaxLen is the longest sequence the cache accepts.
func (c *Cache) MaxLen() int { return c.maxLen }

// Type is the cache's element type.
func (c *Cache) Type() KVType { return c.typ }

// Truncate forgets every position from n on, keeping the prefix [0, n): the
// next Forward continues at position n. It is how a conversation resumes from
// shared history without recomputing it.
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.n {
		return fmt.Errorf("llama: cannot truncate a cache of %d positions to %d", c.n, n)
	}
	c.n = n
	return nil
}

// Reset empties the cache, keeping its memory for reuse.
func (c *Cache) Reset() { c.n = 0 }

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
	kv := c.model.Config.KVDim()
	for l := range c.model.Config.Layers {
		if c.typ == KVQ8_0 {
			rb := c.rowQ8
			c.k8[l] = append(make([]byte, 0, newCap*rb), c.k8[l][:c.n*rb]...)[:newCap*rb]
			c.v8[l] = append(make([]byte, 0, newCap*rb), c.v8[l][:c.n*rb]...)[:newCap*rb]
		} else if c.typ == KVF16 {
			c.k16[l] = append(make([]uint16, 0, newCap*kv), c.k16[l][:c.n*kv]...)[:newCap*kv]
			c.v16[l] = append(make([]uint16, 0, newCap*kv), c.v16[l][:c.n*kv]...)[:newCap*kv]
		} else {
			c.k32[l] = append(make([]float32, 0, newCap*kv), c.k32[l][:c.n*kv]...)[:newCap*kv]
			c.v32[l] = append(make([]float32, 0, newCap*kv), c.v32[l][:c.n*kv]...)[:newCap*kv]
		}
	}
	c.capLen = newCap
}

// buffers are the forward pass's work areas, sized for the largest batch
// seen so far.
type buffers struct {
	cap      int       // rows the buffers below hold
	x, xb    []float32 // residual stream, normed input   [rows × Embd]
	q, att   []float32 // queries, attention output      [rows × QDim]
	k, v     []float32 // new keys and values            [rows × KVDim]
	proj     []float32 // projection output              [rows × Embd]
	gate, up []float32 //                                 [rows × FFN]
	cos, sin []float32 // RoPE angles                     [rows × Dims/2]
	runM     []float32 // attention running max and sum   [rows × Heads]
	runS     []float32
	qq       []byte    // KVQ8_0: queries rounded to Q8_0 [rows × QDim/32 blocks]
	logits   []float32 // logits of product calls shared by several pieces
	logits1  []float32 // Forward's result
	mm       tensor.Scratch

	// The pass's bookkeeping (step.go), reused from call to call.
	tokens   []int32
	jobs     []job
	pieces   []piece
	counts   []int
	rows     []int
	spans    []span
	attnJobs []attnJob
	attnEnds []int
	attn     attnBatch
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func (b *buffers) ensure(cfg *Config, rows int) {
	if rows <= b.cap {
		return
	}
	b.cap = rows
	b.x = grow(b.x, rows*cfg.Embd)
	b.xb = grow(b.xb, rows*cfg.Embd)
	b.proj = grow(b.proj, rows*cfg.Embd)
	b.q = grow(b.q, rows*cfg.QDim())
	b.att = grow(b.att, rows*cfg.QDim())
	b.k = grow(b.k, rows*cfg.KVDim())
	b.v = grow(b.v, rows*cfg.KVDim())
	b.gate = grow(b.gate, rows*cfg.FFN)
	b.up = grow(b.up, rows*cfg.FFN)
	b.cos = grow(b.cos, rows*cfg.Rope.Dims/2)
	b.sin = grow(b.sin, rows*cfg.Rope.Dims/2)
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
	for l := range c.model.Config.Layers {
		switch c.typ {
		case KVQ8_0:
			c.k8[l], c.v8[l] = nil, nil
		case KVF16:
			c.k16[l], c.v16[l] = nil, nil
		default:
			c.k32[l], c.v32[l] = nil, nil
		}
	}
	c.n, c.capLen, c.buf = 0, 0, buffers{}
}
