//go:build gc && !purego

package quant

import (
	"encoding/binary"
	"math"
)

// The prefill GEMM over interleaved weights.
//
// A model whose q4_K and q6_K matrices have the interleaved layout (see
// Interleave) keeps no copy in the file's layout in memory, so the prefill
// GEMM unpacks its panels from the interleaved bytes: 16 rows are two
// consecutive groups of 8, and a panel made from them is byte for byte the
// one gemmPackQ4K or gemmPackQ6K makes from the same rows as stored in the
// file (TestGEMMPackInterleaved), so the GEMM's results are too. The
// interleaved layout suits the panel better than the file's: a 32-byte
// piece of a group holds 4 quants of each of its 8 rows (in nibbles), so a
// piece of each group side by side is already a panel line of 16 rows and
// the unpacking needs no scatter.

//go:noescape
func gemmUnpackQ4KIlvAVX512(panel, w []byte, gb, nb int)

//go:noescape
func gemmUnpackQ6KIlvAVX512(panel, w []byte, gb, nb int)

// gemmPackQ4KIlv and gemmPackQ6KIlv unpack a panel from the two interleaved
// groups of 8 rows in w (rb bytes per row, so the second group starts 8·rb
// bytes in) with AVX-512 (gemm_pack_interleaved_avx512_amd64.s); the *Go
// variants are their twins.
func gemmPackQ4KIlv(panel, w []byte, rb, nb int) {
	gb := interleaveGroup * rb
	gemmUnpackQ4KIlvAVX512(panel[:nb*gemmPanelLen], w[:2*gb], gb, nb)
}

func gemmPackQ6KIlv(panel, w []byte, rb, nb int) {
	gb := interleaveGroup * rb
	gemmUnpackQ6KIlvAVX512(panel[:nb*gemmPanelLen], w[:2*gb], gb, nb)
}

// gemmPackQ4KIlvGo writes the panel gemmPackQ4KGo writes, from the
// interleaved layout (interleaveQ4K): row 8h+r of the panel is row r of
// group h.
func gemmPackQ4KIlvGo(panel, w []byte, rb, nb int) {
	gb := interleaveGroup * rb
	for b := 0; b < nb; b++ {
		p := panel[b*gemmPanelLen : (b+1)*gemmPanelLen]
		for h := range 2 {
			x := w[h*gb+1152*b:][:1152]
			for r := range interleaveGroup {
				row := 8*h + r
				var scales [12]byte
				copy(scales[0:4], x[32+4*r:])
				copy(scales[4:8], x[64+4*r:])
				copy(scales[8:12], x[96+4*r:])
				for j := range 8 {
					sc, m := scaleMinK4(j, scales[:])
					binary.LittleEndian.PutUint32(p[gemmPanelSC+64*(2*j)+4*row:], uint32(sc))
					binary.LittleEndian.PutUint32(p[gemmPanelSC+64*(2*j+1)+4*row:], uint32(sc))
					binary.LittleEndian.PutUint32(p[gemmPanelMC+64*j+4*row:], uint32(m)|uint32(m)<<16)
					// Piece i of sub-block j: weights 32j+4i+e (low nibbles)
					// and 32j+16+4i+e (high), panel lines 8j+i and 8j+4+i.
					for i := range 4 {
						for e := range 4 {
							q := x[128+128*j+32*i+4*r+e]
							p[gemmPanelW+64*(8*j+i)+4*row+e] = q & 0xf
							p[gemmPanelW+64*(8*j+4+i)+4*row+e] = q >> 4
						}
					}
				}
				binary.LittleEndian.PutUint32(p[gemmPanelD+4*row:], math.Float32bits(f16(x[2*r:])))
				binary.LittleEndian.PutUint32(p[gemmPanelDM+4*row:], math.Float32bits(f16(x[16+2*r:])))
			}
		}
	}
}

// gemmPackQ6KIlvGo writes the panel gemmPackQ6KGo writes, from the
// interleaved layout (interleaveQ6K).
func gemmPackQ6KIlvGo(panel, w []byte, rb, nb int) {
	gb := interleaveGroup * rb
	for b := 0; b < nb; b++ {
		p := panel[b*gemmPanelLen : (b+1)*gemmPanelLen]
		for h := range 2 {
			x := w[h*gb+1680*b:][:1680]
			for r := range interleaveGroup {
				row := 8*h + r
				sc := func(g int) int32 { return int32(int8(x[16+32*(g/4)+4*r+g%4])) }
				for g := range 16 {
					binary.LittleEndian.PutUint32(p[gemmPanelSC+64*g+4*row:], uint32(sc(g)))
					// Sub-block g: weights 16g+4k+e on panel line 4g+k.
					q := x[144+96*g:][:96]
					for e := range 4 {
						l0, l1, hb := q[4*r+e], q[32+4*r+e], q[64+4*r+e]
						p[gemmPanelW+64*(4*g+0)+4*row+e] = l0&0xf | hb&3<<4
						p[gemmPanelW+64*(4*g+1)+4*row+e] = l1&0xf | hb>>2&3<<4
						p[gemmPanelW+64*(4*g+2)+4*row+e] = l0>>4 | hb>>4&3<<4
						p[gemmPanelW+64*(4*g+3)+4*row+e] = l1>>4 | hb>>6<<4
					}
				}
				for i := range 8 {
					c0, c1 := -32*sc(2*i), -32*sc(2*i+1)
					binary.LittleEndian.PutUint32(p[gemmPanelMC+64*i+4*row:], uint32(uint16(c0))|uint32(uint16(c1))<<16)
				}
				d := math.Float32bits(f16(x[2*r:]))
				binary.LittleEndian.PutUint32(p[gemmPanelD+4*row:], d)
				binary.LittleEndian.PutUint32(p[gemmPanelDM+4*row:], d)
			}
		}
	}
}
