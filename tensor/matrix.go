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
	act []byte
	job mulJob
}

// Mul computes dst = x · mᵀ for n activation rows: x holds n rows of Cols
// values, dst receives n rows of Rows values (dst[t*Rows+r] is row r of the
// matrix dotted with activation row t). The activations are converted once
// per row, then the output rows are shared out among the pool's threads.
func (m *Matrix) Mul(p *Pool, s *Scratch, dst, x []float32, n int) error {
	if n <= 0 {
		return fmt.Errorf("tensor %s: product with %d activation rows", m.Name, n)
	}
	if len(x) < n*m.Cols || len(dst) < n*m.Rows {
		return fmt.Errorf("tensor %s: product of %d rows needs %d inputs and %d outputs, have %d and %d",
			m.Name, n, n*m.Cols, n*m.Rows, len(x), len(dst))
	}
	need := n * m.actRowBytes
	if cap(s.act) < need {
		s.act = make([]byte, need)
	}
	act := s.act[:need]
	for t := range n {
		if err := quant.QuantizeActivations(m.act, x[t*m.Cols:(t+1)*m.Cols], act[t*m.actRowBytes:(t+1)*m.actRowBytes]); err != nil {
			return fmt.Errorf("tensor %s: %w", m.Name, err)
		}
	}
	s.job = mulJob{m: m, dst: dst, act: act, n: n}
	// Rows are handed out in groups so that each thread streams a contiguous
	// slice of the weights, and a group is at least minWork weights (times
	// tokens): handing a thread less costs more in wake-up than it saves.
	grain := max(16, minWork/(m.Cols*n))
	p.Run(m.Rows, grain, &s.job)
	s.job = mulJob{}
	return nil
}

// minWork is the fewest multiply-adds worth handing to another thread.
const minWork = 1 << 16

type mulJob struct {
	m   *Matrix
	dst []float32
	act []byte
	n   int
}

func (j *mulJob) Do(lo, hi int) {
	m := j.m
	w := m.Data[lo*m.rowBytes : hi*m.rowBytes]
	if j.n == 1 {
		m.matVec(m.Cols, w, j.act, j.dst[lo:hi])
		return
	}
	m.matMul(m.Cols, w, hi-lo, j.act, j.n, j.dst[lo:], m.Rows)
}
