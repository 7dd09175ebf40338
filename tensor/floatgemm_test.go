package tensor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
)

// TestFloatGEMM checks products of F16 and BF16 weights by batches that
// take the float GEMM (24 tokens or more, on CPUs with the packed kernels)
// against its definition, bit for bit (F32 weights keep MatVec's bits): each output is the fused
// multiply-add chain in column order of the row's weights and the token's
// activations rounded to the vec-dot type. Whole slabs and a last partial
// one, a tail of tokens, fused products and SwiGLU, over 1 to 3 threads;
// under 24 tokens the outputs stay MatVec's.
func TestFloatGEMM(t *testing.T) {
	if !havePackedKernels {
		t.Skip("no packed kernels on this CPU or build (purego): quant's float kernels take every batch")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16, gguf.TypeF32} {
		for _, sh := range []struct{ rows, cols, n int }{{32, 64, 24}, {45, 96, 25}, {100, 64, 37}, {64, 128, 100}, {40, 64, 23}, {40, 33, 30}} {
			for _, threads := range []int{1, 3} {
				name := fmt.Sprintf("%v/%dx%d/%d tokens/%d threads", typ, sh.rows, sh.cols, sh.n, threads)
				m := randomFloatMatrix(t, r, "w", typ, sh.rows, sh.cols)
				m2 := randomFloatMatrix(t, r, "w2", typ, sh.rows, sh.cols)
				x := make([]float32, sh.n*sh.cols)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				p := NewPool(threads)
				var s Scratch
				got, got2 := make([]float32, sh.n*sh.rows), make([]float32, sh.n*sh.rows)
				if err := MulInto(p, &s, x, sh.n, Out{m, got}, Out{m2, got2}); err != nil {
					t.Fatal(err)
				}
				glu, gb, ub := make([]float32, sh.n*sh.rows), make([]float32, sh.n*sh.rows), make([]float32, sh.n*sh.rows)
				if err := MulSwiGLU(p, &s, glu, gb, ub, m, m2, x, sh.n); err != nil {
					t.Fatal(err)
				}
				p.Close()
				for _, c := range []struct {
					m   *Matrix
					got []float32
				}{{m, got}, {m2, got2}, {m, gb}, {m2, ub}} {
					want := floatGEMMWant(t, c.m, x, sh.n)
					for i := range want {
						if math.Float32bits(c.got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s, %s: token %d row %d: %g, want %g", name, c.m.Name, i/sh.rows, i%sh.rows, c.got[i], want[i])
						}
					}
				}
				want := make([]float32, sh.n*sh.rows)
				SwiGLU(want, got, got2)
				for i := range want {
					if glu[i] != want[i] {
						t.Fatalf("%s: SwiGLU %d: %g, want %g", name, i, glu[i], want[i])
					}
				}
			}
		}
	}
}

// floatGEMMWant is the float GEMM's definition, or MatVec's outputs per
// token under floatGEMMMinTokens.
func floatGEMMWant(t *testing.T, m *Matrix, x []float32, n int) []float32 {
	t.Helper()
	out := make([]float32, n*m.Rows)
	act := make([]byte, m.actRowBytes)
	for tok := range n {
		if err := quant.QuantizeActivations(m.act, x[tok*m.Cols:(tok+1)*m.Cols], act); err != nil {
			t.Fatal(err)
		}
		if !floatGEMM(m, n) {
			m.matVec(m.Cols, m.Data, act, out[tok*m.Rows:(tok+1)*m.Rows])
			continue
		}
		if bf16Pairs(m) { // VDPBF16PS: column pairs, the odd column first, denormals flushed
			flush := func(x float32) float32 {
				if math.Abs(float64(x)) < 0x1p-126 {
					return float32(math.Copysign(0, float64(x)))
				}
				return x
			}
			bf := func(b []byte) float32 {
				return flush(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
			}
			for r := range m.Rows {
				w := m.Data[r*m.rowBytes:]
				var acc float32
				for c := 0; c < m.Cols; c += 2 {
					acc = flush(fma32(bf(w[2*c+2:]), bf(act[2*c+2:]), acc))
					acc = flush(fma32(bf(w[2*c:]), bf(act[2*c:]), acc))
				}
				out[tok*m.Rows+r] = acc
			}
			continue
		}
		a := make([]float32, m.Cols)
		widenActivations(a, m.act, act, 1, m.Cols)
		for r := range m.Rows {
			w := m.Data[r*m.rowBytes:]
			var acc float32
			for c := range m.Cols {
				var wc float32
				switch m.Type {
				case gguf.TypeF16:
					wc = FromF16(binary.LittleEndian.Uint16(w[2*c:]))
				case gguf.TypeBF16:
					wc = math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*c:])) << 16)
				default:
					wc = math.Float32frombits(binary.LittleEndian.Uint32(w[4*c:]))
				}
				acc = fma32(wc, a[c], acc)
			}
			out[tok*m.Rows+r] = acc
		}
	}
	return out
}

func randomFloatMatrix(t *testing.T, r *rand.Rand, name string, typ gguf.Type, rows, cols int) *Matrix {
	t.Helper()
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.1)
	}
	rb, _ := typ.RowBytes(cols)
	data := make([]byte, rows*rb)
	for i := range rows {
		if err := quant.QuantizeActivations(typ, w[i*cols:(i+1)*cols], data[i*rb:(i+1)*rb]); err != nil {
			t.Fatal(err)
		}
	}
	m, err := NewMatrix(name, typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPackSlab holds the AVX-512 slab packers to packSlabGo byte for byte.
func TestPackSlab(t *testing.T) {
	if !packedAVX512 {
		t.Skip("no AVX-512 on this CPU (or GODEBUG): packSlabGo packs every slab")
	}
	r := rand.New(rand.NewPCG(43, 44))
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		for _, cols := range []int{2, 64, 130, 1024} {
			m := randomFloatMatrix(t, r, "w", typ, 70, cols)
			es := 4
			if typ == gguf.TypeF16 {
				es = 2
			}
			for _, r0 := range []int{0, 7, 38} {
				got, want := make([]byte, packRows*cols*es), make([]byte, packRows*cols*es)
				if !packSlabASM(got, m.Data[r0*m.rowBytes:(r0+packRows)*m.rowBytes], typ, m.rowBytes, cols) {
					t.Fatalf("%v, %d columns: the AVX-512 packer refused", typ, cols)
				}
				packSlabGo(want, m, r0, packRows)
				if !bytes.Equal(got, want) {
					t.Fatalf("%v, %d columns, rows from %d: the packed slab differs from packSlabGo's", typ, cols, r0)
				}
			}
		}
	}
}

// TestBF16Kernel holds the VDPBF16PS micro-kernel to its Go twin bit for
// bit: random weights and activations with denormals, zeros and large
// values among them, 1 to 12 tokens, several column-pair counts.
func TestBF16Kernel(t *testing.T) {
	if !packedBF16 {
		t.Skip("no AVX-512 BF16 on this CPU (or GODEBUG): BF16 weights take the float32 GEMM")
	}
	r := rand.New(rand.NewPCG(49, 50))
	bf16 := func() uint16 {
		switch r.IntN(8) {
		case 0:
			return uint16(r.IntN(0x80)) | uint16(r.IntN(2))<<15 // denormal or zero
		case 1:
			return uint16(0x7e00 + r.IntN(0x80)) // large
		}
		return uint16(math.Float32bits(float32(r.NormFloat64())) >> 16)
	}
	for _, kp := range []int{1, 3, 64} {
		w := make([]byte, packRows*kp*4)
		for i := 0; i < len(w); i += 2 {
			binary.LittleEndian.PutUint16(w[i:], bf16())
		}
		const xs = 4*64 + 8
		x := make([]byte, packTile*xs)
		for i := 0; i < len(x); i += 2 {
			binary.LittleEndian.PutUint16(x[i:], bf16())
		}
		for _, ntok := range []int{1, 5, 12} {
			const os = packRows + 3
			got, want := make([]float32, packTile*os), make([]float32, packTile*os)
			bf16Kernel(w, x, xs, kp, got, os, ntok)
			gemm32x12BF16Go(w, x, xs, kp, want, os, ntok)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("%d pairs, %d tokens: out[%d] (token %d row %d) = %g, Go twin %g", kp, ntok, i, i/os, i%os, got[i], want[i])
				}
			}
		}
	}
}
