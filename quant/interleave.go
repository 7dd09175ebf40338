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
// The interleaved layout takes 8 rows at a time ("a group") and stores their
// b-th blocks together, 4 weights of each of the 8 rows side by side in every
// 32 bytes. One VPMADDUBSW then gives 8 rows × 4 weights for one token, and
// the products of a whole 32-weight sub-block add up in 16-bit lanes (they
// cannot overflow: 8 × 2 × 15 × 128 < 32768) before one VPMADDWD applies the
// 8 rows' scales at once; each 32-bit lane is then one row, so the floats are
// scaled once per block for 8 rows and nothing is summed horizontally. The
// bytes are the same, only their order changes: a group of 8 rows takes
// exactly the space of the 8 rows, so row ranges that start and end on a
// multiple of 8 slice it as they slice the file's layout.
//
// q4_K and q6_K are interleaved (InterleaveRows reports which types, for
// the CPU's kernels). The layout of one q4_K group block (8 × 144 bytes):
//
//	[0, 16)      d of rows 0..7 (f16)
//	[16, 32)     dmin of rows 0..7 (f16)
//	[32, 64)     scale bytes 0..3 of rows 0..7 (row r at 32+4r)
//	[64, 96)     scale bytes 4..7 of rows 0..7
//	[96, 128)    scale bytes 8..11 of rows 0..7
//	[128, 1152)  quants: sub-block j (0..7) at 128+128j, in four 32-byte
//	             pieces i (0..3); byte 4r+e of piece i holds weight
//	             32j+4i+e of row r in its low nibble and weight 32j+16+4i+e
//	             in its high nibble.
//
// The kernels compute, for each row r of a group and each block, exactly the
// integers of dotQ4_K (isum, msum) and then
//
//	acc[r] += d_a · (d[r]·isum − dmin[r]·msum)
//
// with every product and difference rounded to float32 (no fused
// multiply-adds), so the assembly and its Go twin dotQ4Kx8 agree to the bit,
// and one token's result does not depend on the others in its call.
//
// q6_K's 6-bit weights (0..63, less 32) cannot add up over a whole 16-weight
// sub-block in 16 bits (4 × 2 × 63 × 128 > 32767), so its pieces pair up: a
// 32-byte piece holds, for each row, 4 weights' low 4 bits and the 4 eight
// further on in its high nibbles, and one 32-byte piece of high 2-bit pairs
// serves a whole sub-block. One q6_K group block (8 × 210 bytes):
//
//	[0, 16)      d of rows 0..7 (f16)
//	[16, 144)    scales (int8): 16+32t+4r+i holds scale 4t+i of row r
//	[144, 1680)  sub-block j (0..15) at 144+96j: three 32-byte pieces L0,
//	             L1, H. For row r and e in 0..3, byte 4r+e of L0 holds the
//	             low 4 bits of weight 16j+e (low nibble) and 16j+8+e (high),
//	             L1 those of 16j+4+e and 16j+12+e, and H the high 2 bits of
//	             16j+e, 16j+4+e, 16j+8+e and 16j+12+e (bits 0-1, 2-3, 4-5, 6-7).
//
// and the kernels compute dotQ6_K's integers for each row (isum, the
// weights less 32 times the activations, each sub-block scaled), then
//
//	acc[r] += d_a · (d[r]·isum)
//
// rounded to float32 at each step (dotQ6Kx8).

// interleaveGroup is the number of rows interleaved together.
const interleaveGroup = 8

// interleaveQ4K rewrites rows (a multiple of 8) of nb q4_K blocks each from
// the file's layout (src) into the interleaved one (dst, the same size).
func interleaveQ4K(dst, src []byte, rows, nb int) {
	const bb = 144
	gb := interleaveGroup * bb
	for g := 0; g < rows/interleaveGroup; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*gb : (g*nb+b+1)*gb]
			for r := 0; r < interleaveGroup; r++ {
				x := src[((g*interleaveGroup+r)*nb+b)*bb:][:bb]
				copy(out[2*r:2*r+2], x[0:2])
				copy(out[16+2*r:16+2*r+2], x[2:4])
				copy(out[32+4*r:32+4*r+4], x[4:8])
				copy(out[64+4*r:64+4*r+4], x[8:12])
				copy(out[96+4*r:96+4*r+4], x[12:16])
				// Chunk c's bytes hold sub-block 2c in their low nibbles
				// and 2c+1 in their high ones; a piece takes 4 bytes from
				// the chunk's first half and the 4 bytes 16 further on.
				for c := range 4 {
					for i := range 4 {
						lo := binary.LittleEndian.Uint32(x[16+32*c+4*i:])
						hi := binary.LittleEndian.Uint32(x[16+32*c+16+4*i:])
						even := lo&0x0f0f0f0f | (hi&0x0f0f0f0f)<<4
						odd := (lo>>4)&0x0f0f0f0f | hi&0xf0f0f0f0
						binary.LittleEndian.PutUint32(out[128+128*(2*c)+32*i+4*r:], even)
						binary.LittleEndian.PutUint32(out[128+128*(2*c+1)+32*i+4*r:], odd)
					}
				}
			}
		}
	}
}

// dotQ4Kx8 is the Go twin of the interleaved q4_K kernels: the 8 rows of
// the group w (nb group blocks) times one q8_K activation row a, into out.
func dotQ4Kx8(w, a []byte, nb int, out []float32) {
	var acc [interleaveGroup]float32
	for b := range nb {
		x, y := w[1152*b:1152*(b+1)], a[292*b:292*(b+1)]
		da := q8KScale(y)
		for r := range interleaveGroup {
			var scales [12]byte
			copy(scales[0:4], x[32+4*r:])
			copy(scales[4:8], x[64+4*r:])
			copy(scales[8:12], x[96+4*r:])
			var isum, msum int32
			for j := range 8 {
				sc, m := scaleMinK4(j, scales[:])
				msum += int32(m) * (q8KBsum(y, 2*j) + q8KBsum(y, 2*j+1))
				var p int32
				for i := range 4 {
					for e := range 4 {
						q := x[128+128*j+32*i+4*r+e]
						p += int32(q&0xf) * int32(int8(y[4+32*j+4*i+e]))
						p += int32(q>>4) * int32(int8(y[4+32*j+16+4*i+e]))
					}
				}
				isum += int32(sc) * p
			}
			d, dmin := f16(x[2*r:]), f16(x[16+2*r:])
			di := float32(d * float32(isum))
			dm := float32(dmin * float32(msum))
			acc[r] += float32(da * float32(di-dm))
		}
	}
	copy(out, acc[:])
}

// interleavedMatMulGo is the product over interleaved weights of type t in
// Go: the reference for the assembly, with its signature (a MatMulFunc over
// interleaved data).
func interleavedMatMulGo(t gguf.Type) MatMulFunc {
	dot, bb := dotQ4Kx8, 144
	if t == gguf.TypeQ6_K {
		dot, bb = dotQ6Kx8, 210
	}
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		nb := n / 256
		gb := nb * bb * interleaveGroup
		arb := nb * 292
		for g := 0; g < nrows/interleaveGroup; g++ {
			for t := range ntok {
				dot(w[g*gb:(g+1)*gb], a[t*arb:(t+1)*arb], nb, out[t*ldo+8*g:t*ldo+8*g+8])
			}
		}
	}
}

// InterleaveRows is the number of rows the CPU's kernels interleave for
// matrices of type t (see Interleave), or 0 if they keep t as stored.
func InterleaveRows(t gguf.Type) int {
	if best.interleaved[t] != nil {
		return interleaveGroup
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
	bs := t.BlockSize()
	if rows <= 0 || rows%interleaveGroup != 0 || cols <= 0 || cols%bs != 0 {
		return nil, nil, fmt.Errorf("quant: cannot interleave %d×%d %v (rows must be a multiple of %d, columns of %d)", rows, cols, t, interleaveGroup, bs)
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
		interleaveQ4K(dst, data, rows, cols/bs)
	case gguf.TypeQ6_K:
		interleaveQ6K(dst, data, rows, cols/bs)
	default:
		return nil, nil, fmt.Errorf("quant: no interleaved layout for %v", t)
	}
	mv := func(n int, w, a []byte, out []float32) { mm(n, w, len(out), a, 1, out, len(out)) }
	return mv, mm, nil
}

// interleaveQ6K rewrites rows (a multiple of 8) of nb q6_K blocks each from
// the file's layout (src) into the interleaved one (dst, the same size).
// Its walk over groups, blocks and rows is interleaveQ4K's, written out
// again on purpose: a shared walker calling a per-block closure halved the
// speed of loading a model (2026-11-27, BenchmarkInterleave).
func interleaveQ6K(dst, src []byte, rows, nb int) {
	const bb = 210
	gb := interleaveGroup * bb
	for g := 0; g < rows/interleaveGroup; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*gb : (g*nb+b+1)*gb]
			for r := 0; r < interleaveGroup; r++ {
				x := src[((g*interleaveGroup+r)*nb+b)*bb:][:bb]
				copy(out[2*r:2*r+2], x[208:210])
				for t := range 4 {
					copy(out[16+32*t+4*r:][:4], x[192+4*t:][:4])
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
					p := out[144+96*j:][:96]
					binary.LittleEndian.PutUint32(p[4*r:], lo0|lo8<<4)
					binary.LittleEndian.PutUint32(p[32+4*r:], lo4|lo12<<4)
					binary.LittleEndian.PutUint32(p[64+4*r:], hi0|hi4<<2|hi8<<4|hi12<<6)
				}
			}
		}
	}
}

// dotQ6Kx8 is the Go twin of the interleaved q6_K kernels: the 8 rows of
// the group w (nb group blocks) times one q8_K activation row a, into out.
func dotQ6Kx8(w, a []byte, nb int, out []float32) {
	var acc [interleaveGroup]float32
	for b := range nb {
		x, y := w[1680*b:1680*(b+1)], a[292*b:292*(b+1)]
		da := q8KScale(y)
		for r := range interleaveGroup {
			var isum int32
			for j := range 16 {
				p := x[144+96*j:][:96]
				var s int32
				for e := range 4 {
					l0, l1, h := p[4*r+e], p[32+4*r+e], p[64+4*r+e]
					w0 := int32(l0&0xf | h&3<<4)
					w1 := int32(l1&0xf | h>>2&3<<4)
					w2 := int32(l0>>4 | h>>4&3<<4)
					w3 := int32(l1>>4 | h>>6&3<<4)
					s += (w0-32)*int32(int8(y[4+16*j+e])) + (w1-32)*int32(int8(y[4+16*j+4+e])) +
						(w2-32)*int32(int8(y[4+16*j+8+e])) + (w3-32)*int32(int8(y[4+16*j+12+e]))
				}
				isum += int32(int8(x[16+32*(j/4)+4*r+j%4])) * s
			}
			di := float32(f16(x[2*r:]) * float32(isum))
			acc[r] += float32(da * di)
		}
	}
	copy(out, acc[:])
}
