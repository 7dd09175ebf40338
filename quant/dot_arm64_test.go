//go:build gc && !purego

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// TestARM64Variants runs every arm64 kernel, at every level this CPU runs
// (under qemu: -cpu max for dotprod, -cpu cortex-a72 for plain NEON),
// against its Go twin on edge-case blocks the shared tests do not build:
// extreme and subnormal scales, weights and activations of -128 and 127
// everywhere, all-zero blocks, and rows of one to nine blocks. The mv
// kernels run as a Dot (out nil) and over several rows; the four-token
// kernels meet the same activations beside three random rows, and the i8mm
// two-row kernels the first two rows (a row twice where there is one).
func TestARM64Variants(t *testing.T) {
	for _, level := range []isaLevel{levelNEON, levelDotProd, levelI8MM} {
		base := min(level, levelDotProd)
		for wt, kern := range armKernels[base] {
			pair := armPairKernels[wt]
			if level < levelI8MM {
				pair = nil
			} else if pair == nil {
				continue // nothing new at this level
			}
			t.Run(fmt.Sprintf("%v/%v", level, wt), func(t *testing.T) {
				if level > detectLevel() {
					t.Skipf("this CPU runs %v, not %v", detectLevel(), level)
				}
				checkARM64Kernel(t, wt, kern, armX4Kernels[base][wt], pair)
			})
		}
	}
}

// edgeScales are f16 scales: the largest finite, a negative one, the
// smallest subnormal, zero and one.
var edgeScales = []uint16{0x7bff, 0xfbff, 0x0001, 0x0000, 0x3c00}

// edgeQuantBytes fill the quant bytes of a block: all zero, all ones
// (0xff: -1 as int8, the top value of every packed field), 0x80 (-128 as
// int8) and 0x7f.
var edgeQuantBytes = []byte{0x00, 0xff, 0x80, 0x7f}

// edgeWeights returns a row of nb blocks of type t whose quant bytes are fill
// and whose f16 scale fields are scale (the random ones when rng is used).
func edgeWeights(t gguf.Type, nb int, fill byte, scale uint16) []byte {
	bb := t.BlockBytes()
	w := make([]byte, nb*bb)
	for i := range w {
		w[i] = fill
	}
	for b := 0; b < nb; b++ {
		for _, off := range halfFields(t) {
			binary.LittleEndian.PutUint16(w[b*bb+off:], scale)
		}
	}
	return w
}

// edgeActs returns nb activation blocks of type vt with every quant q and
// scale d (f16 for q8_0, f32 for q8_K), bsums consistent; for f16, bf16
// and f32, nb elements of value q·d.
func edgeActs(vt gguf.Type, nb int, q int8, d float32) []byte {
	bb := vt.BlockBytes()
	a := make([]byte, nb*bb)
	for b := 0; b < nb; b++ {
		x := a[b*bb : (b+1)*bb]
		switch vt {
		case gguf.TypeQ8_0:
			binary.LittleEndian.PutUint16(x, halfBits(d))
			for i := 2; i < 34; i++ {
				x[i] = byte(q)
			}
		case gguf.TypeQ8_K:
			binary.LittleEndian.PutUint32(x, math.Float32bits(d))
			for i := 4; i < 260; i++ {
				x[i] = byte(q)
			}
			for j := 0; j < 16; j++ {
				binary.LittleEndian.PutUint16(x[260+2*j:], uint16(int16(16*int(q))))
			}
		case gguf.TypeF16:
			binary.LittleEndian.PutUint16(x, halfBits(float32(q)*d))
		case gguf.TypeBF16:
			binary.LittleEndian.PutUint16(x, f32ToBF16(float32(q)*d))
		case gguf.TypeF32:
			binary.LittleEndian.PutUint32(x, math.Float32bits(float32(q)*d))
		}
	}
	return a
}

// checkARM64Kernel checks mv kernel kern (and x4, the same type's
// four-token kernel, and pair, its two-row one, unless nil) against the Go
// twin.
func checkARM64Kernel(t *testing.T, wt gguf.Type, kern mvKernel, x4 x4Kernel, pair x2x4Kernel) {
	vt, _ := VecDotType(wt)
	twin := genericDots[wt]
	bs, wb, ab := kernelBlock(wt)
	// f16, bf16 and f32 sum in another order than the twin: allow float
	// rounding of the sum of |terms|.
	plain := wt.BlockSize() == 1
	sameDot := func(got, want float32, w, a []byte, n int) bool {
		if got == want || math.IsNaN(float64(got)) && math.IsNaN(float64(want)) {
			return true
		}
		tol := 1e-5 * math.Abs(float64(want))
		if plain {
			_, mag := refDot(t, wt, vt, n, w, a)
			tol += 3e-6 * mag
		}
		return math.Abs(float64(got-want)) <= tol
	}
	rng := rand.New(rand.NewPCG(7, uint64(wt)))
	extra := map[int][]byte{} // three random activation rows per row length
	check := func(what string, nb int, w, a []byte) {
		t.Helper()
		n := nb * bs
		rows := len(w) / (nb * wb)
		out := make([]float32, rows+1)
		out[rows] = 42 // past the rows: must stay
		last := kern(w, a[:nb*ab], nb, rows, out[:rows])
		for r := 0; r < rows; r++ {
			wr := w[r*nb*wb : (r+1)*nb*wb]
			want := twin(n, wr, a)
			one := kern(wr, a[:nb*ab], nb, 1, nil)
			for _, got := range []float32{out[r], one} {
				if !sameDot(got, want, wr, a, n) {
					t.Errorf("%s nb=%d row %d: got %g, Go twin %g", what, nb, r, got, want)
				}
			}
		}
		if last != out[rows-1] && !(math.IsNaN(float64(last)) && math.IsNaN(float64(out[rows-1]))) {
			t.Errorf("%s nb=%d: returned %g, last row %g", what, nb, last, out[rows-1])
		}
		if out[rows] != 42 {
			t.Errorf("%s nb=%d: wrote past the last row", what, nb)
		}
		if x4 == nil {
			return
		}
		// Tokens: a, then three random rows; outputs 3 floats apart.
		if extra[nb] == nil {
			for range 3 {
				extra[nb] = append(extra[nb], makeActs(t, rng, vt, n, fillRandom)...)
			}
		}
		as := append(append([]byte(nil), a[:nb*ab]...), extra[nb]...)
		const ostride = 3
		for r := 0; r < rows; r++ {
			wr := w[r*nb*wb : (r+1)*nb*wb]
			res := make([]float32, 4*ostride)
			x4(wr, as, nb*ab, nb, &res[0], 4*ostride)
			for tok := 0; tok < 4; tok++ {
				want := twin(n, wr, as[tok*nb*ab:])
				if got := res[tok*ostride]; !sameDot(got, want, wr, as[tok*nb*ab:], n) {
					t.Errorf("%s nb=%d row %d: four-token kernel, token %d: got %g, Go twin %g", what, nb, r, tok, got, want)
				}
			}
			for i, v := range res {
				if i%ostride != 0 && v != 0 {
					t.Errorf("%s nb=%d: four-token kernel wrote res[%d] between its outputs", what, nb, i)
				}
			}
		}
		if pair == nil {
			return
		}
		rb := nb * wb
		var wp []byte
		if rows < 2 {
			wp = append(w[:rb:rb], w[:rb]...)
		} else {
			wp = w[:2*rb]
		}
		const ldo = 3 // rows r, r+1 of token t at res[t*ldo+r]
		res := make([]float32, 4*ldo)
		pair(wp, rb, as, nb*ab, nb, &res[0], 4*ldo)
		for tok := 0; tok < 4; tok++ {
			for r := 0; r < 2; r++ {
				want := twin(n, wp[r*rb:], as[tok*nb*ab:])
				if got := res[tok*ldo+r]; !sameDot(got, want, wp[r*rb:], as[tok*nb*ab:], n) {
					t.Errorf("%s nb=%d: two-row kernel, row %d token %d: got %g, Go twin %g", what, nb, r, tok, got, want)
				}
			}
			if res[tok*ldo+2] != 0 {
				t.Errorf("%s nb=%d: two-row kernel wrote past token %d's rows", what, nb, tok)
			}
		}
	}
	actD := []float32{1, 1e-3, 3e4}
	if vt == gguf.TypeQ8_K {
		actD = append(actD, 1e30, -2.5e-40)
	}
	for _, nb := range []int{1, 2, 3, 9} {
		for _, fill := range edgeQuantBytes {
			for _, sc := range edgeScales {
				w := edgeWeights(wt, nb*bs/wt.BlockSize(), fill, sc)
				for _, q := range []int8{-128, 127, 0, -1} {
					for _, d := range actD {
						check(fmt.Sprintf("weights %#x scale %#04x, acts %d d=%g", fill, sc, q, d), nb, w, edgeActs(vt, nb*bs/vt.BlockSize(), q, d))
					}
				}
			}
		}
		// Random quants with random or edge scales, several rows.
		for rep := 0; rep < 20; rep++ {
			const rows = 3
			w := make([]byte, rows*nb*wb)
			for i := range w {
				w[i] = byte(rng.Uint32())
			}
			if plain {
				w = makeWeights(rng, wt, rows*nb*bs, fillRandom)
			}
			for b := 0; b < rows*nb; b++ {
				for _, off := range halfFields(wt) {
					sc := randHalf(rng, fillRandom)
					if rep%4 == 0 {
						sc = edgeScales[rng.IntN(len(edgeScales))]
					}
					binary.LittleEndian.PutUint16(w[b*wb+off:], sc)
				}
			}
			a := makeActs(t, rng, vt, nb*bs, fillRandom)
			if rep%2 == 1 && !plain {
				// Activations of -128 and 127 only (the quantizer never
				// makes -128, a caller's own blocks may).
				for b := 0; b < nb; b++ {
					x := a[b*ab : (b+1)*ab]
					qs, sums := x[2:34], []byte(nil)
					if vt == gguf.TypeQ8_K {
						qs, sums = x[4:260], x[260:292]
					}
					for i := range qs {
						qs[i] = byte(int8(-128 + 255*rng.IntN(2)))
					}
					for j := 0; j < len(sums)/2; j++ {
						var s int
						for _, v := range qs[16*j : 16*j+16] {
							s += int(int8(v))
						}
						binary.LittleEndian.PutUint16(sums[2*j:], uint16(int16(s)))
					}
				}
			}
			check(fmt.Sprintf("random #%d", rep), nb, w, a)
		}
	}
}
