//go:build gc && !purego

package quant

import (
	"encoding/binary"
	"math"
)

// The prefill GEMM over interleaved weights.
//
// A model whose q4_K and q6_K matrices have the interleaved layout (see
// Interleave) keeps no copy in the file's layout in memory, so on AVX-512,
// where the layout has groups of 16 rows, the prefill GEMM unpacks each
// panel from one group. The panel is byte for byte the one gemmPackQ4K or
// gemmPackQ6K makes from the same rows as stored in the file
// (TestGEMMPackInterleaved), so the GEMM's results are too. The group suits
// the panel better than the file's rows do: a 64-byte piece holds 4 quants
// of each of the 16 rows (in nibbles), as a panel line does, so the
// unpacking needs no scatter.

//go:noescape
func gemmUnpackQ4KIlvAVX512(panel, w []byte, nb int)

//go:noescape
func gemmUnpackQ6KIlvAVX512(panel, w []byte, nb int)

// gemmPackQ4KIlv and gemmPackQ6KIlv unpack a panel from the interleaved
// group of 16 rows at w (nb group blocks) with AVX-512
// (gemm_pack_interleaved_avx512_amd64.s); the *Go variants are their twins.
// rb, a row's bytes, is there for gemmPack's signature.
func gemmPackQ4KIlv(panel, w []byte, rb, nb int) {
	gemmUnpackQ4KIlvAVX512(panel[:nb*gemmPanelLen], w[:nb*144*gemmRows], nb)
}

func gemmPackQ6KIlv(panel, w []byte, rb, nb int) {
	gemmUnpackQ6KIlvAVX512(panel[:nb*gemmPanelLen], w[:nb*210*gemmRows], nb)
}

// gemmPackQ4KIlvGo writes the panel gemmPackQ4KGo writes, from a group of
// 16 interleaved rows (interleaveQ4K with g = 16).
func gemmPackQ4KIlvGo(panel, w []byte, rb, nb int) {
	const g = gemmRows
	for b := 0; b < nb; b++ {
		p := panel[b*gemmPanelLen : (b+1)*gemmPanelLen]
		x := w[144*g*b:][:144*g]
		for r := range g {
			var scales [12]byte
			copy(scales[0:4], x[4*g+4*r:])
			copy(scales[4:8], x[8*g+4*r:])
			copy(scales[8:12], x[12*g+4*r:])
			for j := range 8 {
				sc, m := scaleMinK4(j, scales[:])
				binary.LittleEndian.PutUint32(p[gemmPanelSC+64*(2*j)+4*r:], uint32(sc))
				binary.LittleEndian.PutUint32(p[gemmPanelSC+64*(2*j+1)+4*r:], uint32(sc))
				binary.LittleEndian.PutUint32(p[gemmPanelMC+64*j+4*r:], uint32(m)|uint32(m)<<16)
				// Piece i of sub-block j: weights 32j+4i+e (low nibbles)
				// and 32j+16+4i+e (high), panel lines 8j+i and 8j+4+i.
				for i := range 4 {
					for e := range 4 {
						q := x[16*g+16*g*j+4*g*i+4*r+e]
						p[gemmPanelW+64*(8*j+i)+4*r+e] = q & 0xf
						p[gemmPanelW+64*(8*j+4+i)+4*r+e] = q >> 4
					}
				}
			}
			binary.LittleEndian.PutUint32(p[gemmPanelD+4*r:], math.Float32bits(f16(x[2*r:])))
			binary.LittleEndian.PutUint32(p[gemmPanelDM+4*r:], math.Float32bits(f16(x[2*g+2*r:])))
		}
	}
}

// gemmPackQ6KIlvGo writes the panel gemmPackQ6KGo writes, from a group of
// 16 interleaved rows (interleaveQ6K with g = 16).
func gemmPackQ6KIlvGo(panel, w []byte, rb, nb int) {
	const g = gemmRows
	for b := 0; b < nb; b++ {
		p := panel[b*gemmPanelLen : (b+1)*gemmPanelLen]
		x := w[210*g*b:][:210*g]
		for r := range g {
			sc := func(j int) int32 { return int32(int8(x[2*g+4*g*(j/4)+4*r+j%4])) }
			for j := range 16 {
				binary.LittleEndian.PutUint32(p[gemmPanelSC+64*j+4*r:], uint32(sc(j)))
				// Sub-block j: weights 16j+4k+e on panel line 4j+k.
				q := x[18*g+12*g*j:][:12*g]
				for e := range 4 {
					l0, l1, hb := q[4*r+e], q[4*g+4*r+e], q[8*g+4*r+e]
					p[gemmPanelW+64*(4*j+0)+4*r+e] = l0&0xf | hb&3<<4
					p[gemmPanelW+64*(4*j+1)+4*r+e] = l1&0xf | hb>>2&3<<4
					p[gemmPanelW+64*(4*j+2)+4*r+e] = l0>>4 | hb>>4&3<<4
					p[gemmPanelW+64*(4*j+3)+4*r+e] = l1>>4 | hb>>6<<4
				}
			}
			for i := range 8 {
				c0, c1 := -32*sc(2*i), -32*sc(2*i+1)
				binary.LittleEndian.PutUint32(p[gemmPanelMC+64*i+4*r:], uint32(uint16(c0))|uint32(uint16(c1))<<16)
			}
			d := math.Float32bits(f16(x[2*r:]))
			binary.LittleEndian.PutUint32(p[gemmPanelD+4*r:], d)
			binary.LittleEndian.PutUint32(p[gemmPanelDM+4*r:], d)
		}
	}
}
