//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tensor"
)

// Backend is a model on one GPU: its weights uploaded once at NewBackend,
// work buffers sized for BatchSize tokens, and KV caches in device memory.
// Only the new tokens' embeddings (looked up on the host), their RoPE
// angles, and the logits asked for cross the bus in a Step.
type Backend struct {
	g     *gpu
	model *llama.Weights
	cfg   llama.Config
	p     *plan
	log   *slog.Logger
	rot   []bool // per layer: applies RoPE (false: a NoPE layer)
	embd  *tensor.Matrix
	neox  int32
	group int

	layers  []devLayer
	outNorm devPtr
	output  devMat

	w    work
	host hostBufs

	mu     sync.Mutex // guards closed and the caches' device memory against Close
	closed bool
}

// devMat is a weight matrix in device memory, in its stored type.
type devMat struct {
	ptr              devPtr
	typ              gguf.Type
	rows, cols, rowB int
	name             string
}

type devLayer struct {
	attnNorm, ffnNorm          devPtr
	q, k, v, o, gate, up, down devMat
}

// work holds the device buffers of one Step (batch = plan.batch tokens).
type work struct {
	x, xn, q, k, v, att, gate, up devPtr // float32 activations
	qa, ad, as                    devPtr // int8 activations, scales, scaled sums
	cos, sin                      devPtr // RoPE angles per token
	rows                          devPtr // int32 rows whose logits are asked for
	part                          devPtr // split-K partials
	logits                        devPtr
	logitRows                     int
}

type hostBufs struct {
	x        []float32
	cos, sin []float32
	rows     []int32
	logits   []float32
}

// NewBackend uploads w to the GPU opts.Device. Before it allocates
// anything it checks, with clear errors, that the driver is there, the
// device exists, the kernels implement w's architecture (llama.Arch), every
// weight type has a kernel and the model fits in the device's memory
// (cuDeviceTotalMem). Close frees the device memory.
func NewBackend(w *llama.Weights, opts Options) (backend.Backend, error) {
	n, err := ParseDevice(opts.Device)
	if err != nil {
		return nil, err
	}
	p, err := newPlan(w, opts)
	if err != nil {
		return nil, err
	}
	g, err := openDevice(opts.Library, n)
	if err != nil {
		return nil, err
	}
	if err := p.fits(g.info.total, n, g.info.name); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := g.start(); err != nil {
		g.close()
		return nil, err
	}
	cfg := w.Config
	b := &Backend{g: g, model: w, cfg: cfg, p: p, log: log, embd: w.Embd, group: cfg.Heads / cfg.KVHeads}
	if p.rope != nil && p.rope.Layout == rope.NeoX {
		b.neox = 1
	}
	for _, l := range w.Arch.Layers {
		b.rot = append(b.rot, l.Attention().Rope != nil) // newPlan: every layer is attention
	}
	log.Info("cuda: uploading", "device", fmt.Sprintf("cuda:%d", n), "name", g.info.name,
		"compute", fmt.Sprintf("%d.%d", g.info.major, g.info.minor), "memory", mib(g.info.total),
		"weights", mib(p.weights), "work", mib(p.work))
	if err := g.run(func() error { return b.upload() }); err != nil {
		g.close()
		return nil, err
	}
	return b, nil
}

// upload copies the weights and allocates the work buffers.
func (b *Backend) upload() error {
	g, cfg := b.g, b.cfg
	mat := func(m *tensor.Matrix) (devMat, error) {
		p, err := g.alloc(int64(len(m.Data)))
		if err == nil {
			err = g.upload(p, m.Data)
		}
		return devMat{ptr: p, typ: m.Type, rows: m.Rows, cols: m.Cols, rowB: m.RowBytes(), name: m.Name}, err
	}
	norm := func(w []float32) (devPtr, error) {
		p, err := g.alloc(int64(4 * len(w)))
		if err == nil {
			err = g.upload(p, floats(w))
		}
		return p, err
	}
	for l := range cfg.Layers {
		w := &b.model.Layers[l]
		var d devLayer
		var err error
		for _, s := range []struct {
			dst *devMat
			m   *tensor.Matrix
		}{{&d.q, w.Attention.Q}, {&d.k, w.Attention.K}, {&d.v, w.Attention.V}, {&d.o, w.Attention.O},
			{&d.gate, w.GLU.Gate}, {&d.up, w.GLU.Up}, {&d.down, w.GLU.Down}} {
			if *s.dst, err = mat(s.m); err != nil {
				return err
			}
		}
		if d.attnNorm, err = norm(w.AttnNorm); err != nil {
			return err
		}
		if d.ffnNorm, err = norm(w.FFNNorm); err != nil {
			return err
		}
		b.layers = append(b.layers, d)
		if (l+1)%8 == 0 || l+1 == cfg.Layers {
			if err := g.sync(); err != nil { // the copies from the file mapping are done
				return err
			}
			b.log.Info("cuda: uploaded", "layers", l+1, "of", cfg.Layers)
		}
	}
	var err error
	if b.outNorm, err = norm(b.model.OutNorm); err != nil {
		return err
	}
	if b.output, err = mat(b.model.Output); err != nil {
		return err
	}
	B := int64(b.p.batch)
	E, Q, KV, F := int64(cfg.Embd), int64(cfg.QDim()), int64(cfg.KVDim()), int64(cfg.FFN)
	maxK := max(E, Q, F)
	half := int64(b.ropeHalf())
	w := &b.w
	for _, a := range []struct {
		p     *devPtr
		bytes int64
	}{
		{&w.x, 4 * B * E}, {&w.xn, 4 * B * E}, {&w.q, 4 * B * Q}, {&w.att, 4 * B * Q},
		{&w.k, 4 * B * KV}, {&w.v, 4 * B * KV}, {&w.gate, 4 * B * F}, {&w.up, 4 * B * F},
		{&w.qa, B * maxK}, {&w.ad, 4 * B * maxK / 32}, {&w.as, 4 * B * maxK / 32},
		{&w.cos, 4 * B * max(half, 1)}, {&w.sin, 4 * B * max(half, 1)}, {&w.rows, 4 * B},
		{&w.part, 4 * int64(splitMaxQueries*cfg.Heads*maxSplits) * int64(cfg.HeadDim+2)},
	} {
		if *a.p, err = g.alloc(a.bytes); err != nil {
			return err
		}
	}
	b.host = hostBufs{
		x:    make([]float32, B*E),
		cos:  make([]float32, B*half),
		sin:  make([]float32, B*half),
		rows: make([]int32, B),
	}
	if err := b.growLogits(gemvMaxTokens); err != nil {
		return err
	}
	return g.sync()
}

// ropeHalf is the number of rotated pairs per head (0 when no layer
// rotates).
func (b *Backend) ropeHalf() int {
	if b.p.rope == nil {
		return 0
	}
	return b.p.rope.Dims / 2
}

// growLogits makes room for rows of logits on the device and the host.
func (b *Backend) growLogits(rows int) error {
	if rows <= b.w.logitRows {
		return nil
	}
	rows = max(rows, 2*b.w.logitRows)
	rows = min(rows, b.p.batch)
	if err := b.g.sync(); err != nil {
		return err
	}
	b.g.free(b.w.logits)
	b.w.logits, b.w.logitRows = 0, 0
	p, err := b.g.alloc(4 * int64(rows) * int64(b.cfg.Vocab))
	if err != nil {
		return err
	}
	b.w.logits, b.w.logitRows = p, rows
	b.host.logits = make([]float32, rows*b.cfg.Vocab)
	return nil
}

// Close frees the device memory of the model and of every cache. The
// backend and its caches must not be used afterwards.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return b.g.close()
}

// Vocab is the number of logits per token.
func (b *Backend) Vocab() int { return b.cfg.Vocab }

// BatchSize is the most tokens one Step takes.
func (b *Backend) BatchSize() int { return b.p.batch }

// Device names the GPU, e.g. "cuda:0 (NVIDIA H100 80GB HBM3, 79.1 GiB)".
func (b *Backend) Device() string {
	return fmt.Sprintf("cuda:%d (%s, %.1f GiB)", b.g.n, b.g.info.name, float64(b.g.info.total)/(1<<30))
}

var errClosed = errors.New("cuda: backend closed")

var _ backend.Backend = (*Backend)(nil)

// Step runs one forward pass over the batch (see backend.Backend).
func (b *Backend) Step(ctx context.Context, batch []backend.Seq) error {
	caches, total, rows, err := b.checkBatch(batch)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errClosed
	}
	err = b.g.run(func() error {
		err := b.step(ctx, batch, caches, total, rows)
		if err != nil {
			b.g.sync() // let launched work finish before anything is freed
		}
		return err
	})
	if err != nil {
		return err
	}
	for i, c := range caches {
		c.n += len(batch[i].Tokens)
	}
	return nil
}

// step runs Step's work with the context current.
func (b *Backend) step(ctx context.Context, batch []backend.Seq, caches []*Cache, total, rows int) error {
	for i, c := range caches {
		if err := c.reserve(c.n + len(batch[i].Tokens)); err != nil {
			return err
		}
	}
	if err := b.growLogits(rows); err != nil {
		return err
	}
	if err := b.stage(batch, caches, total); err != nil {
		return err
	}
	for l := range b.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := b.layer(l, batch, caches, total); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.logits(batch, rows)
}

// checkBatch validates a Step's arguments and returns its caches, its
// number of tokens and of logits rows.
func (b *Backend) checkBatch(batch []backend.Seq) (caches []*Cache, total, rows int, err error) {
	V := b.cfg.Vocab
	for i, s := range batch {
		c, ok := s.Cache.(*Cache)
		switch {
		case !ok || c.b != b:
			return nil, 0, 0, fmt.Errorf("cuda: sequence %d: cache was not made by this backend", i)
		case c.closed:
			return nil, 0, 0, fmt.Errorf("cuda: sequence %d: cache is closed", i)
		case len(s.Tokens) == 0:
			return nil, 0, 0, fmt.Errorf("cuda: sequence %d has no tokens", i)
		case s.Hidden != nil:
			return nil, 0, 0, fmt.Errorf("cuda: sequence %d asks for hidden states, which this backend does not return (embeddings run on the CPU)", i)
		case len(s.Logits)%V != 0 || len(s.Logits)/V > len(s.Tokens):
			return nil, 0, 0, fmt.Errorf("cuda: sequence %d: %d logits is not a whole number of rows of %d, at most one per token (%d)", i, len(s.Logits), V, len(s.Tokens))
		case c.n+len(s.Tokens) > c.max:
			return nil, 0, 0, fmt.Errorf("cuda: sequence %d: %d cached + %d new tokens exceed the cache length %d: %w", i, c.n, len(s.Tokens), c.max, backend.ErrContextFull)
		}
		for _, prev := range caches {
			if prev == c {
				return nil, 0, 0, fmt.Errorf("cuda: sequence %d: its cache appears twice in the batch", i)
			}
		}
		for j, t := range s.Tokens {
			if t < 0 || int(t) >= V {
				return nil, 0, 0, fmt.Errorf("cuda: sequence %d: token %d at index %d is outside the vocabulary [0, %d)", i, t, j, V)
			}
		}
		caches = append(caches, c)
		total += len(s.Tokens)
		rows += len(s.Logits) / V
	}
	if total > b.p.batch {
		return nil, 0, 0, fmt.Errorf("cuda: %d tokens in one step, more than the batch size %d", total, b.p.batch)
	}
	return caches, total, rows, nil
}

// stage looks up the embeddings and RoPE angles of the batch on the host
// and uploads them with the rows whose logits are asked for.
func (b *Backend) stage(batch []backend.Seq, caches []*Cache, total int) error {
	E, half, V := b.cfg.Embd, b.ropeHalf(), b.cfg.Vocab
	h := &b.host
	t, r := 0, 0
	for i, s := range batch {
		for j, tok := range s.Tokens {
			if err := b.embd.Row(int(tok), h.x[t*E:(t+1)*E]); err != nil {
				return fmt.Errorf("cuda: embedding: %w", err)
			}
			if b.p.rope != nil {
				b.p.rope.Angles(caches[i].n+j, h.cos[t*half:(t+1)*half], h.sin[t*half:(t+1)*half])
			}
			t++
		}
		for k := len(s.Tokens) - len(s.Logits)/V; k < len(s.Tokens); k++ {
			h.rows[r] = int32(t - len(s.Tokens) + k)
			r++
		}
	}
	g := b.g
	for _, u := range []struct {
		dst devPtr
		src []byte
	}{
		{b.w.x, floats(h.x[:total*E])}, {b.w.cos, floats(h.cos[:total*half])},
		{b.w.sin, floats(h.sin[:total*half])}, {b.w.rows, ints(h.rows[:r])},
	} {
		if err := g.upload(u.dst, u.src); err != nil {
			return err
		}
	}
	return nil
}

// grid1 is a one-dimensional launch of n threads in blocks of bs.
func grid1(n, bs int) [3]uint32 { return [3]uint32{uint32((n + bs - 1) / bs), 1, 1} }

func block1(bs int) [3]uint32 { return [3]uint32{uint32(bs), 1, 1} }

// rmsnorm normalizes rows of x into dst (rows: device int32 indices, or 0
// for the first n rows).
func (b *Backend) rmsnorm(x, rowIdx, w, dst devPtr, n int) error {
	return b.g.launch("rmsnorm", [3]uint32{uint32(n), 1, 1}, block1(256), 0, x, rowIdx, w, dst, b.cfg.Embd, b.cfg.RMSEps)
}

// quantize rounds n rows of k floats at x to the int8 activation buffers,
// if any of the matrices about to read them is quantized.
func (b *Backend) quantize(x devPtr, n, k int, ms ...devMat) error {
	for _, m := range ms {
		if quantized(m.typ) {
			blocks := n * k / 32
			return b.g.launch("quantize_q8", grid1(blocks*32, 256), block1(256), 0, x, b.w.qa, b.w.ad, b.w.as, blocks)
		}
	}
	return nil
}

// mul computes out[t][row] (+)= m·x[t] for n tokens: x is the float32 input
// (float matrices read it) whose int8 form quantize left in the activation
// buffers (quantized matrices read that).
func (b *Backend) mul(m devMat, x devPtr, n int, out devPtr, ldo int, accumulate bool) error {
	acc := int32(0)
	if accumulate {
		acc = 1
	}
	K, M := m.cols, m.rows
	name := m.typ.String()
	if quantized(m.typ) && n > gemvMaxTokens {
		grid := [3]uint32{uint32((M + 63) / 64), uint32((n + 63) / 64), 1}
		return b.g.launch("gemm_"+name, grid, block1(256), 0, m.ptr, m.rowB, K, M, n, b.w.qa, b.w.ad, b.w.as, out, ldo, acc)
	}
	for t0 := 0; t0 < n; {
		nt := gemvMaxTokens
		for nt > n-t0 {
			nt /= 2
		}
		kernel := fmt.Sprintf("gemv_%s_%d", name, nt)
		o := out + devPtr(4*t0*ldo)
		var err error
		if quantized(m.typ) {
			err = b.g.launch(kernel, grid1(M, 4), block1(128), 0, m.ptr, m.rowB, K, M,
				b.w.qa+devPtr(t0*K), b.w.ad+devPtr(4*t0*K/32), b.w.as+devPtr(4*t0*K/32), o, ldo, acc)
		} else {
			err = b.g.launch(kernel, grid1(M, 4), block1(128), 0, m.ptr, K, M, x+devPtr(4*t0*K), o, ldo, acc)
		}
		if err != nil {
			return err
		}
		t0 += nt
	}
	return nil
}

// layer runs transformer block l over the batch's total tokens.
func (b *Backend) layer(l int, batch []backend.Seq, caches []*Cache, n int) error {
	cfg, w, d := b.cfg, &b.w, &b.layers[l]
	E, Q, KV, F, hd := cfg.Embd, cfg.QDim(), cfg.KVDim(), cfg.FFN, cfg.HeadDim
	g := b.g
	if err := b.rmsnorm(w.x, 0, d.attnNorm, w.xn, n); err != nil {
		return err
	}
	if err := b.quantize(w.xn, n, E, d.q, d.k, d.v); err != nil {
		return err
	}
	for _, m := range []struct {
		m   devMat
		out devPtr
		ld  int
	}{{d.q, w.q, Q}, {d.k, w.k, KV}, {d.v, w.v, KV}} {
		if err := b.mul(m.m, w.xn, n, m.out, m.ld, false); err != nil {
			return err
		}
	}
	if half := b.ropeHalf(); b.rot[l] && half > 0 {
		for _, r := range []struct {
			x         devPtr
			heads, ld int
		}{{w.q, cfg.Heads, Q}, {w.k, cfg.KVHeads, KV}} {
			if err := g.launch("rope", grid1(n*r.heads*half, 256), block1(256), 0, r.x, w.cos, w.sin, n, r.heads, hd, r.ld, half, b.neox); err != nil {
				return err
			}
		}
	}
	off := 0
	for i, s := range batch {
		c, ns := caches[i], len(s.Tokens)
		if err := b.attention(l, c, off, ns); err != nil {
			return err
		}
		off += ns
	}
	if err := b.quantize(w.att, n, Q, d.o); err != nil {
		return err
	}
	if err := b.mul(d.o, w.att, n, w.x, E, true); err != nil {
		return err
	}
	if err := b.rmsnorm(w.x, 0, d.ffnNorm, w.xn, n); err != nil {
		return err
	}
	if err := b.quantize(w.xn, n, E, d.gate, d.up); err != nil {
		return err
	}
	if err := b.mul(d.gate, w.xn, n, w.gate, F, false); err != nil {
		return err
	}
	if err := b.mul(d.up, w.xn, n, w.up, F, false); err != nil {
		return err
	}
	if err := g.launch("swiglu", grid1(n*F, 256), block1(256), 0, w.gate, w.up, n*F); err != nil {
		return err
	}
	if err := b.quantize(w.gate, n, F, d.down); err != nil {
		return err
	}
	return b.mul(d.down, w.gate, n, w.x, E, true)
}

// attention appends the keys and values of ns tokens (rows off.. of the
// batch) to cache c at its length and runs their queries over it.
func (b *Backend) attention(l int, c *Cache, off, ns int) error {
	cfg, w, g := b.cfg, &b.w, b.g
	Q, KV, hd := cfg.QDim(), cfg.KVDim(), cfg.HeadDim
	kc, vc := c.layer(l)
	at := devPtr(2 * c.n * KV)
	if err := g.launch("kv_append", grid1(ns*KV, 256), block1(256), 0,
		w.k+devPtr(4*off*KV), w.v+devPtr(4*off*KV), kc+at, vc+at, ns*KV); err != nil {
		return err
	}
	total := c.n + ns
	scale := float32(1 / math.Sqrt(float64(hd)))
	q, out := w.q+devPtr(4*off*Q), w.att+devPtr(4*off*Q)
	nw, splits, chunk := min(ns, 8), 1, (total+63)/64*64
	if ns <= splitMaxQueries {
		splits = min(maxSplits, (total+splitMinChunk-1)/splitMinChunk)
		chunk = ((total+splits-1)/splits + 63) / 64 * 64
		splits = (total + chunk - 1) / chunk
	}
	part := devPtr(0)
	if splits > 1 {
		part = w.part
	}
	shmem := uint32(2*64*(hd+2)*2 + nw*hd*4)
	grid := [3]uint32{uint32((ns + nw - 1) / nw), uint32(cfg.Heads), uint32(splits)}
	if err := g.launch("attn", grid, block1(32*nw), shmem, q, Q, kc, vc, KV, hd, ns, c.n, b.group, scale, chunk, out, part); err != nil {
		return err
	}
	if splits == 1 {
		return nil
	}
	return g.launch("attn_combine", [3]uint32{uint32(ns), uint32(cfg.Heads), 1}, block1(hd), 0, w.part, splits, hd, out, Q)
}

// logits runs the final norm and the output projection on the rows asked
// for and copies them into the sequences' Logits.
func (b *Backend) logits(batch []backend.Seq, rows int) error {
	if rows == 0 {
		return b.g.sync()
	}
	w, V, E := &b.w, b.cfg.Vocab, b.cfg.Embd
	if err := b.rmsnorm(w.x, w.rows, b.outNorm, w.xn, rows); err != nil {
		return err
	}
	if err := b.quantize(w.xn, rows, E, b.output); err != nil {
		return err
	}
	if err := b.mul(b.output, w.xn, rows, w.logits, V, false); err != nil {
		return err
	}
	host := b.host.logits[:rows*V]
	if err := b.g.download(floats(host), w.logits); err != nil {
		return err
	}
	r := 0
	for _, s := range batch {
		r += copy(s.Logits, host[r:])
	}
	return nil
}
