package bert

import (
	"errors"
	"fmt"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/bigmem"
	"github.com/smolgo/smolgo/tensor"
)

// linear is one product of the block, x·Wᵀ + bias: through the packed
// float GEMM where the weights are F32 or F16 and the CPU has its kernels,
// else through Matrix.Mul (quantized weights: quant's kernels and, for
// K-quants, their GEMM).
type linear struct {
	m    *tensor.Matrix
	p    *tensor.Packed // nil: Matrix.Mul
	bias []float32
}

// mul computes dst = x·Wᵀ + bias for n rows, then GELU if gelu.
func (l *linear) mul(pool *tensor.Pool, s *scratch, dst, x []float32, n int, gelu bool) error {
	return l.mulAdd(pool, s, dst, x, n, gelu, nil)
}

// mulAdd is mul, then dst += add (nil: nothing), element by element: a
// residual connection, added by the threads that computed the outputs.
func (l *linear) mulAdd(pool *tensor.Pool, s *scratch, dst, x []float32, n int, gelu bool, add []float32) error {
	if l.p != nil {
		return l.p.MulInto(pool, &s.pack, x, n, tensor.PackedOut{Dst: dst, Bias: l.bias, GELU: gelu, Add: add})
	}
	if err := l.m.Mul(pool, &s.mat, dst, x, n); err != nil {
		return err
	}
	addBias(dst, l.bias, n)
	out := dst[:n*l.m.Rows]
	if gelu {
		tensor.GELUs(out, out)
	}
	if add != nil {
		tensor.Add(out, add[:len(out)])
	}
	return nil
}

// addBias adds bias (nil: none) to each of n rows of dst.
func addBias(dst, bias []float32, n int) {
	if bias == nil {
		return
	}
	R := len(bias)
	for t := range n {
		tensor.Add(dst[t*R:(t+1)*R], bias)
	}
}

// scratch is the products' buffers.
type scratch struct {
	mat  tensor.Scratch
	pack tensor.PackScratch
}

// packer makes the linears of an encoder, packing F32 and F16 matrices
// into one allocation outside the Go heap (finish).
type packer struct {
	on   bool
	todo []packTodo
	mem  []byte
}

type packTodo struct {
	dst *tensor.Packed
	ms  []*tensor.Matrix
}

// canPack reports whether packed products run fast on this CPU for some
// weight type.
func canPack() bool { return tensor.CanPack(gguf.TypeF32) }

func (p *packer) linear(m *tensor.Matrix, bias []float32) *linear {
	l := &linear{m: m, bias: bias}
	if p.on && tensor.CanPack(m.Type) {
		l.p = p.later(m)
	}
	return l
}

// fuse makes one linear of q, k and v when they can be packed together;
// its output rows are q's, then k's, then v's (mulQKV).
func (p *packer) fuse(q, k, v *tensor.Matrix, qb, kb, vb []float32) (*linear, bool) {
	if !p.on || !tensor.CanPack(q.Type) || k.Type != q.Type || v.Type != q.Type {
		return nil, false
	}
	if (qb == nil) != (kb == nil) || (qb == nil) != (vb == nil) {
		return nil, false
	}
	l := &linear{m: q, p: p.later(q, k, v)}
	if qb != nil {
		l.bias = append(append(append([]float32(nil), qb...), kb...), vb...)
	}
	return l, true
}

// later reserves a Packed to be filled by finish.
func (p *packer) later(ms ...*tensor.Matrix) *tensor.Packed {
	dst := new(tensor.Packed)
	p.todo = append(p.todo, packTodo{dst: dst, ms: ms})
	return dst
}

// finish allocates the packed copies and writes them, then lets the
// file's pages of the packed matrices go (the products no longer read
// them).
func (p *packer) finish(f *gguf.File) error {
	total := 0
	sizes := make([]int, len(p.todo))
	for i, t := range p.todo {
		n, err := tensor.PackedBytes(t.ms...)
		if err != nil {
			return err
		}
		sizes[i] = n
		total += n
	}
	if total == 0 {
		return nil
	}
	mem, err := bigmem.Alloc(total)
	if err != nil {
		return fmt.Errorf("packing the float matrices (%d bytes): %w", total, err)
	}
	off := 0
	for i, t := range p.todo {
		pk, err := tensor.Pack(mem[off:off+sizes[i]], t.ms...)
		if err != nil {
			bigmem.Free(mem)
			return err
		}
		*t.dst = *pk
		off += sizes[i]
	}
	for _, t := range p.todo {
		for _, m := range t.ms {
			f.DropPages(m.Data)
		}
	}
	p.mem = mem
	return nil
}

func freePacked(mem []byte) {
	if mem != nil {
		bigmem.Free(mem)
	}
}

var errClosed = errors.New("bert: encoder is closed")
