package llama

import (
	"errors"
	"fmt"
	"slices"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/bigmem"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tensor"
)

// CPU runs a model's Weights on the CPU: the block of Arch, once for every
// architecture, over a pool of threads, with the weights in their stored
// types (the file's memory mapping, or an interleaved copy of some matrices,
// see backend.Options.KeepLayout). It is safe for concurrent use by several
// goroutines, each with its own Cache.
type CPU struct {
	Config Config // read-only after NewCPU
	Arch   Arch   // read-only after NewCPU

	w    *Weights
	pool *tensor.Pool
	// sharedPool: pool, embd and output are another runner's (an MTP
	// block's runner shares its model's), which Close leaves alone.
	sharedPool bool
	batch      int
	embd       *tensor.Matrix
	output     *tensor.Matrix // output.weight, or token_embd.weight when tied
	outNorm    []float32
	layers     []LayerWeights // the weights', with this runner's own matrices where interleaved
	steps      []layerSteps   // per layer: its mixer's and FFN's CPU steps, over layers

	ropes     []*rope.Config // the distinct rotations of the layers
	layerRope []int          // per layer: its index in ropes, or -1 (NoPE)

	interleaved []*tensor.Matrix // matrices with an interleaved copy (see interleave)

	cls [][]float32 // the classification head's rows, dequantized (Weights.ClsOut), nil without
}

// New reads a plain llama model from an open GGUF file (ConfigFromGGUF,
// the plain block of Plain) and runs it on the CPU: a shortcut for tests
// and tools. A family describes its own block (an Arch, NoPE layers
// included, is data) and calls LoadWeights and NewBackend, or NewCPU.
func New(f *gguf.File, opts Options) (*CPU, error) {
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	w, err := LoadWeights(f, cfg, Plain(cfg.Arch, cfg))
	if err != nil {
		return nil, err
	}
	return NewCPU(w, opts)
}

// NewCPU makes a CPU runner for w, as LoadWeights returned it (and
// checked it against its description), with opts' Threads, BatchSize and
// KeepLayout: it interleaves some of w's matrices in this runner's own
// copies unless opts.KeepLayout (w itself is not changed). The caches'
// type and length are each cache's (CacheOptions; NewBackend passes opts'
// KVType and Context to the caches of the backend it makes). Close the
// runner to stop its threads and free the copies; the file must stay open
// while it runs.
func NewCPU(w *Weights, opts Options) (*CPU, error) { return newCPU(w, opts, nil) }

// newCPU is NewCPU; with a trunk, the runner shares the trunk's threads
// and its copies of the embedding and output projection (w's are the
// trunk's weights' own): a model's MTP block (mtp.go).
func newCPU(w *Weights, opts Options, trunk *CPU) (*CPU, error) {
	if err := opts.Check(); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if opts.Device != "" && opts.Device != "cpu" {
		return nil, fmt.Errorf("llama: NewCPU runs on the CPU, not on %q (NewBackend picks the device)", opts.Device)
	}
	m := &CPU{Config: w.Config, Arch: w.Arch, w: w, batch: opts.BatchSize,
		embd: w.Embd, output: w.Output, outNorm: w.OutNorm}
	for _, lw := range w.Layers {
		m.layers = append(m.layers, lw.clone())
	}
	if m.batch == 0 {
		m.batch = DefaultBatchSize
	}
	for _, l := range w.Arch.Layers {
		i := -1
		if r := l.rope(); r != nil {
			i = slices.Index(m.ropes, r)
			if i < 0 {
				i = len(m.ropes)
				m.ropes = append(m.ropes, r)
			}
		}
		m.layerRope = append(m.layerRope, i)
	}
	if c := w.ClsOut; c != nil {
		for r := range c.Rows {
			row := make([]float32, c.Cols)
			if err := c.Row(r, row); err != nil {
				return nil, fmt.Errorf("llama: %w", err)
			}
			m.cls = append(m.cls, row)
		}
	}
	if trunk != nil {
		m.pool, m.sharedPool = trunk.pool, true
		m.embd, m.output = trunk.embd, trunk.output
		opts.KeepLayout = trunk.interleaved == nil
	} else {
		m.pool = tensor.NewPool(opts.Threads)
	}
	if !opts.KeepLayout {
		if err := m.interleave(); err != nil {
			if !m.sharedPool {
				m.pool.Close()
			}
			return nil, fmt.Errorf("llama: %w", err)
		}
	}
	// The steps read the runner's matrices, interleaved or not.
	for l, ly := range w.Arch.Layers {
		mix, err := ly.Mixer.newStep(m, l, &m.layers[l])
		if err == nil {
			var ffn sublayer
			ffn, err = ly.FFN.newStep(m, l, &m.layers[l])
			m.steps = append(m.steps, layerSteps{mixer: mix, ffn: ffn})
		}
		if err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// layerSteps are a layer's mixer and FFN steps on the CPU.
type layerSteps struct{ mixer, ffn sublayer }

// interleave gives every matrix the CPU's kernels want interleaved its
// interleaved copy, in memory outside the Go heap (freed by Close), the
// matrices shared out among the pool's threads. The file's pages of those
// matrices then leave the resident set (the products no longer read them).
func (m *CPU) interleave() error {
	var ms []*tensor.Matrix
	// own replaces a matrix of the weights by this runner's copy of it,
	// the copy to be interleaved.
	own := func(x **tensor.Matrix) {
		if (*x).InterleaveBytes() == 0 {
			return
		}
		c := **x
		*x = &c
		ms = append(ms, *x)
	}
	if !m.sharedPool { // else the trunk's output, interleaved or not
		own(&m.output) // tied or not: embedding lookups read m.embd's Data, as stored
	}
	for i := range m.layers {
		for _, x := range m.layers[i].matrices() {
			own(x)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	j := &interleaveJob{file: m.w.File, ms: ms, errs: make([]error, len(ms))}
	m.pool.Run(len(ms), 1, j)
	m.interleaved = ms
	if err := errors.Join(j.errs...); err != nil {
		m.freeInterleaved()
		return err
	}
	return nil
}

// freeInterleaved returns the matrices to the file's layout and frees
// their interleaved copies.
func (m *CPU) freeInterleaved() {
	for _, x := range m.interleaved {
		bigmem.Free(x.Uninterleave())
	}
	m.interleaved = nil
}

type interleaveJob struct {
	file *gguf.File
	ms   []*tensor.Matrix
	errs []error
}

func (j *interleaveJob) Do(lo, hi int) {
	for i := lo; i < hi; i++ {
		x := j.ms[i]
		dst, err := bigmem.Alloc(x.InterleaveBytes())
		if err == nil {
			if err = x.Interleave(dst); err != nil {
				bigmem.Free(dst)
			} else {
				j.file.DropPages(x.Data)
			}
		}
		j.errs[i] = err
	}
}

// Close stops the model's worker threads. It does not close the GGUF file.
// Call it only after every Forward has returned.
func (m *CPU) Close() error {
	if !m.sharedPool {
		m.pool.Close()
	}
	m.freeInterleaved()
	return nil
}

// Threads is the number of threads each matrix product uses.
func (m *CPU) Threads() int { return m.pool.Threads() }

// Weights returns the weights the runner computes with (in the file's
// layout; the runner's interleaved copies are its own).
func (m *CPU) Weights() *Weights { return m.w }

// RotatesLayer reports whether layer i applies RoPE to q and k.
func (m *CPU) RotatesLayer(i int) bool { return m.layerRope[i] >= 0 }

// TiedEmbeddings reports whether the output projection is token_embd.weight.
func (m *CPU) TiedEmbeddings() bool { return m.w.Tied() }

// Labels is the number of scores of the model's classification head
// (Weights.ClsOut), 0 without one.
func (m *CPU) Labels() int { return len(m.cls) }

// Classify runs the classification head on one final hidden state (the
// output norm of a sequence's last token, Seq.Hidden): out[l] is row l of
// cls.output dotted with it, plus the bias, then a softmax over the labels
// when Arch.RankSoftmax. It is safe for concurrent use.
func (m *CPU) Classify(hidden, out []float32) error {
	if len(m.cls) == 0 {
		return fmt.Errorf("llama: %s has no classification head (cls.output.weight)", m.Arch.Name)
	}
	if len(hidden) != m.Config.Embd || len(out) != len(m.cls) {
		return fmt.Errorf("llama: classifying %d values into %d scores; the head takes %d into %d", len(hidden), len(out), m.Config.Embd, len(m.cls))
	}
	for l, row := range m.cls {
		var s float64
		for j, w := range row {
			s += float64(w) * float64(hidden[j])
		}
		out[l] = float32(s)
		if m.w.ClsOutBias != nil {
			out[l] += m.w.ClsOutBias[l]
		}
	}
	if m.Arch.RankSoftmax {
		return tensor.Softmax(out)
	}
	return nil
}
