package tensor

import (
	"fmt"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
)

// Matrix is a weight matrix kept in its stored (usually quantized) form,
// typically a slice of a memory-mapped GGUF file: Rows rows of Cols
// elements, row r at Data[r*RowBytes():]. In ggml's dimension order a tensor
// with Dims [Cols, Rows] maps onto it directly.
//
// Multiplying it by float32 activations follows llama.cpp: each activation
// row is first converted to the weight type's "vec dot type"
// (quant.VecDotType: Q8_K for K-quants, Q8_0 for Q4_0/Q5_0/Q8_0, F16 for F16,
// ...) and the outputs come from quant's multi-row kernels (quant.MatVec for
// one token, quant.MatMul for a batch), each thread taking a range of weight
// rows. Those functions are the kernel boundary: this package never looks
// inside a block.
type Matrix struct {
	Name       string
	Type       gguf.Type
	Rows, Cols int
	Data       []byte

	rowBytes    int
	act         gguf.Type
	actRowBytes int
	matVec      quant.MatVecFunc
	matMul      quant.MatMulFunc

	// inter is the interleaved copy of Data (see Interleave), with its
	// products and row group; nil when the products read Data.
	inter       []byte
	interGroup  int
	interMatVec quant.MatVecFunc
	interMatMul quant.MatMulFunc
}

// NewMatrix wraps data (not copied) as a rows×cols matrix of type t. It
// checks that cols is a whole number of blocks, that data has exactly the
// right size and that quant has a dot product for t; errors name the matrix.
func NewMatrix(name string, t gguf.Type, rows, cols int, data []byte) (*Matrix, error) {
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("tensor %s: bad shape %d×%d", name, rows, cols)
	}
	bs := t.BlockSize()
	if bs <= 0 || cols%bs != 0 {
		return nil, fmt.Errorf("tensor %s: row length %d is not a multiple of the %v block size %d", name, cols, t, bs)
	}
	rb, err := t.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	if len(data) != rows*rb {
		return nil, fmt.Errorf("tensor %s: %d bytes of data, want %d (%d rows × %d bytes of %v)", name, len(data), rows*rb, rows, rb, t)
	}
	act, err := quant.VecDotType(t)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	arb, err := act.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: activations: %w", name, err)
	}
	matVec, err := quant.MatVec(t)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	matMul, err := quant.MatMul(t)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	return &Matrix{
		Name: name, Type: t, Rows: rows, Cols: cols, Data: data,
		rowBytes: rb, act: act, actRowBytes: arb, matVec: matVec, matMul: matMul,
	}, nil
}

// InterleaveBytes is the size of the interleaved copy Interleave wants for
// this matrix: its Data's size where the CPU's kernels have an interleaved
// layout for its type and its row count is a multiple of their row group,
// else 0.
func (m *Matrix) InterleaveBytes() int {
	if g := quant.InterleaveRows(m.Type); g == 0 || m.Rows%g != 0 {
		return 0
	}
	return len(m.Data)
}

// Interleave gives the matrix's products an interleaved copy of its
// weights (quant.Interleave), written into dst (InterleaveBytes long, owned
// by the caller, who must keep it until the matrix is no longer used):
// q4_K and q6_K products of several tokens run faster, and one token's
// products take fewer instructions, though they stay bound by memory
// (quant's BenchmarkInterleaved and BenchmarkInterleavedDRAM measure both
// layouts). On AVX-512 CPUs prefill batches unpack their GEMM panels
// from the copy, so the products never read Data again. Data and Row keep
// the file's layout. Results are within float32 rounding of the file
// layout's (the same integer dot products, scaled per row and block), and
// a token's result still does not depend on how many tokens (up to 23)
// share the product. Call it before the matrix is used, not during
// products.
func (m *Matrix) Interleave(dst []byte) error {
	g := quant.InterleaveRows(m.Type)
	if g == 0 || m.Rows%g != 0 {
		return fmt.Errorf("tensor %s: no interleaved layout for %d rows of %v here", m.Name, m.Rows, m.Type)
	}
	mv, mm, err := quant.Interleave(m.Type, m.Rows, m.Cols, m.Data, dst)
	if err != nil {
		return fmt.Errorf("tensor %s: %w", m.Name, err)
	}
	m.inter, m.interGroup, m.interMatVec, m.interMatMul = dst, g, mv, mm
	return nil
}

// Uninterleave makes the products read Data again and returns the
// interleaved copy, for its owner to free.
func (m *Matrix) Uninterleave() []byte {
	b := m.inter
	m.inter, m.interGroup, m.interMatVec, m.interMatMul = nil, 0, nil, nil
	return b
}

// Interleaved reports whether the products read an interleaved copy.
func (m *Matrix) Interleaved() bool { return m.inter != nil }

// RowBytes is the size in bytes of one stored row.
func (m *Matrix) RowBytes() int { return m.rowBytes }

// ActivationType is the type activations are converted to before the dot
// product with this matrix.
func (m *Matrix) ActivationType() gguf.Type { return m.act }

// Row dequantizes row i into dst (len Cols), the way ggml's get_rows does for
// an embedding lookup.
func (m *Matrix) Row(i int, dst []float32) error {
	if i < 0 || i >= m.Rows {
		return fmt.Errorf("tensor %s: row %d out of range [0, %d)", m.Name, i, m.Rows)
	}
	if len(dst) != m.Cols {
		return fmt.Errorf("tensor %s: row buffer of %d, want %d", m.Name, len(dst), m.Cols)
	}
	return quant.Dequantize(m.Type, m.Data[i*m.rowBytes:(i+1)*m.rowBytes], dst)
}

// Scratch holds the buffers a matrix product needs between calls (the
// converted activations and the job handed to the pool), so that repeated
// products allocate nothing. A Scratch must not be used by two goroutines at
// once; give each session its own.
type Scratch struct {
	act   []byte
	wide  []float32 // float weights' activations widened for the float GEMM
	pairs []byte    // BF16 activations padded to whole tiles for VDPBF16PS
	job   mulJob
	each  eachJob // MulEach's
}

// Out is one product of a fused call (MulInto): a matrix and where its
// output rows go, laid out as in Mul.
type Out struct {
	M   *Matrix
	Dst []float32
}

// maxOuts is the most products one MulInto call fuses.
const maxOuts = 4

// Mul computes dst = x · mᵀ for n activation rows: x holds n rows of Cols
// values, dst receives n rows of Rows values (dst[t*Rows+r] is row r of the
// matrix dotted with activation row t). The activations are converted once
// per row, then the output rows are shared out among the pool's threads.
func (m *Matrix) Mul(p *Pool, s *Scratch, dst, x []float32, n int) error {
	return MulInto(p, s, x, n, Out{m, dst})
}

// MulInto computes several products of the same input x (n rows) in one
// pass over the pool, such as a layer's query, key and value projections:
// the activations are converted once per distinct vec-dot type, and the
// rows of all the matrices form one range shared out among the threads, so
// the threads meet once instead of once per matrix. Every matrix must have
// as many columns as x has values per row. At most 4 outputs.
func MulInto(p *Pool, s *Scratch, x []float32, n int, outs ...Out) error {
	return mulInto(p, s, x, n, nil, outs)
}

// MulSwiGLU computes dst = SwiGLU(x · gateᵀ, x · upᵀ) (see SwiGLU) for n
// rows, the feed-forward block's first half: each thread takes a range of
// rows of both matrices and applies the activation to its own outputs, so
// the element-wise step is shared out too. gateBuf and upBuf receive the
// raw products (n × Rows each); dst may be gateBuf.
func MulSwiGLU(p *Pool, s *Scratch, dst, gateBuf, upBuf []float32, gate, up *Matrix, x []float32, n int) error {
	if gate.Rows != up.Rows {
		return fmt.Errorf("tensor: SwiGLU of %s (%d rows) and %s (%d rows)", gate.Name, gate.Rows, up.Name, up.Rows)
	}
	if len(dst) < n*gate.Rows {
		return fmt.Errorf("tensor %s: SwiGLU of %d rows needs %d outputs, have %d", gate.Name, n, n*gate.Rows, len(dst))
	}
	return mulInto(p, s, x, n, dst, []Out{{gate, gateBuf}, {up, upBuf}})
}

// MulGEGLU is MulSwiGLU with GELU in place of SiLU: dst = gelu(gate·x) ⊙
// (up·x), GELU as GEGLU computes it (Gemma's feed-forward).
func MulGEGLU(p *Pool, s *Scratch, dst, gateBuf, upBuf []float32, gate, up *Matrix, x []float32, n int) error {
	if gate.Rows != up.Rows {
		return fmt.Errorf("tensor: GEGLU of %s (%d rows) and %s (%d rows)", gate.Name, gate.Rows, up.Name, up.Rows)
	}
	if len(dst) < n*gate.Rows {
		return fmt.Errorf("tensor %s: GEGLU of %d rows needs %d outputs, have %d", gate.Name, n, n*gate.Rows, len(dst))
	}
	s.job.gelu = true
	err := mulInto(p, s, x, n, dst, []Out{{gate, gateBuf}, {up, upBuf}})
	s.job.gelu = false
	return err
}

func mulInto(p *Pool, s *Scratch, x []float32, n int, glu []float32, outs []Out) error {
	if len(outs) == 0 || len(outs) > maxOuts {
		return fmt.Errorf("tensor: %d products in one call (1 to %d)", len(outs), maxOuts)
	}
	cols := outs[0].M.Cols
	if n <= 0 {
		return fmt.Errorf("tensor %s: product with %d activation rows", outs[0].M.Name, n)
	}
	j := &s.job
	*j = mulJob{n: n, glu: glu, gelu: j.gelu}
	need := 0
	for i, o := range outs {
		m := o.M
		if m.Cols != cols {
			return fmt.Errorf("tensor %s: %d columns, but %s has %d (fused products share their input)", m.Name, m.Cols, outs[0].M.Name, cols)
		}
		if len(x) < n*m.Cols || len(o.Dst) < n*m.Rows {
			return fmt.Errorf("tensor %s: product of %d rows needs %d inputs and %d outputs, have %d and %d",
				m.Name, n, n*m.Cols, n*m.Rows, len(x), len(o.Dst))
		}
		part := mulPart{m: m, dst: o.Dst, lo: j.rows, act: -1}
		for k := range i {
			if j.parts[k].m.act == m.act {
				part.act = j.parts[k].act
				break
			}
		}
		if part.act < 0 {
			part.act, part.convert = need, true
			need += n * m.actRowBytes
		}
		j.parts[i] = part
		j.rows += m.Rows
		j.work += m.Rows * m.Cols
	}
	j.nparts = len(outs)
	if cap(s.act) < need {
		s.act = make([]byte, need)
	}
	j.act = s.act[:need]
	gemm := false // some part takes the float GEMM
	for i := range j.nparts {
		part := &j.parts[i]
		m := part.m
		if !part.convert {
			continue // shares the conversion of an earlier product
		}
		act := j.act[part.act : part.act+n*m.actRowBytes]
		for t := range n {
			if err := quant.QuantizeActivations(m.act, x[t*m.Cols:(t+1)*m.Cols], act[t*m.actRowBytes:(t+1)*m.actRowBytes]); err != nil {
				*j = mulJob{}
				return fmt.Errorf("tensor %s: %w", m.Name, err)
			}
		}
		if floatGEMM(m, n) {
			gemm = true
		}
	}
	if gemm {
		// Widen each vec-dot type's activations once for the float GEMM
		// (floatgemm.go), in whole tiles of 12 tokens.
		rows := (n + packTile - 1) / packTile * packTile
		for i := range j.nparts {
			part := &j.parts[i]
			m := part.m
			if !floatGEMM(m, n) {
				continue
			}
			for k := range i {
				if j.parts[k].act == part.act {
					part.wide, part.pairs = j.parts[k].wide, j.parts[k].pairs
				}
			}
			switch {
			case part.wide != nil || part.pairs != nil:
			case bf16Pairs(m):
				if cap(s.pairs) < j.nparts*rows*m.actRowBytes {
					s.pairs = make([]byte, j.nparts*rows*m.actRowBytes)
				}
				part.pairs = s.pairs[i*rows*m.actRowBytes : (i+1)*rows*m.actRowBytes]
				padTiles(part.pairs, j.act[part.act:], n, m.actRowBytes)
			default:
				if cap(s.wide) < j.nparts*rows*cols {
					s.wide = make([]float32, j.nparts*rows*cols)
				}
				part.wide = s.wide[i*rows*cols : (i+1)*rows*cols]
				widenActivations(part.wide, m.act, j.act[part.act:], n, cols)
			}
		}
	}
	// Rows are handed out in groups so that each thread streams a
	// contiguous slice of the weights, and a group is at least minWork
	// weights (times tokens): handing a thread less costs more in wake-up
	// than it saves.
	avg := j.work / j.rows
	grain := max(16, minWork/(avg*n))
	grain = (grain + 15) &^ 15 // whole groups of interleaved rows (8 or 16) and GEMM panels (16)
	if gemm {
		grain = (grain + packRows - 1) &^ (packRows - 1) // whole slabs of the float GEMM
	}
	if glu != nil {
		p.Run(outs[0].M.Rows, grain, j)
	} else {
		p.Run(j.rows, grain, j)
	}
	*j = mulJob{}
	return nil
}

// minWork is the fewest multiply-adds worth handing to another thread.
const minWork = 1 << 16

// mulPart is one matrix of a fused product: its rows are [lo, lo+m.Rows) of
// the job's range, its converted activations start at act.
type mulPart struct {
	m   *Matrix
	dst []float32
	lo  int
	act int

	convert bool      // this part converts the activations at act (the first of its type)
	wide    []float32 // the float GEMM's widened activations (nil: quant's kernels)
	pairs   []byte    // or its BF16 activations for VDPBF16PS (bf16Pairs)
}

type mulJob struct {
	parts  [maxOuts]mulPart
	nparts int
	rows   int // sum of the parts' rows
	work   int // sum of rows × cols
	act    []byte
	n      int
	glu    []float32 // MulSwiGLU: parts[0] is the gate, parts[1] the up
	gelu   bool      // MulGEGLU: GELU instead of SiLU
}

func (j *mulJob) Do(lo, hi int) {
	if j.glu != nil {
		g, u := &j.parts[0], &j.parts[1]
		j.mul(g, lo, hi)
		j.mul(u, lo, hi)
		F := g.m.Rows
		glu := SwiGLU
		if j.gelu {
			glu = GEGLU
		}
		for t := range j.n {
			o := t * F
			glu(j.glu[o+lo:o+hi], g.dst[o+lo:o+hi], u.dst[o+lo:o+hi])
		}
		return
	}
	for i := range j.nparts {
		part := &j.parts[i]
		a, b := max(lo, part.lo), min(hi, part.lo+part.m.Rows)
		if a < b {
			j.mul(part, a-part.lo, b-part.lo)
		}
	}
}

// mul computes rows [lo, hi) of one part.
func (j *mulJob) mul(part *mulPart, lo, hi int) {
	m := part.m
	if part.wide != nil {
		mulFloatGEMM(m, lo, hi, part.wide, j.n, part.dst)
		return
	}
	if part.pairs != nil {
		mulBF16Pairs(m, lo, hi, part.pairs, j.n, part.dst)
		return
	}
	act := j.act[part.act : part.act+j.n*m.actRowBytes]
	if g := m.interGroup; g > 0 && lo%g == 0 && hi%g == 0 {
		w := m.inter[lo*m.rowBytes : hi*m.rowBytes]
		if j.n == 1 {
			m.interMatVec(m.Cols, w, act, part.dst[lo:hi])
			return
		}
		m.interMatMul(m.Cols, w, hi-lo, act, j.n, part.dst[lo:], m.Rows)
		return
	}
	// The file's layout: not interleaved, or a range that splits a group
	// (a fused product after a matrix whose rows are not whole groups).
	w := m.Data[lo*m.rowBytes : hi*m.rowBytes]
	if j.n == 1 {
		m.matVec(m.Cols, w, act, part.dst[lo:hi])
		return
	}
	m.matMul(m.Cols, w, hi-lo, act, j.n, part.dst[lo:], m.Rows)
}
