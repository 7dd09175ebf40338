package quant

import (
	"encoding/binary"
	"fmt"

	"github.com/smolgo/smolgo/gguf"
)

// Interleaved weights.
//
// A decode step of several sequences multiplies each weight row by a few
// activation rows. Stored as in the file, every row is a run of blocks whose
// integer dot products need one VPMADDWD per 32 weights and token (to apply
// the sub-block's scale) and a horizontal sum per row at the end: on AVX2
// that, not the memory, bounds four tokens.
//
// The interleaved layout takes G rows at a time ("a group": G = 8 for the
// AVX2 kernels, 16 for the AVX-512 ones, chosen at load by the CPU's kernel
// level) and stores their b-th blocks together, 4 weights of each of the G
// rows side by side in every 4·G bytes ("a piece"). For G = 8 one
// VPMADDUBSW then gives 8 rows × 4 weights for one token, and the products
// of a whole 32-weight sub-block add up in 16-bit lanes (they cannot
// overflow: 8 × 2 × 15 × 128 < 32768) before one VPMADDWD applies the 8
// rows' scales at once; for G = 16 one VPDPBUSD gives 16 rows × 4 weights
// summed in 32-bit lanes, the activations broadcast from memory. Either
// way each 32-bit lane is one row, so the floats are scaled once per block
// for G rows and nothing is summed horizontally. The bytes are the same,
// only their order changes: a group of G rows takes exactly the space of
// the G rows, so row ranges that start and end on a multiple of G slice it
// as they slice the file's layout.
//
// q4_K and q6_K are interleaved (InterleaveRows reports which types, and G,
// for the CPU's kernels). The layout of one q4_K group block (G × 144
// bytes; the offsets for G = 8, then G = 16):
//
//	[0, 2G)        d of rows 0..G-1 (f16)                   0, 0
//	[2G, 4G)       dmin of rows 0..G-1 (f16)                16, 32
//	[4G, 8G)       scale bytes 0..3 of the rows (row r at 4G+4r)  32, 64
//	[8G, 12G)      scale bytes 4..7                         64, 128
//	[12G, 16G)     scale bytes 8..11                        96, 192
//	[16G, 144G)    quants: sub-block j (0..7) at 16G+16Gj, in four
//	               4G-byte pieces i (0..3); byte 4r+e of piece i holds
//	               weight 32j+4i+e of row r in its low nibble and weight
//	               32j+16+4i+e in its high nibble.
//
// The kernels compute, for each row r of a group and each block, exactly the
// integers of dotQ4_K (isum, msum) and then
//
//	acc[r] += d_a · (d[r]·isum − dmin[r]·msum)
//
// with every product and difference rounded to float32 (no fused
// multiply-adds), so the assembly and its Go twin dotQ4KxG agree to the bit,
// and one token's result does not depend on the others in its call.
//
// q6_K's 6-bit weights (0..63, less 32) cannot add up over a whole 16-weight
// sub-block in 16 bits (4 × 2 × 63 × 128 > 32767), so its pieces pair up: a
// piece holds, for each row, 4 weights' low 4 bits and the 4 eight further
// on in its high nibbles, and one piece of high 2-bit pairs serves a whole
// sub-block. One q6_K group block (G × 210 bytes):
//
//	[0, 2G)        d of rows 0..G-1 (f16)
//	[2G, 18G)      scales (int8): 2G+4Gt+4r+i holds scale 4t+i of row r
//	[18G, 210G)    sub-block j (0..15) at 18G+12Gj: three 4G-byte pieces
//	               L0, L1, H. For row r and e in 0..3, byte 4r+e of L0
//	               holds the low 4 bits of weight 16j+e (low nibble) and
//	               16j+8+e (high), L1 those of 16j+4+e and 16j+12+e, and H
//	               the high 2 bits of 16j+e, 16j+4+e, 16j+8+e and 16j+12+e
//	               (bits 0-1, 2-3, 4-5, 6-7).
//
// and the kernels compute dotQ6_K's integers for each row (isum, the
// weights less 32 times the activations, each sub-block scaled), then
//
//	acc[r] += d_a · (d[r]·isum)
//
// rounded to float32 at each step (dotQ6KxG).

// ilvGroup is a group size as an array type: each instantiation of the
// rearranging loops (interleaveQ4KG, interleaveQ6KG) is compiled for one
// size and sees it as a constant (len of the array type), which kept them
// as fast as when 8 was the only size (BenchmarkInterleave).
type ilvGroup interface{ ~[8]struct{} | ~[16]struct{} }

// interleaveQ4K rewrites rows (a multiple of g, 8 or 16) of nb q4_K blocks
// each from the file's layout (src) into the interleaved one with groups
// of g rows (dst, the same size).
func interleaveQ4K(dst, src []byte, rows, nb, g int) {
	if g == 16 {
		interleaveQ4KG[[16]struct{}](dst, src, rows, nb)
	} else {
		interleaveQ4KG[[8]struct{}](dst, src, rows, nb)
	}
}

func interleaveQ4KG[G ilvGroup](dst, src []byte, rows, nb int) {
	const bb = 144
	var z G
	g := len(z)
	gb := g * bb
	for grp := 0; grp < rows/g; grp++ {
		for b := 0; b < nb; b++ {
			out := dst[(grp*nb+b)*gb : (grp*nb+b+1)*gb]
			for r := 0; r < g; r++ {
				x := src[((grp*g+r)*nb+b)*bb:][:bb]
				copy(out[2*r:2*r+2], x[0:2])
				copy(out[2*g+2*r:2*g+2*r+2], x[2:4])
				copy(out[4*g+4*r:4*g+4*r+4], x[4:8])
				copy(out[8*g+4*r:8*g+4*r+4], x[8:12])
				copy(out[12*g+4*r:12*g+4*r+4], x[12:16])
				// Chunk c's bytes hold sub-block 2c in their low nibbles
				// and 2c+1 in their high ones; a piece takes 4 bytes from
				// the chunk's first half and the 4 bytes 16 further on.
				for c := range 4 {
					for i := range 4 {
						lo := binary.LittleEndian.Uint32(x[16+32*c+4*i:])
						hi := binary.LittleEndian.Uint32(x[16+32*c+16+4*i:])
						even := lo&0x0f0f0f0f | (hi&0x0f0f0f0f)<<4
						odd := (lo>>4)&0x0f0f0f0f | hi&0xf0f0f0f0
						binary.LittleEndian.PutUint32(out[16*g+16*g*(2*c)+4*g*i+4*r:], even)
						binary.LittleEndian.PutUint32(out[16*g+16*g*(2*c+1)+4*g*i+4*r:], odd)
					}
				}
			}
		}
	}
}

// dotQ4KxG is the Go twin of the interleaved q4_K kernels: the g rows of
// the group w (nb group blocks) times one q8_K activation row a, into out.
func dotQ4KxG(w, a []byte, nb, g int, out []float32) {
	acc := make([]float32, g)
	for b := range nb {
		x, y := w[144*g*b:144*g*(b+1)], a[292*b:292*(b+1)]
		da := q8KScale(y)
		for r := range g {
			var scales [12]byte
			copy(scales[0:4], x[4*g+4*r:])
			copy(scales[4:8], x[8*g+4*r:])
			copy(scales[8:12], x[12*g+4*r:])
			var isum, msum int32
			for j := range 8 {
				sc, m := scaleMinK4(j, scales[:])
				msum += int32(m) * (q8KBsum(y, 2*j) + q8KBsum(y, 2*j+1))
				var p int32
				for i := range 4 {
					for e := range 4 {
						q := x[16*g+16*g*j+4*g*i+4*r+e]
						p += int32(q&0xf) * int32(int8(y[4+32*j+4*i+e]))
						p += int32(q>>4) * int32(int8(y[4+32*j+16+4*i+e]))
					}
				}
				isum += int32(sc) * p
			}
			d, dmin := f16(x[2*r:]), f16(x[2*g+2*r:])
			di := float32(d * float32(isum))
			dm := float32(dmin * float32(msum))
			acc[r] += float32(da * float32(di-dm))
		}
	}
	copy(out, acc)
}

// interleavedMatMulGo is the product over interleaved weights of type t
// with groups of g rows in Go: the reference for the assembly, with its
// signature (a MatMulFunc over interleaved data).
func interleavedMatMulGo(t gguf.Type, g int) MatMulFunc {
	dot, bb := dotQ4KxG, 144
	if t == gguf.TypeQ6_K {
		dot, bb = dotQ6KxG, 210
	}
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		nb := n / 256
		gb := nb * bb * g
		arb := nb * 292
		for grp := 0; grp < nrows/g; grp++ {
			for t := range ntok {
				dot(w[grp*gb:(grp+1)*gb], a[t*arb:(t+1)*arb], nb, g, out[t*ldo+g*grp:t*ldo+g*grp+g])
			}
		}
	}
}

// InterleaveRows is the number of rows the CPU's kernels interleave
// together for matrices of type t (see Interleave): 8 on AVX2, 16 on
// AVX-512, or 0 if they keep t as stored.
func InterleaveRows(t gguf.Type) int {
	if best.interleaved[t] != nil {
		return best.ilvRows
	}
	return 0
}

// Interleave writes rows×cols weights of type t (data, in the file's
// layout) into dst (of the same size), rearranged for the CPU's multi-row
// kernels, and returns the MatVec and MatMul that read dst. rows must be a
// multiple of InterleaveRows(t), which must not be 0; the functions take
// row ranges that start and end on such multiples. Results are within
// float32 rounding of MatVec/MatMul on data (the same integers, scaled per
// row and block), and a token's result is the same whatever else shares the
// call, up to 23 tokens. On AVX-512 larger batches go through the prefill
// GEMM, over panels unpacked from dst: their results are those of MatMul
// on data, to the bit.
func Interleave(t gguf.Type, rows, cols int, data, dst []byte) (MatVecFunc, MatMulFunc, error) {
	mm := best.interleaved[t]
	if mm == nil {
		return nil, nil, fmt.Errorf("quant: no interleaved layout for %v on this CPU", t)
	}
	g := best.ilvRows
	bs := t.BlockSize()
	if rows <= 0 || rows%g != 0 || cols <= 0 || cols%bs != 0 {
		return nil, nil, fmt.Errorf("quant: cannot interleave %d×%d %v (rows must be a multiple of %d, columns of %d)", rows, cols, t, g, bs)
	}
	rb, err := t.RowBytes(cols)
	if err != nil {
		return nil, nil, err
	}
	if len(data) != rows*rb || len(dst) != len(data) {
		return nil, nil, fmt.Errorf("quant: %d bytes for %d×%d %v into %d, want %d", len(data), rows, cols, t, len(dst), rows*rb)
	}
	switch t {
	case gguf.TypeQ4_K:
		interleaveQ4K(dst, data, rows, cols/bs, g)
	case gguf.TypeQ6_K:
		interleaveQ6K(dst, data, rows, cols/bs, g)
	default:
		return nil, nil, fmt.Errorf("quant: no interleaved layout for %v", t)
	}
	mv := func(n int, w, a []byte, out []float32) { mm(n, w, len(out), a, 1, out, len(out)) }
	return mv, mm, nil
}

// interleaveQ6K rewrites rows (a multiple of g, 8 or 16) of nb q6_K blocks each from
// the file's layout (src) into the interleaved one with groups of g rows
// (dst, the same size). Its walk over groups, blocks and rows is
// interleaveQ4K's, written out again on purpose: a shared walker calling a
// per-block closure halved the speed of loading a model (2026-11-27,
// BenchmarkInterleave).
func interleaveQ6K(dst, src []byte, rows, nb, g int) {
	if g == 16 {
		interleaveQ6KG[[16]struct{}](dst, src, rows, nb)
	} else {
		interleaveQ6KG[[8]struct{}](dst, src, rows, nb)
	}
}

func interleaveQ6KG[G ilvGroup](dst, src []byte, rows, nb int) {
	const bb = 210
	var z G
	g := len(z)
	gb := g * bb
	for grp := 0; grp < rows/g; grp++ {
		for b := 0; b < nb; b++ {
			out := dst[(grp*nb+b)*gb : (grp*nb+b+1)*gb]
			for r := 0; r < g; r++ {
				x := src[((grp*g+r)*nb+b)*bb:][:bb]
				copy(out[2*r:2*r+2], x[208:210])
				for t := range 4 {
					copy(out[2*g+4*g*t+4*r:][:4], x[192+4*t:][:4])
				}
				// Sub-block j is weights 16j..16j+15: quarter qt of half
				// h of dotQ6_K's layout, from byte l0 of the quarter. Each
				// 32-bit word below is 4 consecutive weights.
				for j := range 16 {
					h, qt, l0 := j/8, j%8/2, 16*(j%2)
					ql := x[64*h+32*(qt%2)+l0:][:16]
					qh := x[128+32*h+l0:][:16]
					ls, hs := 4*(qt/2), 2*qt
					lo0 := binary.LittleEndian.Uint32(ql[0:]) >> ls & 0x0f0f0f0f
					lo4 := binary.LittleEndian.Uint32(ql[4:]) >> ls & 0x0f0f0f0f
					lo8 := binary.LittleEndian.Uint32(ql[8:]) >> ls & 0x0f0f0f0f
					lo12 := binary.LittleEndian.Uint32(ql[12:]) >> ls & 0x0f0f0f0f
					hi0 := binary.LittleEndian.Uint32(qh[0:]) >> hs & 0x03030303
					hi4 := binary.LittleEndian.Uint32(qh[4:]) >> hs & 0x03030303
					hi8 := binary.LittleEndian.Uint32(qh[8:]) >> hs & 0x03030303
					hi12 := binary.LittleEndian.Uint32(qh[12:]) >> hs & 0x03030303
					p := out[18*g+12*g*j:][:12*g]
					binary.LittleEndian.PutUint32(p[4*r:], lo0|lo8<<4)
					binary.LittleEndian.PutUint32(p[4*g+4*r:], lo4|lo12<<4)
					binary.LittleEndian.PutUint32(p[8*g+4*r:], hi0|hi4<<2|hi8<<4|hi12<<6)
				}
			}
		}
	}
}

// dotQ6KxG is the Go twin of the interleaved q6_K kernels: the g rows of
// the group w (nb group blocks) times one q8_K activation row a, into out.
func dotQ6KxG(w, a []byte, nb, g int, out []float32) {
	acc := make([]float32, g)
	for b := range nb {
		x, y := w[210*g*b:210*g*(b+1)], a[292*b:292*(b+1)]
		da := q8KScale(y)
		for r := range g {
			var isum int32
			for j := range 16 {
				p := x[18*g+12*g*j:][:12*g]
				var s int32
				for e := range 4 {
					l0, l1, h := p[4*r+e], p[4*g+4*r+e], p[8*g+4*r+e]
					w0 := int32(l0&0xf | h&3<<4)
					w1 := int32(l1&0xf | h>>2&3<<4)
					w2 := int32(l0>>4 | h>>4&3<<4)
					w3 := int32(l1>>4 | h>>6&3<<4)
					s += (w0-32)*int32(int8(y[4+16*j+e])) + (w1-32)*int32(int8(y[4+16*j+4+e])) +
						(w2-32)*int32(int8(y[4+16*j+8+e])) + (w3-32)*int32(int8(y[4+16*j+12+e]))
				}
				isum += int32(int8(x[2*g+4*g*(j/4)+4*r+j%4])) * s
			}
			di := float32(f16(x[2*r:]) * float32(isum))
			acc[r] += float32(da * di)
		}
	}
	copy(out, acc)
}
