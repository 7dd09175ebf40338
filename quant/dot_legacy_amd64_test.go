//go:build gc && !purego

package quant

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

var legacyTypes = []gguf.Type{gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0, gguf.TypeMXFP4}

// legacyTypesAt returns the types with legacy kernels at level (q8_0 has
// them with AVX-512 only; the pure Go level has every twin).
func legacyTypesAt(level isaLevel) []gguf.Type {
	if level == levelGeneric {
		return legacyTypes
	}
	var ts []gguf.Type
	for _, t := range legacyTypes {
		if _, ok := legacyKernelSet(level)[t]; ok {
			ts = append(ts, t)
		}
	}
	return ts
}

// legacyLevels returns the levels with legacy kernels, skipping (and
// saying so) those this CPU lacks.
func legacyLevels(t *testing.T) []isaLevel {
	var ls []isaLevel
	for _, l := range []isaLevel{levelAVX2, levelAVX512} {
		if detectLevel() < l {
			t.Logf("skipping the %v kernels: this CPU (or GODEBUG) lacks %v", l, l)
			continue
		}
		ls = append(ls, l)
	}
	if len(ls) == 0 {
		t.Skip("no AVX2 on this CPU: the legacy kernels cannot run")
	}
	return ls
}

// sameBits reports whether a and b are the same float32 bits.
func sameBits(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// TestLegacyKernelsBitExact runs each assembly kernel of q4_1, q5_0 and
// q5_1 on its own (mv as MatVec and Dot, x4 and x2 with gaps between the
// activation rows and the outputs) against the Go twin: the same bits on
// every fill, not only the exact ones, for row lengths of 1 to 37 blocks
// and 1 to 13 rows (the mv kernels' groups of four and their overlapping
// last group).
func TestLegacyKernelsBitExact(t *testing.T) {
	for _, level := range legacyLevels(t) {
		for _, wt := range legacyTypesAt(level) {
			ks := legacyKernelSet(level)[wt]
			vt, _ := VecDotType(wt)
			twin := genericDots[wt]
			rng := rand.New(rand.NewPCG(31, uint64(wt)))
			for _, nb := range []int{1, 2, 3, 4, 5, 8, 9, 36, 37} {
				n := 32 * nb
				rb, _ := wt.RowBytes(n)
				ab, _ := vt.RowBytes(n)
				for _, f := range allFills {
					name := fmt.Sprintf("%v/%v/nb=%d/%v", level, wt, nb, f)
					const maxRows = 13
					w := makeWeights(rng, wt, n*maxRows, f)
					a := makeActs(t, rng, vt, n, f)
					want := make([]float32, maxRows)
					for r := range want {
						want[r] = twin(n, w[r*rb:(r+1)*rb], a)
					}
					mv := asmMatVec(wt, ks.mv)
					for nrows := 1; nrows <= maxRows; nrows++ {
						got := make([]float32, nrows+1)
						got[nrows] = 42
						mv(n, w[:nrows*rb], a, got[:nrows])
						for r := range nrows {
							if !sameBits(got[r], want[r]) {
								t.Errorf("%s: mv of %d rows, row %d: %g, Go twin %g", name, nrows, r, got[r], want[r])
							}
						}
						if got[nrows] != 42 {
							t.Errorf("%s: mv of %d rows wrote past its output", name, nrows)
						}
						if ret := ks.mv(w[:nrows*rb], a, nb, nrows, got[:nrows]); !sameBits(ret, want[nrows-1]) {
							t.Errorf("%s: mv of %d rows returned %g, last row %g", name, nrows, ret, want[nrows-1])
						}
					}
					dot := asmDot(wt, ks.mv)
					for r := range maxRows {
						if got := dot(n, w[r*rb:(r+1)*rb], a); !sameBits(got, want[r]) {
							t.Errorf("%s: Dot row %d: %g, Go twin %g", name, r, got, want[r])
						}
					}
					// x4 and x2: one row times tokens astride bytes apart,
					// outputs ostride floats apart.
					const gap, ostride = 40, 3
					for _, x := range []struct {
						kern x4Kernel
						ntok int
					}{{ks.x4, 4}, {ks.x2, 2}} {
						if x.kern == nil {
							continue // AVX-512 has none
						}
						acts := make([]byte, x.ntok*(ab+gap))
						wantT := make([]float32, x.ntok)
						r := rng.IntN(maxRows)
						for tok := range x.ntok {
							at := makeActs(t, rng, vt, n, f)
							copy(acts[tok*(ab+gap):], at)
							wantT[tok] = twin(n, w[r*rb:(r+1)*rb], at)
						}
						out := make([]float32, x.ntok*ostride)
						for i := range out {
							out[i] = 42
						}
						x.kern(w[r*rb:(r+1)*rb], acts, ab+gap, nb, &out[0], 4*ostride)
						for i, o := range out {
							tok := i / ostride
							if i%ostride != 0 {
								if o != 42 {
									t.Errorf("%s: x%d wrote out[%d]", name, x.ntok, i)
								}
								continue
							}
							if !sameBits(o, wantT[tok]) {
								t.Errorf("%s: x%d token %d: %g, Go twin %g", name, x.ntok, tok, o, wantT[tok])
							}
						}
					}
				}
			}
		}
	}
}

// TestLegacyDispatchBitExact checks the legacy types through each level's
// dispatch (Dot, MatVec, and MatMul of 1 to 40 tokens: every GEMM
// micro-kernel with leftover rows and tokens, the AVX2 GEMM under AVX-512
// for 12 rows, the x4 and x2 kernels or MatVec for 5) against the Go twin,
// bit for bit: every batch gives each token the twin's, so MatVec's,
// result.
func TestLegacyDispatchBitExact(t *testing.T) {
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		for _, wt := range legacyTypesAt(level) {
			vt, _ := VecDotType(wt)
			twin := genericDots[wt]
			rng := rand.New(rand.NewPCG(33, uint64(wt)))
			for _, sh := range []struct{ n, nrows int }{{1152, 37}, {96, 5}, {640, 16}, {320, 12}} {
				rb, _ := wt.RowBytes(sh.n)
				ab, _ := vt.RowBytes(sh.n)
				const maxTok, ldo = 40, 41
				for _, f := range []blockFill{fillRandom, fillNegScale, fillMax} {
					name := fmt.Sprintf("%v/%v/n=%d/%v", level, wt, sh.n, f)
					w := makeWeights(rng, wt, sh.n*sh.nrows, f)
					a := make([]byte, 0, maxTok*ab)
					for range maxTok {
						a = append(a, makeActs(t, rng, vt, sh.n, f)...)
					}
					want := make([]float32, maxTok*sh.nrows)
					for tok := range maxTok {
						for r := range sh.nrows {
							want[tok*sh.nrows+r] = twin(sh.n, w[r*rb:(r+1)*rb], a[tok*ab:(tok+1)*ab])
						}
					}
					dot, _ := ks.dot(wt)
					mv, _ := ks.matVec(wt)
					mm, _ := ks.matMul(wt)
					got := make([]float32, sh.nrows)
					mv(sh.n, w, a[:ab], got)
					for r := range sh.nrows {
						if !sameBits(got[r], want[r]) {
							t.Errorf("%s: MatVec row %d: %g, Go twin %g", name, r, got[r], want[r])
						}
						if d := dot(sh.n, w[r*rb:(r+1)*rb], a[:ab]); !sameBits(d, want[r]) {
							t.Errorf("%s: Dot row %d: %g, Go twin %g", name, r, d, want[r])
						}
					}
					for _, ntok := range []int{1, 2, 3, 4, 5, 7, 8, 15, 16, 20, 23, 24, 25, 28, 30, 33, 36, maxTok} {
						out := make([]float32, (ntok-1)*ldo+sh.nrows)
						mm(sh.n, w, sh.nrows, a, ntok, out, ldo)
						bad := 0
						for tok := range ntok {
							for r := range sh.nrows {
								if g, w := out[tok*ldo+r], want[tok*sh.nrows+r]; !sameBits(g, w) && bad < 3 {
									bad++
									t.Errorf("%s: MatMul of %d tokens, token %d row %d: %g, Go twin %g", name, ntok, tok, r, g, w)
								}
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkLegacyGEMM compares the legacy types' batched paths on rows of
// 1152 (Gemma 3 1B's width): "mv" is MatVec token by token, "x4" the AVX2
// kernels of one row × 4 (and 2) tokens (matMulBy4),
// "gemm" the panels of 8 (AVX2) or 16 rows (AVX-512), panel packing and
// scale preparation included. Rates count the weights once per token, as MatMul's do;
// tok/s is tokens per second through 1152×6912 weights (one projection).
//
//	go test -run '^$' -bench LegacyGEMM ./quant/
func BenchmarkLegacyGEMM(b *testing.B) {
	if detectLevel() < levelAVX2 {
		b.Skip("no AVX2: the GEMMs cannot run")
	}
	const n = 1152
	for _, level := range []isaLevel{levelAVX2, levelAVX512} {
		if detectLevel() < level {
			continue
		}
		for _, wt := range legacyTypesAt(level) {
			for _, rows := range []int{256, 65536} {
				benchLegacyGEMM(b, level, wt, n, rows)
			}
		}
	}
}

// benchLegacyGEMM runs BenchmarkLegacyGEMM's variants on rows×n weights:
// 256 rows stay in the L2 cache, 65536 (45 to 50 MB) come from memory.
func benchLegacyGEMM(b *testing.B, level isaLevel, wt gguf.Type, n, rows int) {
	{
		ks := legacyKernelSet(level)[wt]
		mv := asmMatVec(wt, ks.mv)
		variants := []struct {
			name string
			mm   MatMulFunc
		}{{"mv", matMulByRows(wt, mv)}, {"gemm", matMulLegacyGEMM(wt, legGemmSet(level)[wt], matMulByRows(wt, mv))}}
		if k2, ok := legacyKernelSet(levelAVX2)[wt]; ok { // not q8_0
			variants = append(variants, struct {
				name string
				mm   MatMulFunc
			}{"x4", matMulBy4(wt, k2.x4, k2.x2, mv)})
		}
		rng := rand.New(rand.NewPCG(15, 16))
		w := makeWeights(rng, wt, n*rows, fillRandom)
		rb, _ := wt.RowBytes(n)
		vt, _ := VecDotType(wt)
		for _, ntok := range []int{1, 2, 4, 5, 8, 16, 128} {
			a := make([]byte, 0)
			for range ntok {
				a = append(a, makeActs(b, rng, vt, n, fillRandom)...)
			}
			out := make([]float32, rows*ntok)
			for _, v := range variants {
				b.Run(fmt.Sprintf("%v/%v/rows=%d/%s/tok=%d", level, wt, rows, v.name, ntok), func(b *testing.B) {
					bytes := int64(rows * rb * ntok)
					b.SetBytes(bytes)
					done := cpuRate(b, bytes)
					for b.Loop() {
						v.mm(n, w, rows, a, ntok, out, rows)
					}
					b.ReportMetric(float64(b.N*ntok)*float64(rows)/6912/b.Elapsed().Seconds(), "tok/s")
					done()
				})
			}
		}
	}
}

// legPackGo is the Go reference of the 32-quant panel packers of rows rows:
// quant e of row r (unsigned: q4_0's nibble, q5_0's five bits, q8_0's byte
// plus 128, mxfp4's table value plus 12) at 4·rows·(e/4)+4r+e%4, d and m
// of row r as float32 at 32·rows+4r and 36·rows+4r (the types with one
// scale have no m: zero; mxfp4's d is 2^(e-128)).
func legPackGo(wt gguf.Type, rows int, panel, w []byte, rb, nb int) {
	wb, pl := wt.BlockBytes(), 40*rows
	off := map[gguf.Type][2]int{gguf.TypeQ4_1: {4, -1}, gguf.TypeQ5_0: {6, 2}, gguf.TypeQ5_1: {8, 4},
		gguf.TypeQ4_0: {2, -1}, gguf.TypeQ8_0: {2, -1}, gguf.TypeMXFP4: {1, -1}}[wt]
	qs, qh := off[0], off[1] // the quants, the fifth bits
	for b := 0; b < nb; b++ {
		p := panel[b*pl : (b+1)*pl]
		for r := 0; r < rows; r++ {
			x := w[r*rb+b*wb : r*rb+(b+1)*wb]
			var h uint32
			if qh >= 0 {
				h = binary.LittleEndian.Uint32(x[qh:])
			}
			for e := 0; e < 32; e++ {
				v := x[qs+e%16] >> (4 * uint(e/16)) & 0xf
				v |= byte(h>>uint(e)&1) << 4
				switch wt {
				case gguf.TypeQ8_0:
					v = x[qs+e] ^ 0x80
				case gguf.TypeMXFP4:
					v = byte(mxfp4Values[v] + 12)
				}
				p[4*rows*(e/4)+4*r+e%4] = v
			}
			d := f16(x)
			if wt == gguf.TypeMXFP4 {
				d = e8m0Half(x[0])
			}
			binary.LittleEndian.PutUint32(p[32*rows+4*r:], math.Float32bits(d))
			m := float32(0)
			if wt == gguf.TypeQ4_1 || wt == gguf.TypeQ5_1 {
				m = f16(x[2:])
			}
			binary.LittleEndian.PutUint32(p[36*rows+4*r:], math.Float32bits(m))
		}
	}
}

// legGemmOffset is the offset the panels of the types with one scale hold
// their quants plus (0 for those with an m).
var legGemmOffset = map[gguf.Type]int32{gguf.TypeQ4_0: 8, gguf.TypeQ5_0: 16, gguf.TypeQ8_0: 128, gguf.TypeMXFP4: 12}

// legGemmTypes returns the types with a GEMM at level, in a fixed order.
func legGemmTypes(level isaLevel) []gguf.Type {
	var ts []gguf.Type
	for _, t := range []gguf.Type{gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0, gguf.TypeMXFP4} {
		if _, ok := legGemmSet(level)[t]; ok {
			ts = append(ts, t)
		}
	}
	return ts
}

// TestLegacyGEMMPack holds the AVX2 and AVX-512 panel packers to
// legPackGo byte for byte, and the scale preparation to its definition.
func TestLegacyGEMMPack(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for _, level := range legacyLevels(t) {
		for _, wt := range legGemmTypes(level) {
			gm := legGemmSet(level)[wt]
			pl := 40 * gm.rows
			for _, nb := range []int{1, 3, 36} {
				name := fmt.Sprintf("%v/%v/nb=%d", level, wt, nb)
				rb := nb*wt.BlockBytes() + 7 // rows need not be adjacent
				w := make([]byte, gm.rows*rb)
				for r := range gm.rows {
					copy(w[r*rb:], makeWeights(rng, wt, 32*nb, fillRandom))
				}
				got, want := make([]byte, nb*pl), make([]byte, nb*pl)
				gm.pack(got, w, rb, nb)
				legPackGo(wt, gm.rows, want, w, rb, nb)
				if legGemmOffset[wt] != 0 {
					for b := 0; b < nb; b++ { // the one-scale types' m is not written
						copy(got[b*pl+36*gm.rows:(b+1)*pl], want[b*pl+36*gm.rows:])
					}
				}
				if !bytes.Equal(got, want) {
					for i := range got {
						if got[i] != want[i] {
							t.Errorf("%s: panel byte %d (block %d, offset %d): %#x, want %#x", name, i, i/pl, i%pl, got[i], want[i])
							break
						}
					}
				}
				// Scales: 11 tokens (a group of 8 and part of another).
				vt, _ := VecDotType(wt)
				ab, _ := vt.RowBytes(32 * nb)
				const ntok, gap = 11, 5
				a := make([]byte, ntok*(ab+gap))
				for tok := range ntok {
					copy(a[tok*(ab+gap):], makeActs(t, rng, vt, 32*nb, fillRandom))
				}
				sc := make([]byte, 2*nb*legScaleLen)
				gm.prep(a, ab+gap, nb, ntok, sc)
				for tok := range ntok {
					for b := 0; b < nb; b++ {
						y := a[tok*(ab+gap)+b*vt.BlockBytes():]
						e := sc[legScaleLen*(nb*(tok/8)+b)+4*(tok%8):]
						if d := math.Float32frombits(binary.LittleEndian.Uint32(e)); d != f16(y) {
							t.Errorf("%s: token %d block %d: d %g, want %g", name, tok, b, d, f16(y))
						}
						c := binary.LittleEndian.Uint32(e[32:])
						if vt == gguf.TypeQ8_1 {
							if s := math.Float32frombits(c); s != f16(y[2:]) {
								t.Errorf("%s: token %d block %d: s %g, want %g", name, tok, b, s, f16(y[2:]))
							}
							continue
						}
						var sum int32
						for _, q := range y[2:34] {
							sum += int32(int8(q))
						}
						if off := legGemmOffset[wt]; int32(c) != -off*sum {
							t.Errorf("%s: token %d block %d: %d, want -%d·Σy = %d", name, tok, b, int32(c), off, -off*sum)
						}
					}
				}
			}
		}
	}
}

// TestQ8_0GEMMBitExact holds q8_0's GEMM to its Go twin bit for bit: each
// micro-kernel with leftover rows and tokens, on its own and through the
// dispatch.
func TestQ8_0GEMMBitExact(t *testing.T) {
	for _, level := range legacyLevels(t) {
		ks := newKernelSet(level)
		for _, wt := range []gguf.Type{gguf.TypeQ8_0} {
			gm, ok := legGemmSet(level)[wt]
			if !ok {
				t.Logf("%v/%v: no GEMM at this level", level, wt)
				continue
			}
			direct := matMulLegacyGEMM(wt, gm, func(int, []byte, int, []byte, int, []float32, int) {
				t.Fatalf("%v/%v: the GEMM handed a batch to the small kernels", level, wt)
			})
			mm, _ := ks.matMul(wt)
			vt, _ := VecDotType(wt)
			twin := genericDots[wt]
			rng := rand.New(rand.NewPCG(37, uint64(wt)))
			for _, sh := range []struct{ n, nrows int }{{1152, 37}, {96, 16}, {64, 21}} {
				rb, _ := wt.RowBytes(sh.n)
				ab, _ := vt.RowBytes(sh.n)
				const maxTok, ldo = 40, 41
				for _, f := range []blockFill{fillRandom, fillNegScale, fillMax, fillZero} {
					name := fmt.Sprintf("%v/%v/n=%d/%v", level, wt, sh.n, f)
					w := makeWeights(rng, wt, sh.n*sh.nrows, f)
					a := make([]byte, 0, maxTok*ab)
					for range maxTok {
						a = append(a, makeActs(t, rng, vt, sh.n, f)...)
					}
					for _, ntok := range []int{2, 3, 5, 8, 15, 24, 29, maxTok} {
						for _, v := range []struct {
							name string
							mm   MatMulFunc
						}{{"GEMM", direct}, {"MatMul", mm}} {
							if v.name == "MatMul" && sh.nrows < gm.rows {
								continue
							}
							out := make([]float32, (ntok-1)*ldo+sh.nrows)
							v.mm(sh.n, w, sh.nrows, a, ntok, out, ldo)
							bad := 0
							for tok := range ntok {
								for r := range sh.nrows {
									want := twin(sh.n, w[r*rb:(r+1)*rb], a[tok*ab:(tok+1)*ab])
									if g := out[tok*ldo+r]; !sameBits(g, want) && bad < 3 {
										bad++
										t.Errorf("%s: %s of %d tokens, token %d row %d: %g, Go twin %g", name, v.name, ntok, tok, r, g, want)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}
