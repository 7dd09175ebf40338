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

// Options tune how a CPU runner is built. The zero value is a good default.
type Options struct {
	// Threads is the number of threads that share each matrix product;
	// 0 means runtime.NumCPU(). NewCPU rejects a negative count and one above
	// MaxThreads (each thread is a goroutine with its own work buffers).
	Threads int
	// BatchSize is the most tokens one pass through the layers takes
	// (llama.cpp's n_ubatch); longer prompts run in several passes, which
	// bounds the work buffers. 0 means DefaultBatchSize.
	BatchSize int
	// KeepLayout keeps every weight matrix in the file's layout. By default
	// NewCPU gives the matrices whose type the CPU's kernels interleave (q4_K
	// and q6_K on AVX2 and AVX-512) an interleaved copy (tensor.Matrix.Interleave),
	// outside the Go heap, and drops the file's pages of them from memory
	// (gguf.File.DropPages): decode steps of several sequences and prefill
	// run faster, and loading takes longer (the copy is written once, by
	// the runner's threads; examples/bench's load_s with and without
	// -keep-layout measures both).
	KeepLayout bool
}

// DefaultBatchSize is the default micro-batch size, llama.cpp's n_ubatch.
const DefaultBatchSize = 512

// MaxThreads bounds Options.Threads, as engine.MaxThreads bounds the
// engine's: far more cores than any machine this runs on has.
const MaxThreads = 1024

// CPU runs a model's Weights on the CPU: the block of Arch, once for every
// architecture, over a pool of threads, with the weights in their stored
// types (the file's memory mapping, or an interleaved copy of some matrices,
// see Options.KeepLayout). It is safe for concurrent use by several
// goroutines, each with its own Cache.
type CPU struct {
	Config Config // read-only after NewCPU
	Arch   Arch   // read-only after NewCPU

	w       *Weights
	pool    *tensor.Pool
	batch   int
	embd    *tensor.Matrix
	output  *tensor.Matrix // output.weight, or token_embd.weight when tied
	outNorm []float32
	layers  []LayerWeights // the weights', with this runner's own matrices where interleaved

	ropes     []*rope.Config // the distinct rotations of the layers
	layerRope []int          // per layer: its index in ropes, or -1 (NoPE)

	interleaved []*tensor.Matrix // matrices with an interleaved copy (see interleave)

	cls [][]float32 // the classification head's rows, dequantized (Weights.ClsOut), nil without
}

// New reads a plain llama model from an open GGUF file (ConfigFromGGUF,
// the plain block of Plain, optionally NoPE layers) and runs it on the
// CPU: a shortcut for tests and tools. Families build their Arch and call
// LoadWeights and NewCPU themselves.
func New(f *gguf.File, opts Options, nope ...rope.NoPE) (*CPU, error) {
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	arch := Plain(cfg.Arch, cfg)
	if len(nope) > 0 && nope[0] != nil {
		if len(nope[0]) != cfg.Layers {
			return nil, fmt.Errorf("llama: NoPE mask has %d layers, the model %d", len(nope[0]), cfg.Layers)
		}
		for i := range arch.Layers {
			if !nope[0].Rotates(i) {
				arch.Layers[i].Rope = nil
			}
		}
	}
	w, err := LoadWeights(f, cfg, arch)
	if err != nil {
		return nil, err
	}
	return NewCPU(w, opts)
}

// NewCPU makes a CPU runner for w (interleaving some of its matrices in
// this runner's own copies unless opts.KeepLayout; w itself is not
// changed). Close it to stop its threads and free the copies; the file
// must stay open while it runs.
func NewCPU(w *Weights, opts Options) (*CPU, error) {
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("llama: negative batch size %d", opts.BatchSize)
	}
	if opts.Threads < 0 || opts.Threads > MaxThreads {
		return nil, fmt.Errorf("llama: %d threads; use 1 to %d (0 for one per CPU)", opts.Threads, MaxThreads)
	}
	if err := w.Arch.Validate(w.Config); err != nil {
		return nil, err
	}
	m := &CPU{Config: w.Config, Arch: w.Arch, w: w, batch: opts.BatchSize,
		embd: w.Embd, output: w.Output, outNorm: w.OutNorm, layers: slices.Clone(w.Layers)}
	if m.batch == 0 {
		m.batch = DefaultBatchSize
	}
	for _, l := range w.Arch.Layers {
		i := -1
		if l.Rope != nil {
			i = slices.Index(m.ropes, l.Rope)
			if i < 0 {
				i = len(m.ropes)
				m.ropes = append(m.ropes, l.Rope)
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
	m.pool = tensor.NewPool(opts.Threads)
	if !opts.KeepLayout {
		if err := m.interleave(); err != nil {
			m.pool.Close()
			return nil, fmt.Errorf("llama: %w", err)
		}
	}
	return m, nil
}

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
	own(&m.output) // tied or not: embedding lookups read m.embd's Data, as stored
	for i := range m.layers {
		l := &m.layers[i]
		for _, x := range []**tensor.Matrix{&l.Q, &l.K, &l.V, &l.O, &l.Gate, &l.Up, &l.Down} {
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
	m.pool.Close()
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
