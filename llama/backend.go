package llama

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/smolgo/smolgo/backend"
)

// AsBackend returns m as a backend.Backend whose caches are made with opts:
// Step runs one forward pass over all the sequences of a batch (continuous
// batching), reading each weight once per pass for all of them, with
// per-sequence KV caches, positions and attention. One Step takes up to
// opts.BatchSize tokens in a pass (0: the runner's batch size); a batch of
// more runs in several passes, each sequence cut at multiples of the batch
// size as Forward cuts it.
//
// A sequence's logits are bit for bit those Forward gives it alone
// (step.go explains how), so batching changes no output. Two limits: the
// AVX-512 kernels of q4_0 weights, and of q8_0 rows of an odd number of
// blocks, still round differently with one row and with several (see
// quant.MatMulFunc); and a chunk of 24 or more tokens has its logits
// computed as Forward's only when it asks for one row or all of them.
//
// Its caches implement backend.Snapshotter, backend.Persister,
// backend.Shifter, backend.Rewinder and backend.Checkpointer. With
// sliding-window layers, whose caches are rings, a cache cannot go back to
// positions a ring has overwritten (Floor) and Shift refuses with
// backend.ErrCannotShift where the shortened sequence's window needs them
// (Cache.Shift), so that the engine recomputes instead; a recurrent
// layer's cache goes back only to its checkpoints and never shifts.
// Steady-state steps allocate nothing: the work buffers belong to the
// backend and are reused (Step is called from one goroutine at a time, as
// backend.Backend requires).
//
// The backend does not own m: close m after the backend is no longer used.
// NewBackend, which makes the runner too, is the way a model gets its
// backend; AsBackend is for a program that also calls m.Forward.
func (m *CPU) AsBackend(opts CacheOptions) (backend.Backend, error) {
	return newCPUBackend(m, opts)
}

func newCPUBackend(m *CPU, opts CacheOptions) (*cpuBackend, error) {
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("llama: negative batch size %d", opts.BatchSize)
	}
	b := &cpuBackend{m: m, batch: opts.BatchSize}
	if b.batch == 0 {
		b.batch = m.batch
	}
	b.kv = CacheOptions{KVType: opts.KVType, Context: opts.Context, BatchSize: max(b.batch, m.batch)}
	// Check the options once, by making a cache.
	if _, err := m.NewCache(b.kv); err != nil {
		return nil, err
	}
	return b, nil
}

// cpuBackend is a CPU runner as a backend.Backend.
type cpuBackend struct {
	m     *CPU
	owns  bool // Close closes m (the device registry made it)
	kv    CacheOptions
	batch int
	work  buffers
	step  uint64 // counts Steps: marks the caches already in the batch
}

func (b *cpuBackend) Vocab() int     { return b.m.Config.Vocab }
func (b *cpuBackend) BatchSize() int { return b.batch }

// HiddenDim implements backend.HiddenStates: Step fills Seq.Hidden with
// the output norm of the rows asked for (bit for bit what the logits are
// projected from).
func (b *cpuBackend) HiddenDim() int { return b.m.Config.Embd }

// Labels implements backend.Classifier: the classification head's
// scores, 0 when the model has none.
func (b *cpuBackend) Labels() int { return b.m.Labels() }

// Classify implements backend.Classifier (CPU.Classify).
func (b *cpuBackend) Classify(hidden, out []float32) error { return b.m.Classify(hidden, out) }

// CPU returns the runner the backend steps.
func (b *cpuBackend) CPU() *CPU { return b.m }

// Close stops the runner's threads when the backend made it (NewBackend
// with the cpu device); a backend of (*CPU).AsBackend leaves it running.
func (b *cpuBackend) Close() error {
	if b.owns {
		return b.m.Close()
	}
	return nil
}

func (b *cpuBackend) NewCache() (backend.Cache, error) {
	c, err := b.m.NewCache(b.kv)
	if err != nil {
		return nil, err
	}
	return b.wrap(c), nil
}

// Step implements backend.Backend.
func (b *cpuBackend) Step(ctx context.Context, batch []backend.Seq) error {
	w := &b.work
	b.step++
	V, E := b.m.Config.Vocab, b.m.Config.Embd
	jobs := w.jobs[:0]
	for i, s := range batch {
		c, ok := asSeqCache(s.Cache)
		switch {
		case !ok || c.b != b:
			return fmt.Errorf("llama: sequence %d: a cache this backend did not make", i)
		case c.closed:
			return fmt.Errorf("llama: sequence %d: the cache is closed", i)
		case c.step == b.step:
			return fmt.Errorf("llama: sequence %d: its cache is already in the batch", i)
		case len(s.Tokens) == 0:
			return fmt.Errorf("llama: sequence %d: no tokens", i)
		case len(s.Logits)%V != 0 || len(s.Logits) > len(s.Tokens)*V:
			return fmt.Errorf("llama: sequence %d: %d logits is not a whole number of rows of %d for at most %d tokens", i, len(s.Logits), V, len(s.Tokens))
		case len(s.Hidden)%E != 0 || len(s.Hidden) > len(s.Tokens)*E:
			return fmt.Errorf("llama: sequence %d: %d hidden values is not a whole number of rows of %d for at most %d tokens", i, len(s.Hidden), E, len(s.Tokens))
		case c.n+len(s.Tokens) > c.maxLen:
			return fmt.Errorf("llama: sequence %d: %d cached + %d new tokens exceed the cache length %d: %w", i, c.n, len(s.Tokens), c.maxLen, ErrContextFull)
		case c.recurrent() && !c.valid:
			return fmt.Errorf("llama: sequence %d: %w", i, errInterrupted)
		case c.recurrent() && s.Bidirectional:
			return fmt.Errorf("llama: sequence %d: rows attending both ways in a model with recurrent layers", i)
		}
		in, err := b.input(i, s)
		if err != nil {
			return err
		}
		if in.embeds == nil {
			for k, t := range s.Tokens {
				if t < 0 || int(t) >= V {
					return fmt.Errorf("llama: sequence %d: token %d at index %d is outside the vocabulary [0, %d)", i, t, k, V)
				}
			}
		}
		c.step = b.step
		jobs = append(jobs, job{c: c.Cache, tokens: s.Tokens, out: s.Logits, hidden: s.Hidden, in: in})
	}
	w.jobs = jobs
	if err := ctx.Err(); err != nil {
		return err
	}
	err := b.m.run(ctx, w, jobs, b.batch)
	clear(jobs) // drop the references to the callers' memory
	clear(w.pieces[:cap(w.pieces)])
	return err
}

// EmbedWidth implements backend.Embedder: input rows (Seq.Embeds) are
// Embd wide, (1 + Arch.Deepstack) × Embd with deepstack slices.
func (b *cpuBackend) EmbedWidth() int { return b.m.inputWidth() }

// MRoPE implements backend.Embedder: whether a layer's rotation has M-RoPE
// sections (Seq.Pos's Y and X count).
func (b *cpuBackend) MRoPE() bool {
	for _, r := range b.m.ropes {
		if r.MRoPE() {
			return true
		}
	}
	return false
}

// input checks sequence i's rows given in place of tokens (Seq.Embeds,
// Bidirectional, Pos) and returns them for its job.
func (b *cpuBackend) input(i int, s backend.Seq) (input, error) {
	n, E := len(s.Tokens), b.m.inputWidth()
	in := input{embeds: s.Embeds, bidi: s.Bidirectional, pos: s.Pos}
	switch {
	case s.Embeds != nil && len(s.Embeds) != n*E:
		return in, fmt.Errorf("llama: sequence %d: %d input values for %d rows of %d", i, len(s.Embeds), n, E)
	case s.Pos != nil && len(s.Pos) != n:
		return in, fmt.Errorf("llama: sequence %d: %d positions for %d rows", i, len(s.Pos), n)
	case s.Bidirectional && n > b.batch:
		return in, fmt.Errorf("llama: sequence %d: %d rows attending both ways exceed the batch size %d (they must run in one pass)", i, n, b.batch)
	}
	for k, v := range s.Embeds {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return in, fmt.Errorf("llama: sequence %d: input value %d is %v", i, k, v)
		}
	}
	return in, nil
}

// seqCache is a Cache made by a backend, as a backend.Cache.
type seqCache struct {
	*Cache
	b      *cpuBackend
	step   uint64 // the last Step that took it
	closed bool
}

// recurrentCache is the seqCache of a model with recurrent layers, which
// goes back only to the lengths it kept: a backend.Checkpointer.
type recurrentCache struct{ *seqCache }

// wrap makes c a backend.Cache of b: a recurrentCache for a model with
// recurrent layers, else a seqCache.
func (b *cpuBackend) wrap(c *Cache) backend.Cache {
	sc := &seqCache{Cache: c, b: b}
	if c.recurrent() {
		return recurrentCache{sc}
	}
	return sc
}

// asSeqCache returns the seqCache a backend.Cache of this package is.
func asSeqCache(c backend.Cache) (*seqCache, bool) {
	switch c := c.(type) {
	case *seqCache:
		return c, true
	case recurrentCache:
		return c.seqCache, true
	}
	return nil, false
}

// Floor implements backend.Rewinder (see Cache.Floor).
func (c *seqCache) Floor(n int) int {
	if c.closed {
		return 0
	}
	return c.Cache.Floor(n)
}

// Checkpoint implements backend.Checkpointer (see Cache.Checkpoint).
func (c recurrentCache) Checkpoint() error {
	if c.closed {
		return fmt.Errorf("llama: checkpoint of a closed cache")
	}
	return c.Cache.Checkpoint()
}

// Close frees the cache's memory; the backend refuses it afterwards.
func (c *seqCache) Close() error {
	if !c.closed {
		c.closed = true
		c.release()
	}
	return nil
}

// Clone implements backend.Snapshotter.
func (c *seqCache) Clone(n int) (backend.Cache, error) {
	if c.closed {
		return nil, fmt.Errorf("llama: cloning a closed cache")
	}
	d, err := c.Cache.Clone(n)
	if err != nil {
		return nil, err
	}
	return c.b.wrap(d), nil
}

// CopyFrom implements backend.Snapshotter: src must be a cache of the same
// backend.
func (c *seqCache) CopyFrom(src backend.Cache, from, to int) error {
	s, ok := asSeqCache(src)
	switch {
	case !ok || s.b != c.b:
		return fmt.Errorf("llama: copying from a cache another backend made")
	case c.closed || s.closed:
		return fmt.Errorf("llama: copying with a closed cache")
	}
	return c.Cache.CopyFrom(s.Cache, from, to)
}

// SaveTo implements backend.Persister (see Cache.SaveTo).
func (c *seqCache) SaveTo(w io.Writer) error {
	if c.closed {
		return fmt.Errorf("llama: saving a closed cache")
	}
	return c.Cache.SaveTo(w)
}

// LoadFrom implements backend.Persister (see Cache.LoadFrom).
func (c *seqCache) LoadFrom(r io.Reader, n int) error {
	if c.closed {
		return fmt.Errorf("llama: loading into a closed cache")
	}
	return c.Cache.LoadFrom(r, n)
}

// Shift implements backend.Shifter (see Cache.Shift).
func (c *seqCache) Shift(keep, drop int) error {
	if c.closed {
		return fmt.Errorf("llama: shifting a closed cache")
	}
	return c.Cache.Shift(keep, drop)
}

// Truncate implements backend.Cache (see Cache.Truncate).
func (c *seqCache) Truncate(n int) error {
	if c.closed {
		return fmt.Errorf("llama: truncating a closed cache")
	}
	return c.Cache.Truncate(n)
}
