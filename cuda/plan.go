package cuda

import (
	"fmt"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tensor"
)

// Supported lists the weight types the kernels multiply.
var supported = []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeBF16, gguf.TypeF32}

// quantized reports whether a weight type multiplies int8 activations
// (rounded in blocks of 32) rather than float32 ones.
func quantized(t gguf.Type) bool {
	switch t {
	case gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ8_0:
		return true
	}
	return false
}

func supportedType(t gguf.Type) bool {
	for _, s := range supported {
		if s == t {
			return true
		}
	}
	return false
}

// The most tokens one GEMV launch takes; larger batches of a quantized
// matrix go to the tiled GEMM (float matrices loop over GEMV launches).
const gemvMaxTokens = 8

// Split-K decode attention: a sequence with at most splitMaxQueries new
// tokens spreads its positions over at most maxSplits blocks per head, each
// at least splitMinChunk positions long.
const (
	splitMaxQueries = 4
	maxSplits       = 64
	splitMinChunk   = 256
)

// A plan is what NewBackend checks before it touches device memory: every
// tensor's type and shape, the cache length, and the device memory the
// weights and work buffers need.
type plan struct {
	cfg     llama.Config
	rope    *rope.Config // the rotation of every RoPE layer; nil: none rotates
	batch   int
	context int

	mats      []*tensor.Matrix // every matrix to upload, in upload order
	normBytes int64            // RMSNorm weights (float32)
	weights   int64            // bytes of mats plus norms
	work      int64            // bytes of the work buffers for batch tokens
}

// Features lists the architecture features (llama.Arch.Features) the CUDA
// kernels implement; a model using any other is refused at NewBackend with
// an error naming it.
func Features() []string { return []string{"nope", "rope neox", "rope scaling", "rope factors"} }

// newPlan checks w against what the kernels run and sizes the upload.
func newPlan(w *llama.Weights, opts Options) (*plan, error) {
	if w == nil {
		return nil, fmt.Errorf("cuda: no model")
	}
	cfg := w.Config
	if err := w.Arch.Unsupported("cuda", Features()...); err != nil {
		return nil, err
	}
	var r0 *rope.Config
	for l, ly := range w.Arch.Layers {
		at := ly.Attention()
		if at == nil || ly.GLU() == nil {
			return nil, fmt.Errorf("cuda: architecture %s: layer %d is not attention and a dense feed-forward, the one block the CUDA kernels run", w.Arch.Name, l)
		}
		switch {
		case at.Rope == nil:
		case r0 == nil:
			r0 = at.Rope
		case at.Rope != r0:
			return nil, fmt.Errorf("cuda: architecture %s rotates layer %d differently from layer 0; the CUDA backend takes one rotation for all layers", w.Arch.Name, l)
		}
	}
	p := &plan{cfg: cfg, batch: opts.BatchSize, context: opts.Context}
	if p.batch == 0 {
		p.batch = llama.DefaultBatchSize
	}
	if p.context == 0 {
		p.context = cfg.Context
	}
	switch {
	case opts.KVType != backend.KVF16:
		return nil, fmt.Errorf("cuda: KV cache type %q: the CUDA backend keeps its cache in f16 only", opts.KVType)
	case p.batch < 1:
		return nil, fmt.Errorf("cuda: batch size %d: must be at least 1", p.batch)
	case p.context < 1 || p.context > cfg.Context:
		return nil, fmt.Errorf("cuda: context %d: must be in [1, %d] (the model's context)", p.context, cfg.Context)
	case cfg.HeadDim%32 != 0 || cfg.HeadDim > 128:
		return nil, fmt.Errorf("cuda: head size %d: the attention kernels need a multiple of 32 up to 128", cfg.HeadDim)
	case r0 != nil && r0.Dims > cfg.HeadDim:
		return nil, fmt.Errorf("cuda: RoPE dimension count %d exceeds the head size %d", r0.Dims, cfg.HeadDim)
	}
	p.rope = r0
	add := func(m *tensor.Matrix, rows, cols int) error {
		if m == nil {
			return fmt.Errorf("cuda: a model tensor is missing")
		}
		if !supportedType(m.Type) {
			return fmt.Errorf("cuda: tensor %s has type %v; the CUDA kernels multiply %v", m.Name, m.Type, supported)
		}
		if m.Rows != rows || m.Cols != cols {
			return fmt.Errorf("cuda: tensor %s is %dx%d, want %dx%d", m.Name, m.Rows, m.Cols, rows, cols)
		}
		if quantized(m.Type) && m.Cols%32 != 0 {
			return fmt.Errorf("cuda: tensor %s has %d columns, not a multiple of 32", m.Name, m.Cols)
		}
		p.mats = append(p.mats, m)
		p.weights += int64(len(m.Data))
		return nil
	}
	E, Q, KV, F := cfg.Embd, cfg.QDim(), cfg.KVDim(), cfg.FFN
	for l := range cfg.Layers {
		w := &w.Layers[l]
		at, ffn := w.Attention, w.GLU
		if at == nil || ffn == nil {
			return nil, fmt.Errorf("cuda: layer %d: the attention or feed-forward weights are missing", l)
		}
		for _, m := range []struct {
			m          *tensor.Matrix
			rows, cols int
		}{{at.Q, Q, E}, {at.K, KV, E}, {at.V, KV, E}, {at.O, E, Q}, {ffn.Gate, F, E}, {ffn.Up, F, E}, {ffn.Down, E, F}} {
			if err := add(m.m, m.rows, m.cols); err != nil {
				return nil, fmt.Errorf("%w (layer %d)", err, l)
			}
		}
		p.normBytes += int64(4 * (len(w.AttnNorm) + len(w.FFNNorm)))
	}
	if err := add(w.Output, cfg.Vocab, E); err != nil {
		return nil, err
	}
	p.normBytes += int64(4 * len(w.OutNorm))
	p.weights += p.normBytes
	p.work = workBytes(cfg, p.batch)
	return p, nil
}

// workBytes is the device memory of the work buffers for batch tokens (see
// work in backend.go; logits rows beyond gemvMaxTokens are allocated on
// demand and not counted).
func workBytes(c llama.Config, batch int) int64 {
	B := int64(batch)
	E, Q, KV, F := int64(c.Embd), int64(c.QDim()), int64(c.KVDim()), int64(c.FFN)
	maxK := max(E, Q, F)
	f32 := 4 * B * (2*E + 2*Q + 2*KV + 2*F)                                   // x, xn, q, att, k, v, gate, up
	act := B*maxK + 2*4*B*maxK/32                                             // int8 activations, scales and sums
	meta := 4 * B * int64(2+c.Rope.Dims)                                      // positions, rows, cos, sin
	part := 4 * int64(splitMaxQueries*c.Heads*maxSplits) * int64(c.HeadDim+2) // split-K partials
	logits := 4 * int64(gemvMaxTokens) * int64(c.Vocab)
	return f32 + act + meta + part + logits
}

// fits reports whether the model (and one cache of the full context) fits
// in total bytes of device memory.
func (p *plan) fits(total int64, dev int, name string) error {
	cache := p.cfg.KVBytes(llama.KVF16, p.context)
	need := p.weights + p.work + cache
	if need > total {
		return fmt.Errorf("cuda: the model needs %s of device memory (weights %s, work buffers %s, one %d-position f16 cache %s) but cuda:%d (%s) has %s",
			mib(need), mib(p.weights), mib(p.work), p.context, mib(cache), dev, name, mib(total))
	}
	return nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
