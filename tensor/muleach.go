package tensor

import (
	"fmt"

	"github.com/smolgo/smolgo/quant"
)

// A Product is one product of MulEach: Dst = X · Mᵀ for N activation rows
// (X holds N rows of M.Cols values, Dst receives N rows of M.Rows).
type Product struct {
	M   *Matrix
	X   []float32
	N   int
	Dst []float32
}

// MulEach computes several products, each with inputs of its own, in one
// pass over the pool: the rows of all the matrices form one range shared
// out among the threads, so the threads meet once instead of once per
// product. It is for many small products at once, such as the experts a
// mixture routes a few tokens to. Products that share an input (the same
// first element of X, and N) convert it once. Each product's rows get the
// bits Mul gives them.
//
// Products whose weights take the float GEMM at their N (F16 and BF16
// matrices with many rows of input) run as Mul calls of their own.
func MulEach(p *Pool, s *Scratch, prods []Product) error {
	j := &s.each
	j.parts = j.parts[:0]
	need := 0
	for _, pr := range prods {
		m := pr.M
		switch {
		case pr.N <= 0:
			return fmt.Errorf("tensor %s: product with %d activation rows", m.Name, pr.N)
		case len(pr.X) < pr.N*m.Cols || len(pr.Dst) < pr.N*m.Rows:
			return fmt.Errorf("tensor %s: product of %d rows needs %d inputs and %d outputs, have %d and %d",
				m.Name, pr.N, pr.N*m.Cols, pr.N*m.Rows, len(pr.X), len(pr.Dst))
		}
		if floatGEMM(m, pr.N) {
			if err := m.Mul(p, s, pr.Dst, pr.X, pr.N); err != nil {
				return err
			}
			continue
		}
		part := eachPart{m: m, dst: pr.Dst, x: pr.X, n: pr.N, act: -1}
		for _, e := range j.parts {
			if e.n == pr.N && &e.x[0] == &pr.X[0] && e.m.act == m.act {
				part.act = e.act // the same input, converted already
				break
			}
		}
		if part.act < 0 {
			part.act, part.convert = need, true
			need += pr.N * m.actRowBytes
		}
		j.parts = append(j.parts, part)
	}
	if len(j.parts) == 0 {
		return nil
	}
	if cap(s.act) < need {
		s.act = make([]byte, need)
	}
	j.act = s.act[:need]
	rows, work := 0, 0
	for i := range j.parts {
		part := &j.parts[i]
		m := part.m
		if part.convert {
			act := j.act[part.act : part.act+part.n*m.actRowBytes]
			for t := range part.n {
				if err := quant.QuantizeActivations(m.act, part.x[t*m.Cols:(t+1)*m.Cols], act[t*m.actRowBytes:(t+1)*m.actRowBytes]); err != nil {
					j.reset()
					return fmt.Errorf("tensor %s: %w", m.Name, err)
				}
			}
		}
		part.lo = rows
		rows += m.Rows
		work += m.Rows * m.Cols * part.n
	}
	j.rows = rows
	// Groups of rows of at least minWork multiply-adds, in whole groups of
	// interleaved rows, as mulInto hands them out.
	grain := max(16, minWork*rows/max(1, work))
	grain = (grain + 15) &^ 15
	p.Run(rows, grain, j)
	j.reset()
	return nil
}

// eachPart is one product of a MulEach job: its rows are [lo, lo+m.Rows)
// of the job's range, its converted activations (n rows) start at act.
type eachPart struct {
	m       *Matrix
	dst     []float32
	x       []float32
	lo, n   int
	act     int
	convert bool // this part converts the activations at act
}

type eachJob struct {
	parts []eachPart
	act   []byte
	rows  int
}

func (j *eachJob) reset() {
	clear(j.parts)
	j.parts, j.act = j.parts[:0], nil
}

func (j *eachJob) Do(lo, hi int) {
	// The parts are in row order: find the first that overlaps [lo, hi).
	i := 0
	for i < len(j.parts) && j.parts[i].lo+j.parts[i].m.Rows <= lo {
		i++
	}
	for ; i < len(j.parts) && j.parts[i].lo < hi; i++ {
		part := &j.parts[i]
		a, b := max(lo, part.lo)-part.lo, min(hi, part.lo+part.m.Rows)-part.lo
		j.mul(part, a, b)
	}
}

// mul computes rows [lo, hi) of one part, as mulJob.mul does.
func (j *eachJob) mul(part *eachPart, lo, hi int) {
	m := part.m
	act := j.act[part.act : part.act+part.n*m.actRowBytes]
	if g := m.interGroup; g > 0 && lo%g == 0 && hi%g == 0 {
		w := m.inter[lo*m.rowBytes : hi*m.rowBytes]
		if part.n == 1 {
			m.interMatVec(m.Cols, w, act, part.dst[lo:hi])
			return
		}
		m.interMatMul(m.Cols, w, hi-lo, act, part.n, part.dst[lo:], m.Rows)
		return
	}
	w := m.Data[lo*m.rowBytes : hi*m.rowBytes]
	if part.n == 1 {
		m.matVec(m.Cols, w, act, part.dst[lo:hi])
		return
	}
	m.matMul(m.Cols, w, hi-lo, act, part.n, part.dst[lo:], m.Rows)
}
