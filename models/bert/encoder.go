package bert

import (
	"context"
	"fmt"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/tensor"
)

// Options are backend.Options, the engine's settings as they reach the
// device: NewEncoder reads Threads, BatchSize (raised to the model's
// position count when smaller, since a sequence is computed in one pass),
// KeepLayout (no packed copy of the F32 and F16 matrices for the float
// GEMM, tensor.Packed) and Context (the longest sequence, at most the
// model's positions; engine.WithContext). An encoder has no KV cache:
// KVType is not read. The zero value is a good default.
type Options = backend.Options

// Encoder runs a BERT model on the CPU: backend.Encoder. Every product runs
// over the rows of all the sequences of a pass at once (the prefill GEMM
// path), while attention stays inside each sequence. Encode is called from
// one goroutine at a time (the work buffers are the encoder's); the other
// methods from any.
type Encoder struct {
	cfg   Config
	w     *Weights
	pool  *tensor.Pool
	batch int
	// maxTokens is the longest sequence: the positions, or less.
	maxTokens int

	embd   linear // not a product: the token rows are looked up
	layers []layerOps
	cls    *linear // nil without the head's first projection
	clsOut *linear // nil without a head

	packed []byte // the packed copies of the F32/F16 matrices (Packed), nil without

	buf buffers
}

// layerOps are one block's products, each possibly packed.
type layerOps struct {
	qkv     *linear // Q, K and V fused into one product of 3·Embd rows, when they share a type
	q, k, v *linear // else each on its own
	o       *linear
	up      *linear
	down    *linear
}

// NewEncoder makes a CPU encoder for w. Close it to stop its threads; the
// file must stay open while it runs.
func NewEncoder(w *Weights, opts Options) (*Encoder, error) {
	cfg := w.Config
	if err := opts.Check(); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if opts.Device != "" && opts.Device != "cpu" {
		return nil, fmt.Errorf("bert: device %q: BERT runs on the CPU only", opts.Device)
	}
	e := &Encoder{cfg: cfg, w: w, batch: opts.BatchSize, maxTokens: cfg.Positions}
	if opts.Context > 0 {
		e.maxTokens = min(opts.Context, cfg.Positions)
	}
	if e.batch == 0 {
		e.batch = backend.DefaultBatchSize
	}
	e.batch = max(e.batch, e.maxTokens)
	var ps packer
	if !opts.KeepLayout {
		ps.on = canPack()
	}
	for _, l := range w.Layers {
		ops := layerOps{
			o:    ps.linear(l.O, l.OBias),
			up:   ps.linear(l.Up, l.UpBias),
			down: ps.linear(l.Down, l.DownBias),
		}
		if fused, ok := ps.fuse(l.Q, l.K, l.V, l.QBias, l.KBias, l.VBias); ok {
			ops.qkv = fused
		} else {
			ops.q, ops.k, ops.v = ps.linear(l.Q, l.QBias), ps.linear(l.K, l.KBias), ps.linear(l.V, l.VBias)
		}
		e.layers = append(e.layers, ops)
	}
	if w.ClsOut != nil {
		e.clsOut = &linear{m: w.ClsOut, bias: w.ClsOutBias}
		if w.Cls != nil {
			e.cls = &linear{m: w.Cls, bias: w.ClsBias}
		}
	}
	if err := ps.finish(w.File); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	e.packed = ps.mem
	e.pool = tensor.NewPool(opts.Threads)
	return e, nil
}

// Close stops the encoder's threads and frees its packed matrices. It does
// not close the file.
func (e *Encoder) Close() error {
	if e.pool != nil {
		e.pool.Close()
		e.pool = nil
	}
	freePacked(e.packed)
	e.packed = nil
	return nil
}

// Config returns the model's hyper-parameters.
func (e *Encoder) Config() Config { return e.cfg }

// Threads is the number of threads each product uses.
func (e *Encoder) Threads() int { return e.pool.Threads() }

// Vocab implements backend.Encoder.
func (e *Encoder) Vocab() int { return e.cfg.Vocab }

// Dim implements backend.Encoder: the hidden size.
func (e *Encoder) Dim() int { return e.cfg.Embd }

// Labels implements backend.Encoder: the classification head's outputs, 0
// without a head.
func (e *Encoder) Labels() int {
	if e.clsOut == nil {
		return 0
	}
	return e.cfg.Labels
}

// Pooling implements backend.Encoder: the file's pooling_type.
func (e *Encoder) Pooling() backend.Pooling { return e.cfg.Pooling }

// BatchSize implements backend.Encoder.
func (e *Encoder) BatchSize() int { return e.batch }

// MaxTokens implements backend.Encoder: the position table's length, or
// Options.Context.
func (e *Encoder) MaxTokens() int { return e.maxTokens }

// seqSpan is one sequence's rows in a pass and which of them the last layer
// must compute (out rows): all of them for mean pooling, one otherwise.
type seqSpan struct {
	row, n        int // rows [row, row+n) of the pass
	outRow        int // the first of the sequence's rows in the attention output (its last-layer rows in the last layer)
	scratch       int // where its heads' attention scratch starts in buffers.sc
	pool          backend.Pooling
	out           []float32
	attnLo, attnN int // query rows of the sequence attention computes: [attnLo, attnLo+attnN) within the sequence
}

// Encode implements backend.Encoder.
func (e *Encoder) Encode(ctx context.Context, batch []backend.EncodeSeq) error {
	if e.pool == nil {
		return errClosed
	}
	b := &e.buf
	b.seqs = b.seqs[:0]
	n, outs := 0, 0
	for i, s := range batch {
		if len(s.Tokens) == 0 {
			return fmt.Errorf("bert: sequence %d has no tokens", i)
		}
		if len(s.Tokens) > e.maxTokens {
			return fmt.Errorf("bert: sequence %d has %d tokens, more than the model's limit of %d: %w", i, len(s.Tokens), e.maxTokens, backend.ErrContextFull)
		}
		for k, t := range s.Tokens {
			if t < 0 || int(t) >= e.cfg.Vocab {
				return fmt.Errorf("bert: sequence %d: token %d at index %d is outside the vocabulary [0, %d)", i, t, k, e.cfg.Vocab)
			}
		}
		want := e.cfg.Embd
		switch s.Pooling {
		case backend.PoolMean, backend.PoolCLS, backend.PoolLast:
		case backend.PoolRank:
			if e.clsOut == nil {
				return fmt.Errorf("bert: sequence %d asks for rank pooling, but the model has no classification head (cls.output.weight)", i)
			}
			want = e.cfg.Labels
		default:
			return fmt.Errorf("bert: sequence %d: pooling %v is not one of mean, cls, last and rank", i, s.Pooling)
		}
		if len(s.Out) != want {
			return fmt.Errorf("bert: sequence %d: output of %d values, want %d (%v pooling)", i, len(s.Out), want, s.Pooling)
		}
		sp := seqSpan{row: n, n: len(s.Tokens), pool: s.Pooling, out: s.Out, outRow: outs}
		switch s.Pooling {
		case backend.PoolMean:
			sp.attnLo, sp.attnN = 0, sp.n
		case backend.PoolLast:
			sp.attnLo, sp.attnN = sp.n-1, 1
		default: // CLS, rank: the first token
			sp.attnLo, sp.attnN = 0, 1
		}
		outs += sp.attnN
		n += sp.n
		b.seqs = append(b.seqs, sp)
	}
	if n > e.batch {
		return fmt.Errorf("bert: %d tokens in one pass, more than the batch size %d", n, e.batch)
	}
	if n == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.ensure(&e.cfg, n)
	if err := e.embed(batch, n); err != nil {
		return err
	}
	last := len(e.layers) - 1
	for l := range e.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.layer(l, n, outs, l == last); err != nil {
			return fmt.Errorf("bert: layer %d: %w", l, err)
		}
	}
	return e.poolOut(outs)
}
