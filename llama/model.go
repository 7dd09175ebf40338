package llama

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/bigmem"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tensor"
)

// Options tune how a Model is built. The zero value is a good default.
type Options struct {
	// Threads is the number of threads that share each matrix product;
	// 0 means runtime.NumCPU(). New rejects a negative count and one above
	// MaxThreads (each thread is a goroutine with its own work buffers).
	Threads int
	// NoPE marks layers that skip RoPE; nil rotates every layer (plain
	// llama). Its length, if not nil, must equal the layer count.
	NoPE rope.NoPE
	// BatchSize is the most tokens one pass through the layers takes
	// (llama.cpp's n_ubatch); longer prompts run in several passes, which
	// bounds the work buffers. 0 means DefaultBatchSize.
	BatchSize int
	// KeepLayout keeps every weight matrix in the file's layout. By default
	// New gives the matrices whose type the CPU's kernels interleave (q4_K
	// and q6_K on AVX2) an interleaved copy (tensor.Matrix.Interleave),
	// outside the Go heap, and drops the file's pages of them from memory
	// (gguf.File.DropPages): decode steps of several sequences and prefill
	// run faster, and loading takes longer (1.6-2.3 s for a 3B Q4_K_M on
	// two Zen 3 cores). A backend that computes elsewhere (a GPU) sets it.
	KeepLayout bool
}

// DefaultBatchSize is the default micro-batch size, llama.cpp's n_ubatch.
const DefaultBatchSize = 512

// MaxThreads bounds Options.Threads, as engine.MaxThreads bounds the
// engine's: far more cores than any machine this runs on has.
const MaxThreads = 1024

// Model is a llama-family transformer whose weights stay in their stored
// types, in the GGUF file's memory mapping or an interleaved copy of it
// (see Options.KeepLayout). It is safe for concurrent use by several
// goroutines, each with its own Cache.
type Model struct {
	Config Config // read-only after New

	file    *gguf.File
	pool    *tensor.Pool
	batch   int
	nope    rope.NoPE
	embd    *tensor.Matrix
	output  *tensor.Matrix // output.weight, or token_embd.weight when tied
	outNorm []float32
	layers  []LayerWeights

	interleaved []*tensor.Matrix // matrices with an interleaved copy (see interleave)
}

// LayerWeights are one transformer block's tensors as New found them: the
// matrices' Data are views of the file's memory mapping (their products may
// read an interleaved copy, see Options.KeepLayout) and the norm weights are
// read once at load. They are shared, read-only data; a backend that runs the
// model elsewhere (a GPU) uploads them from here.
type LayerWeights struct {
	AttnNorm, FFNNorm []float32      // RMSNorm weights [Embd]
	Q, K, V, O        *tensor.Matrix // attention projections
	Gate, Up, Down    *tensor.Matrix // feed-forward (SwiGLU)
}

// New builds a model over an open GGUF file: it reads the config, checks
// the shape and type of every tensor it needs against it (errors name the
// tensor), and wraps the weights in place (interleaving some unless
// opts.KeepLayout, see Options). The file must stay open while the model is
// used; Model.Close does not close it but frees the interleaved copies.
//
// When the file has no output.weight the output projection is
// token_embd.weight itself (tied embeddings), as in llama.cpp.
func New(f *gguf.File, opts Options) (*Model, error) {
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	if opts.NoPE != nil && len(opts.NoPE) != cfg.Layers {
		return nil, fmt.Errorf("llama: NoPE mask has %d layers, the model %d", len(opts.NoPE), cfg.Layers)
	}
	if _, ok := f.Tensor("rope_freqs.weight"); ok {
		return nil, fmt.Errorf("llama: tensor rope_freqs.weight (per-frequency RoPE factors) is not supported")
	}
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("llama: negative batch size %d", opts.BatchSize)
	}
	if opts.Threads < 0 || opts.Threads > MaxThreads {
		return nil, fmt.Errorf("llama: %d threads; use 1 to %d (0 for one per CPU)", opts.Threads, MaxThreads)
	}
	m := &Model{Config: cfg, file: f, nope: opts.NoPE, batch: opts.BatchSize}
	if m.batch == 0 {
		m.batch = DefaultBatchSize
	}
	ld := loader{f: f}
	m.embd = ld.matrix("token_embd.weight", cfg.Embd, cfg.Vocab)
	if _, ok := f.Tensor("output.weight"); ok {
		m.output = ld.matrix("output.weight", cfg.Embd, cfg.Vocab)
	} else {
		m.output = m.embd
	}
	m.outNorm = ld.vector("output_norm.weight", cfg.Embd)
	m.layers = make([]LayerWeights, cfg.Layers)
	for i := 0; i < len(m.layers) && ld.err == nil; i++ {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
		m.layers[i] = LayerWeights{
			AttnNorm: ld.vector(n("attn_norm"), cfg.Embd),
			Q:        ld.matrix(n("attn_q"), cfg.Embd, cfg.QDim()),
			K:        ld.matrix(n("attn_k"), cfg.Embd, cfg.KVDim()),
			V:        ld.matrix(n("attn_v"), cfg.Embd, cfg.KVDim()),
			O:        ld.matrix(n("attn_output"), cfg.QDim(), cfg.Embd),
			FFNNorm:  ld.vector(n("ffn_norm"), cfg.Embd),
			Gate:     ld.matrix(n("ffn_gate"), cfg.Embd, cfg.FFN),
			Up:       ld.matrix(n("ffn_up"), cfg.Embd, cfg.FFN),
			Down:     ld.matrix(n("ffn_down"), cfg.FFN, cfg.Embd),
		}
	}
	if ld.err != nil {
		return nil, fmt.Errorf("llama: %w", ld.err)
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
func (m *Model) interleave() error {
	var ms []*tensor.Matrix
	add := func(x *tensor.Matrix) {
		if x.InterleaveBytes() > 0 && !slices.Contains(ms, x) {
			ms = append(ms, x)
		}
	}
	add(m.output) // tied or not: embedding lookups read Data, as stored
	for _, l := range m.layers {
		for _, x := range []*tensor.Matrix{l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down} {
			add(x)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	j := &interleaveJob{file: m.file, ms: ms, errs: make([]error, len(ms))}
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
func (m *Model) freeInterleaved() {
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
func (m *Model) Close() error {
	m.pool.Close()
	m.freeInterleaved()
	return nil
}

// Threads is the number of threads each matrix product uses.
func (m *Model) Threads() int { return m.pool.Threads() }

// RotatesLayer reports whether layer i applies RoPE to q and k.
func (m *Model) RotatesLayer(i int) bool { return m.nope.Rotates(i) }

// TiedEmbeddings reports whether the output projection is token_embd.weight.
func (m *Model) TiedEmbeddings() bool { return m.output == m.embd }

// OutputTensor returns the output projection matrix (the embedding itself
// when tied). Its Data is the file's memory, not a copy.
func (m *Model) OutputTensor() *tensor.Matrix { return m.output }

// Embedding returns the token embedding matrix (token_embd.weight), a view
// of the file's memory.
func (m *Model) Embedding() *tensor.Matrix { return m.embd }

// OutputNorm returns the final RMSNorm's weights (output_norm.weight).
func (m *Model) OutputNorm() []float32 { return m.outNorm }

// Layer returns the weights of block i (0 <= i < Config.Layers), to read
// only.
func (m *Model) Layer(i int) LayerWeights { return m.layers[i] }

// loader collects the first error while wrapping tensors.
type loader struct {
	f   *gguf.File
	err error
}

func (l *loader) info(name string, dims ...int) *gguf.TensorInfo {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("tensor %s is missing", name)
		return nil
	}
	ok = len(t.Dims) == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = t.Dims[i] == uint64(dims[i])
	}
	if !ok {
		l.err = fmt.Errorf("tensor %s has shape %v, the config needs %v", name, t.Dims, dims)
		return nil
	}
	return t
}

func (l *loader) data(t *gguf.TensorInfo) []byte {
	d := l.f.TensorData(t)
	if uint64(len(d)) != t.Size() {
		l.err = fmt.Errorf("tensor %s: data lies outside the file", t.Name)
		return nil
	}
	return d
}

func (l *loader) matrix(name string, cols, rows int) *tensor.Matrix {
	t := l.info(name, cols, rows)
	if t == nil {
		return nil
	}
	d := l.data(t)
	if d == nil {
		return nil
	}
	m, err := tensor.NewMatrix(name, t.Type, rows, cols, d)
	if err != nil {
		l.err = err
	}
	return m
}

// vector reads a 1-D f32 tensor (a norm weight) into a new slice. A NaN or
// infinite weight is an error naming the tensor and the element: it would
// turn every activation after it into NaN, and the logits into garbage that
// sampling cannot tell from a real answer.
func (l *loader) vector(name string, n int) []float32 {
	t := l.info(name, n)
	if t == nil {
		return nil
	}
	if t.Type != gguf.TypeF32 {
		l.err = fmt.Errorf("tensor %s has type %v, want f32", name, t.Type)
		return nil
	}
	d := l.data(t)
	if d == nil {
		return nil
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		if x := float64(v[i]); math.IsNaN(x) || math.IsInf(x, 0) {
			l.err = fmt.Errorf("tensor %s: element %d is %v; the file is corrupt", name, i, v[i])
			return nil
		}
	}
	return v
}
