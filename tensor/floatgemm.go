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
//
// On CPUs with AVX-512 BF16, BF16 weights (of an even number of columns)
// take VDPBF16PS instead, as llama.cpp does: a slab holds column pairs,
// the activations stay bfloat16, and each instruction adds two products
// per row, the odd column's first, each with one rounding and with
// denormals flushed to zero (gemm32x12BF16Go is the definition).

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

// bf16Pairs reports whether m's float GEMM takes VDPBF16PS.
func bf16Pairs(m *Matrix) bool {
	return m.Type == gguf.TypeBF16 && packedBF16 && m.Cols%2 == 0
}

// padTiles copies the n rows of rb bytes at act to dst, then zero rows up
// to a whole number of 12-token tiles.
func padTiles(dst, act []byte, n, rb int) {
	copy(dst, act[:n*rb])
	clear(dst[n*rb:])
}

// mulBF16Pairs is mulFloatGEMM for bf16Pairs matrices: x holds the n
// bfloat16 activation rows (padded to whole tiles).
func mulBF16Pairs(m *Matrix, lo, hi int, x []byte, n int, dst []float32) {
	K, rb := m.Cols, m.actRowBytes
	slabGEMM(m, lo, hi, n, packRows*K*2, dst,
		func(slab []byte, r0, rows int) {
			if rows < packRows || !packPairsASM(slab, m.Data[r0*m.rowBytes:(r0+rows)*m.rowBytes], m.rowBytes, K) {
				packPairsGo(slab, m, r0, rows)
			}
		},
		func(slab []byte, tok, ntok int, out []float32, os int) {
			bf16Kernel(slab, x[tok*rb:], rb, K/2, out, os, ntok)
		})
}

// packPairsGo copies rows [r0, r0+rows) of m (BF16) into slab as column
// pairs: dword [j][r] holds row r's columns 2j and 2j+1 (rows past the
// matrix zero).
func packPairsGo(slab []byte, m *Matrix, r0, rows int) {
	if rows < packRows {
		clear(slab)
	}
	for r := range rows {
		w := m.Data[(r0+r)*m.rowBytes:]
		for j := range m.Cols / 2 {
			copy(slab[4*(j*packRows+r):4*(j*packRows+r)+4], w[4*j:4*j+4])
		}
	}
}

// gemm32x12BF16Go is the BF16 micro-kernel in Go, the definition of
// VDPBF16PS's sums: the outputs of 32 rows (a slab w of kp column pairs)
// for ntok of the 12 tokens whose bfloat16 activation rows start at x, xs
// bytes apart, written to out (row t at out[t*os:]):
//
//	for j := range kp { // column pairs
//		acc = ftz(fma(daz(w[2j+1]), daz(a[2j+1]), acc))
//		acc = ftz(fma(daz(w[2j]), daz(a[2j]), acc))
//	}
//
// with float32 fused multiply-adds, denormal inputs read as zero and
// denormal results flushed to zero (of the same sign).
func gemm32x12BF16Go(w, x []byte, xs, kp int, out []float32, os, ntok int) {
	bf := func(b []byte) float32 { return daz(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)) }
	for t := range ntok {
		for r := range packRows {
			var acc float32
			for j := range kp {
				wp := w[4*(j*packRows+r):]
				ap := x[t*xs+4*j:]
				acc = daz(fma32(bf(wp[2:]), bf(ap[2:]), acc))
				acc = daz(fma32(bf(wp), bf(ap), acc))
			}
			out[t*os+r] = acc
		}
	}
}

// daz returns x, or a zero of its sign if x is a denormal.
func daz(x float32) float32 {
	if b := math.Float32bits(x); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return x
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
	slabGEMM(m, lo, hi, n, packRows*K*es, dst,
		func(slab []byte, r0, rows int) { packSlab(slab, m, r0, rows) },
		func(slab []byte, tok, ntok int, out []float32, os int) {
			packedKernel(slabType, slab, x[tok*K:], K, K, out, os, ntok)
		})
}

// slabGEMM runs rows [lo, hi) of m's product with n tokens slab by slab:
// pack fills a slab of slabBytes with rows [r0, r0+rows), then kernel
// writes its 32 outputs for tokens tok to tok+ntok-1 to out (token t at
// out[t*os:]), 12 tokens at a time, into dst (row t at dst[t*m.Rows:])
// or, for a last slab of fewer rows, through a tile of its own.
func slabGEMM(m *Matrix, lo, hi, n, slabBytes int, dst []float32,
	pack func(slab []byte, r0, rows int),
	kernel func(slab []byte, tok, ntok int, out []float32, os int)) {
	b, _ := slabPool.Get().(*slabBuf)
	if b == nil {
		b = new(slabBuf)
	}
	if cap(b.slab) < slabBytes {
		b.slab = make([]byte, slabBytes)
	}
	slab := b.slab[:slabBytes]
	for r0 := lo; r0 < hi; r0 += packRows {
		rows := min(packRows, hi-r0)
		pack(slab, r0, rows)
		for tok := 0; tok < n; tok += packTile {
			ntok := min(packTile, n-tok)
			if rows == packRows {
				kernel(slab, tok, ntok, dst[tok*m.Rows+r0:], m.Rows)
				continue
			}
			kernel(slab, tok, ntok, b.tmp[:], packRows)
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
