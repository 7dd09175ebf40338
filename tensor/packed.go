package tensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/smolgo/smolgo/gguf"
)

// Packed is one or more F32 or F16 weight matrices with the same number of
// columns, stacked and copied into the layout of the float prefill GEMM:
// slabs of 32 rows in which each column's 32 weights lie side by side.
// Its product with many activation rows (an encoder's pass, a prompt) runs
// as a register-blocked outer product: per column, two vectors of 16 rows'
// weights meet 12 tokens' activations broadcast one at a time, into 24
// accumulators of 16 outputs each (packed_amd64.s; with AVX2 only, four
// vectors of 8 rows meet 3 tokens, four times per call). Each weight is
// read once per 12 (or 3) tokens and no horizontal sums are needed, where
// Matrix.Mul's float kernels read every weight once per token.
//
// Numerics: as llama.cpp's CPU backend, activations are rounded to F16
// before a product with F16 weights (F16 is the vec-dot type) and stay F32
// for F32 weights; each output is the float32 sum of its products with
// fused multiply-adds in column order, so it depends only on its own row
// and token (a token's outputs do not depend on the others in the
// product). That order differs from Matrix.Mul's and from llama.cpp's
// 16-lane sums, by float32 rounding only.
//
// Stacking Q, K and V (or any products of one input) makes them one
// product: MulInto writes each matrix's outputs to its own destination.
type Packed struct {
	Name  string    // the first matrix's name
	Type  gguf.Type // F32 or F16
	Cols  int
	parts []packPart
	slabs int
	data  []byte
}

// packPart is one stacked matrix: rows outputs, its slabs from slab0.
type packPart struct{ rows, slab0 int }

const (
	packRows = 32 // rows per slab: two vectors of 16
	packTile = 12 // tokens per micro-kernel call
)

// CanPack reports whether this CPU has the packed GEMM's kernels for
// weights of type t (F32 or F16, with AVX2 and FMA; AVX-512 runs them
// 12 tokens to a register block, AVX2 3); without them Pack still works,
// with a pure Go twin that gives the same bits, slowly: use Matrix.Mul
// instead.
func CanPack(t gguf.Type) bool {
	return (t == gguf.TypeF32 || t == gguf.TypeF16) && havePackedKernels
}

// PackedBytes is the size of the packed copy of ms (the dst that Pack
// wants). The matrices must share a type (F32 or F16) and column count.
func PackedBytes(ms ...*Matrix) (int, error) {
	if len(ms) == 0 {
		return 0, fmt.Errorf("tensor: packing no matrix")
	}
	t, cols := ms[0].Type, ms[0].Cols
	if t != gguf.TypeF32 && t != gguf.TypeF16 {
		return 0, fmt.Errorf("tensor %s: type %v cannot be packed (F32 and F16 only)", ms[0].Name, t)
	}
	slabs := 0
	for _, m := range ms {
		if m.Type != t || m.Cols != cols {
			return 0, fmt.Errorf("tensor %s: %v × %d columns stacked on %s's %v × %d", m.Name, m.Type, m.Cols, ms[0].Name, t, cols)
		}
		slabs += (m.Rows + packRows - 1) / packRows
	}
	return slabs * packRows * cols * elemBytes(t), nil
}

func elemBytes(t gguf.Type) int {
	if t == gguf.TypeF16 {
		return 2
	}
	return 4
}

// Pack copies ms (stacked, in order) into dst, PackedBytes(ms...) long and
// owned by the caller, who keeps it while the result is used. The matrices
// themselves are not changed and not referenced afterwards.
func Pack(dst []byte, ms ...*Matrix) (*Packed, error) {
	size, err := PackedBytes(ms...)
	if err != nil {
		return nil, err
	}
	if len(dst) != size {
		return nil, fmt.Errorf("tensor %s: packing into %d bytes, want %d", ms[0].Name, len(dst), size)
	}
	p := &Packed{Name: ms[0].Name, Type: ms[0].Type, Cols: ms[0].Cols, data: dst}
	es := elemBytes(p.Type)
	K := p.Cols
	slab := packRows * K * es
	clear(dst)
	for _, m := range ms {
		p.parts = append(p.parts, packPart{rows: m.Rows, slab0: p.slabs})
		for r := range m.Rows {
			s := dst[(p.slabs+r/packRows)*slab:]
			lane := r % packRows
			row := m.Data[r*m.rowBytes : (r+1)*m.rowBytes]
			for k := range K {
				copy(s[(k*packRows+lane)*es:(k*packRows+lane+1)*es], row[k*es:(k+1)*es])
			}
		}
		p.slabs += (m.Rows + packRows - 1) / packRows
	}
	return p, nil
}

// Rows is the number of output rows, all stacked matrices together.
func (p *Packed) Rows() int {
	n := 0
	for _, pt := range p.parts {
		n += pt.rows
	}
	return n
}

// PackScratch holds a packed product's buffers between calls, so that
// repeated products allocate nothing; one per goroutine.
type PackScratch struct {
	round []float32 // activations rounded to F16
	tail  []float32 // the last, partial tile of tokens, zero-padded
	tmp   []float32 // outputs of partial slabs, one 12×32 block per unit
	job   packJob
}

// Mul computes dst = x · Wᵀ for n activation rows of a packed matrix that
// holds one matrix (see MulInto).
func (p *Packed) Mul(pool *Pool, s *PackScratch, dst, x []float32, n int) error {
	return p.MulInto(pool, s, x, n, PackedOut{Dst: dst})
}

// PackedOut is where one stacked matrix's outputs go in MulInto, and what
// is done to them there, by the thread that computed them while they are
// in its cache.
type PackedOut struct {
	// Dst receives the outputs, row t at Dst[t*rows:] (rows: the
	// matrix's).
	Dst []float32
	// Bias, when not nil, is added to every row (rows values).
	Bias []float32
	// GELU applies GELUs after the bias.
	GELU bool
	// Add, when not nil, is added last, element by element (laid out as
	// Dst): a residual connection.
	Add []float32
}

// MulInto computes the products of x (n rows of Cols values) with every
// stacked matrix, outs[i] taking matrix i's. The slabs, and for many tokens
// blocks of tokens, are shared out among the pool's threads.
func (p *Packed) MulInto(pool *Pool, s *PackScratch, x []float32, n int, outs ...PackedOut) error {
	K := p.Cols
	if n <= 0 {
		return fmt.Errorf("tensor %s: product with %d activation rows", p.Name, n)
	}
	if len(outs) != len(p.parts) {
		return fmt.Errorf("tensor %s: %d destinations for %d stacked matrices", p.Name, len(outs), len(p.parts))
	}
	if len(x) < n*K {
		return fmt.Errorf("tensor %s: product of %d rows needs %d inputs, have %d", p.Name, n, n*K, len(x))
	}
	for i, pt := range p.parts {
		if len(outs[i].Dst) < n*pt.rows {
			return fmt.Errorf("tensor %s: matrix %d of the product needs %d outputs, have %d", p.Name, i, n*pt.rows, len(outs[i].Dst))
		}
		if b := outs[i].Bias; b != nil && len(b) != pt.rows {
			return fmt.Errorf("tensor %s: matrix %d has %d rows and a bias of %d", p.Name, i, pt.rows, len(b))
		}
		if a := outs[i].Add; a != nil && len(a) < n*pt.rows {
			return fmt.Errorf("tensor %s: matrix %d of the product adds %d values, want %d", p.Name, i, len(a), n*pt.rows)
		}
	}
	x = x[:n*K]
	if p.Type == gguf.TypeF16 {
		s.round = growF32(s.round, n*K)
		roundF16s(s.round, x)
		x = s.round
	}
	tiles := (n + packTile - 1) / packTile
	if r := n % packTile; r != 0 {
		s.tail = growF32(s.tail, packTile*K)
		copy(s.tail, x[(n-r)*K:])
		clear(s.tail[r*K:])
	}
	blocks := min(tiles, max(1, (4*pool.Threads()+p.slabs-1)/p.slabs))
	units := p.slabs * blocks
	s.tmp = growF32(s.tmp, units*packTile*packRows)
	j := &s.job
	*j = packJob{p: p, x: x, n: n, tail: s.tail, tmp: s.tmp, outs: outs, tiles: tiles, blocks: blocks}
	pool.Run(units, 1, j)
	*j = packJob{}
	return nil
}

// packJob is one product as the pool's work: unit u is slab u/blocks over
// the tiles of token block u%blocks.
type packJob struct {
	p      *Packed
	x      []float32
	n      int
	tail   []float32
	tmp    []float32
	outs   []PackedOut
	tiles  int
	blocks int
}

func (j *packJob) Do(lo, hi int) {
	p := j.p
	K := p.Cols
	es := elemBytes(p.Type)
	slabBytes := packRows * K * es
	for u := lo; u < hi; u++ {
		slab, blk := u/j.blocks, u%j.blocks
		part := 0
		for part+1 < len(p.parts) && p.parts[part+1].slab0 <= slab {
			part++
		}
		pt := p.parts[part]
		r0 := (slab - pt.slab0) * packRows
		full := r0+packRows <= pt.rows
		w := p.data[slab*slabBytes : (slab+1)*slabBytes]
		o := &j.outs[part]
		dst := o.Dst
		lanes := min(packRows, pt.rows-r0)
		t0, t1 := blk*j.tiles/j.blocks, (blk+1)*j.tiles/j.blocks
		for tile := t0; tile < t1; tile++ {
			tok := tile * packTile
			ntok := min(packTile, j.n-tok)
			x := j.x[tok*K:]
			if ntok < packTile {
				x = j.tail
			}
			if full {
				packedKernel(p.Type, w, x, K, K, dst[tok*pt.rows+r0:], pt.rows, ntok)
			} else {
				tmp := j.tmp[u*packTile*packRows : (u+1)*packTile*packRows]
				packedKernel(p.Type, w, x, K, K, tmp, packRows, ntok)
				for t := range ntok {
					copy(dst[(tok+t)*pt.rows+r0:(tok+t)*pt.rows+r0+lanes], tmp[t*packRows:])
				}
			}
			if o.Bias == nil && !o.GELU && o.Add == nil {
				continue
			}
			for t := range ntok {
				at := (tok+t)*pt.rows + r0
				row := dst[at : at+lanes]
				if o.Bias != nil {
					Add(row, o.Bias[r0:r0+lanes])
				}
				if o.GELU {
					GELUs(row, row)
				}
				if o.Add != nil {
					Add(row, o.Add[at:at+lanes])
				}
			}
		}
	}
}

// gemm32x12Go is the micro-kernel in Go, the twin of the assembly: the
// outputs of 32 rows (a slab w of k columns) for ntok of the 12 tokens
// whose activation rows start at x, stride xs floats apart, written to out
// (row t at out[t*os:], 32 values), each a float32 FMA chain in column
// order:
//
//	for t := range ntok {
//		for r := range 32 {
//			var acc float32
//			for c := range k {
//				acc = fma32(w[c][r], x[t*xs+c], acc)
//			}
//			out[t*os+r] = acc
//		}
//	}
func gemm32x12Go(t gguf.Type, w []byte, x []float32, xs, k int, out []float32, os, ntok int) {
	var wr [packRows]float32
	var acc [packTile][packRows]float32
	for c := range k {
		for r := range packRows {
			if t == gguf.TypeF16 {
				wr[r] = FromF16(binary.LittleEndian.Uint16(w[(c*packRows+r)*2:]))
			} else {
				wr[r] = math.Float32frombits(binary.LittleEndian.Uint32(w[(c*packRows+r)*4:]))
			}
		}
		for tk := range packTile {
			a := x[tk*xs+c]
			for r := range packRows {
				acc[tk][r] = fma32(wr[r], a, acc[tk][r])
			}
		}
	}
	for tk := range ntok {
		copy(out[tk*os:tk*os+packRows], acc[tk][:])
	}
}

// roundF16s sets dst[i] = RoundF16(src[i]).
func roundF16s(dst, src []float32) {
	dst = dst[:len(src)]
	n16 := 0
	if havePackedKernels {
		n16 = roundF16sASM(dst, src)
	}
	for i := n16; i < len(src); i++ {
		dst[i] = RoundF16(src[i])
	}
}

func growF32(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}
