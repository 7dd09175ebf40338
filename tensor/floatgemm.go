package tensor

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/smolgo/smolgo/gguf"
)

// The prefill GEMM of F16 and BF16 weights.
//
// quant's float kernels read a weight once per token (MatVec) or per four
// tokens (its wide kernel, which keeps MatVec's bits for every token). From
// floatGEMMMinTokens tokens on, Matrix products of float weights take the
// packed GEMM's micro-kernels instead (see Packed): each worker copies 32
// weight rows at a time into a slab, per call (the model is not repacked
// and holds no second copy), and runs every token through it 12 at a time,
// reading each weight once per 12 tokens. The activations are the vec-dot
// type's values (F16 or BF16 rounded, as llama.cpp multiplies them),
// widened to float32 once per call for all the workers.
//
// Numerics: each output is the float32 sum of its products with fused
// multiply-adds in column order (the Packed kernels' order), which depends
// only on its own row and token; it differs from MatVec's lanes by float32
// rounding, as the K-quant GEMM's does from 24 tokens on. Below that a
// token's outputs stay MatVec's bits, so decode batches are unchanged.

// floatGEMMMinTokens is the smallest batch that takes the float GEMM, the
// same threshold as quant's K-quant GEMM.
const floatGEMMMinTokens = 24

// floatGEMM reports whether products of m by n tokens take the float GEMM.
// F32 weights (test models, mostly) do not: their products keep MatVec's
// bits at every batch size, which the prompt cache's and speculation's
// tests use as an exact oracle.
func floatGEMM(m *Matrix, n int) bool {
	switch m.Type {
	case gguf.TypeF16, gguf.TypeBF16:
		return havePackedKernels && n >= floatGEMMMinTokens && m.inter == nil
	}
	return false
}

// widenActivations writes the n activation rows of act (cols values each,
// in vec-dot type t: F16 or BF16) to dst as float32, exactly, and
// zero rows after them up to a whole number of 12-token tiles (the
// micro-kernels read whole tiles).
func widenActivations(dst []float32, t gguf.Type, act []byte, n, cols int) {
	for i := range n * cols {
		h := binary.LittleEndian.Uint16(act[2*i:])
		if t == gguf.TypeF16 {
			dst[i] = FromF16(h)
		} else {
			dst[i] = math.Float32frombits(uint32(h) << 16)
		}
	}
	clear(dst[n*cols:])
}

// slabPool holds slabs (32 rows of a matrix in the micro-kernels' layout)
// and the output tile of a slab's last rows, per worker.
var slabPool sync.Pool

type slabBuf struct {
	slab []byte
	tmp  [packTile * packRows]float32
}

// mulFloatGEMM computes rows [lo, hi) of m's product with the j.n widened
// activation rows x (cols floats each, padded to whole tiles) into dst
// (row t at dst[t*m.Rows:]).
func mulFloatGEMM(m *Matrix, lo, hi int, x []float32, n int, dst []float32) {
	K := m.Cols
	slabType, es := gguf.TypeF32, 4
	if m.Type == gguf.TypeF16 {
		slabType, es = gguf.TypeF16, 2 // the F16 kernel widens the weights itself
	}
	b, _ := slabPool.Get().(*slabBuf)
	if b == nil {
		b = new(slabBuf)
	}
	if cap(b.slab) < packRows*K*es {
		b.slab = make([]byte, packRows*K*es)
	}
	slab := b.slab[:packRows*K*es]
	for r0 := lo; r0 < hi; r0 += packRows {
		rows := min(packRows, hi-r0)
		packSlab(slab, m, r0, rows)
		for tok := 0; tok < n; tok += packTile {
			ntok := min(packTile, n-tok)
			xt := x[tok*K:]
			if rows == packRows {
				packedKernel(slabType, slab, xt, K, K, dst[tok*m.Rows+r0:], m.Rows, ntok)
				continue
			}
			packedKernel(slabType, slab, xt, K, K, b.tmp[:], packRows, ntok)
			for t := range ntok {
				copy(dst[(tok+t)*m.Rows+r0:(tok+t)*m.Rows+r0+rows], b.tmp[t*packRows:])
			}
		}
	}
	slabPool.Put(b)
}

// packSlab copies rows [r0, r0+rows) of m into slab: column c's weights of
// the 32 rows side by side (rows past the matrix zero), as F16 for F16
// weights and as float32 for BF16 (widened, exactly). 32 whole rows go
// through the AVX-512 packers where the CPU has them.
func packSlab(slab []byte, m *Matrix, r0, rows int) {
	if rows == packRows && packSlabASM(slab, m.Data[r0*m.rowBytes:(r0+rows)*m.rowBytes], m.Type, m.rowBytes, m.Cols) {
		return
	}
	packSlabGo(slab, m, r0, rows)
}

// packSlabGo is packSlab in Go: the twin of the assembly packers.
func packSlabGo(slab []byte, m *Matrix, r0, rows int) {
	K, rb := m.Cols, m.rowBytes
	if rows < packRows {
		clear(slab)
	}
	for r := range rows {
		w := m.Data[(r0+r)*rb : (r0+r+1)*rb]
		switch m.Type {
		case gguf.TypeF16:
			for c := range K {
				o := 2 * (c*packRows + r)
				slab[o], slab[o+1] = w[2*c], w[2*c+1]
			}
		default: // BF16
			for c := range K {
				o := 4 * (c*packRows + r)
				slab[o], slab[o+1], slab[o+2], slab[o+3] = 0, 0, w[2*c], w[2*c+1]
			}
		}
	}
}
