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
// Only q4_K is interleaved so far (InterleaveRows reports which types, for
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

// q4Kx8Group is the number of rows interleaved together.
const q4Kx8Group = 8

// interleaveQ4K rewrites rows (a multiple of 8) of nb q4_K blocks each from
// the file's layout (src) into the interleaved one (dst, the same size).
func interleaveQ4K(dst, src []byte, rows, nb int) {
	const bb = 144
	gb := q4Kx8Group * bb
	for g := 0; g < rows/q4Kx8Group; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*gb : (g*nb+b+1)*gb]
			for r := 0; r < q4Kx8Group; r++ {
				x := src[((g*q4Kx8Group+r)*nb+b)*bb:][:bb]
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
	var acc [q4Kx8Group]float32
	for b := range nb {
		x, y := w[1152*b:1152*(b+1)], a[292*b:292*(b+1)]
		da := q8KScale(y)
		for r := range q4Kx8Group {
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

// interleavedMatMulGo is the interleaved q4_K product in Go: the reference
// for the assembly, with its signature (MatMulFunc over interleaved data).
func interleavedMatMulGo(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
	nb := n / 256
	gb := nb * 1152
	arb := nb * 292
	for g := 0; g < nrows/q4Kx8Group; g++ {
		for t := range ntok {
			dotQ4Kx8(w[g*gb:(g+1)*gb], a[t*arb:(t+1)*arb], nb, out[t*ldo+8*g:t*ldo+8*g+8])
		}
	}
}

// InterleaveRows is the number of rows the CPU's kernels interleave for
// matrices of type t (see Interleave), or 0 if they keep t as stored.
func InterleaveRows(t gguf.Type) int {
	if best.interleaved[t] != nil {
		return q4Kx8Group
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
// call.
func Interleave(t gguf.Type, rows, cols int, data, dst []byte) (MatVecFunc, MatMulFunc, error) {
	mm := best.interleaved[t]
	if mm == nil {
		return nil, nil, fmt.Errorf("quant: no interleaved layout for %v on this CPU", t)
	}
	bs := t.BlockSize()
	if rows <= 0 || rows%q4Kx8Group != 0 || cols <= 0 || cols%bs != 0 {
		return nil, nil, fmt.Errorf("quant: cannot interleave %d×%d %v (rows must be a multiple of %d, columns of %d)", rows, cols, t, q4Kx8Group, bs)
	}
	rb, err := t.RowBytes(cols)
	if err != nil {
		return nil, nil, err
	}
	if len(data) != rows*rb || len(dst) != len(data) {
		return nil, nil, fmt.Errorf("quant: %d bytes for %d×%d %v into %d, want %d", len(data), rows, cols, t, len(dst), rows*rb)
	}
	interleaveQ4K(dst, data, rows, cols/bs)
	mv := func(n int, w, a []byte, out []float32) { mm(n, w, len(out), a, 1, out, len(out)) }
	return mv, mm, nil
}
