//go:build ignore

// gen_legacy writes dot_legacy_avx2_amd64.s and dot_legacy_avx512_amd64.s,
// the kernels of the 32-quant types q4_0, q4_1, q5_0 and q5_1 (the last
// three are what llama.cpp's K-quant mixes fall back to for rows that are
// not a multiple of 256) and mxfp4 (gpt-oss's experts), and
// gemm_legacy_avx2_amd64.s and gemm_legacy_avx512_amd64.s, their prefill
// GEMMs and q8_0's (see
// dot_legacy_amd64.go and gemm_legacy_amd64.go for what they compute and
// why):
//
//	go generate ./quant/   (or: cd quant && go run gen_legacy.go)
package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"strings"
)

// qtype describes one weight type and its activation type.
type qtype struct {
	name   string // Q4_1, Q5_0, Q5_1
	wb     int    // weight block bytes
	qs     int    // offset of the 16 nibble bytes
	qh     int    // offset of the 32 fifth bits, -1 if none
	hasM   bool   // x = d·q + m: a q8_1 activation, whose s meets m
	signed bool   // q4_0, q5_0, q8_0: q - offset
	offset int    // q4_0 8, q5_0 16, q8_0 128
	bytes  bool   // q8_0: 32 quant bytes, not nibbles (AVX-512 only)
	table  bool   // mxfp4: each nibble indexes a table (VPSHUFB), offset makes its values unsigned
	e8m0   bool   // mxfp4: the scale is an E8M0 byte at offset 0, not an f16
	ab, aq int    // activation block bytes and offset of its quants
	twin   string // the Go twin's loop, for the comments
}

var types = []qtype{
	{name: "Q4_0", wb: 18, qs: 2, qh: -1, signed: true, offset: 8, ab: 34, aq: 2, twin: `//	for j := 0; j < 16; j++ {
//		s += (int32(x[2+j]&0xf) - 8) * int32(int8(y[2+j]))
//		s += (int32(x[2+j]>>4) - 8) * int32(int8(y[18+j]))
//	}
//	sum += float32(f16(x) * f16(y) * float32(s))`},
	{name: "Q4_1", wb: 20, qs: 4, qh: -1, hasM: true, ab: 36, aq: 4, twin: `//	for j := 0; j < 16; j++ {
//		s += int32(x[4+j]&0xf) * int32(int8(y[4+j]))
//		s += int32(x[4+j]>>4) * int32(int8(y[20+j]))
//	}
//	sum += float32(float32(f16(x)*f16(y)*float32(s)) + float32(f16(x[2:])*f16(y[2:])))`},
	{name: "Q5_0", wb: 22, qs: 6, qh: 2, signed: true, offset: 16, ab: 34, aq: 2, twin: `//	qh := binary.LittleEndian.Uint32(x[2:])
//	for j := 0; j < 16; j++ {
//		lo := int32(x[6+j]&0xf) | int32(qh>>j&1)<<4
//		hi := int32(x[6+j]>>4) | int32(qh>>(j+16)&1)<<4
//		s += (lo - 16) * int32(int8(y[2+j]))
//		s += (hi - 16) * int32(int8(y[18+j]))
//	}
//	sum += float32(f16(x) * f16(y) * float32(s))`},
	{name: "Q5_1", wb: 24, qs: 8, qh: 4, hasM: true, ab: 36, aq: 4, twin: `//	qh := binary.LittleEndian.Uint32(x[4:])
//	for j := 0; j < 16; j++ {
//		lo := int32(x[8+j]&0xf) | int32(qh>>j&1)<<4
//		hi := int32(x[8+j]>>4) | int32(qh>>(j+16)&1)<<4
//		s += lo * int32(int8(y[4+j]))
//		s += hi * int32(int8(y[20+j]))
//	}
//	sum += float32(float32(f16(x)*f16(y)*float32(s)) + float32(f16(x[2:])*f16(y[2:])))`},
	{name: "MXFP4", wb: 17, qs: 1, qh: -1, signed: true, offset: 12, table: true, e8m0: true, ab: 34, aq: 2, twin: `//	for j := 0; j < 16; j++ {
//		s += int32(mxfp4Values[x[1+j]&0xf]) * int32(int8(y[2+j]))
//		s += int32(mxfp4Values[x[1+j]>>4]) * int32(int8(y[18+j]))
//	}
//	sum = addBlock(sum, f16(y)*e8m0Half(x[0]), float32(s)) // sum + float32(d·s) on amd64`},
}

// mxfp4Table is ggml's kvalues_mxfp4, the E2M1 values doubled; the mv
// kernels and the GEMM panels take them plus 12 (0..24, unsigned for
// VPMADDUBSW and VPDPBUSD; -12·Σy takes the offset back), the x kernels as
// they are (VPSIGNB).
var mxfp4Table = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// e8m0TableQwords returns ggml's GGML_E8M0_TO_FP32_HALF for every byte
// (the float32 with exponent field e-1, or 0x200000 << e for e < 2) as 128
// qwords, two entries each.
func e8m0TableQwords() []uint64 {
	q := make([]uint64, 128)
	for e := 0; e < 256; e++ {
		bits := uint64(0x200000) << e
		if e >= 2 {
			bits = uint64(e-1) << 23
		}
		q[e/2] |= bits << (32 * (e % 2))
	}
	return q
}

// tableQwords returns the 16 table bytes plus off as two qwords.
func tableQwords(off int) (lo, hi uint64) {
	for i, v := range mxfp4Table {
		b := uint64(uint8(int(v) + off))
		if i < 8 {
			lo |= b << (8 * i)
		} else {
			hi |= b << (8 * (i - 8))
		}
	}
	return lo, hi
}

// q8_0 has its MatVec kernel here with AVX-512 only: its quants plus 128
// (XOR 0x80) meet VPDPBUSD unsigned, where AVX2's VPMADDUBSW would
// saturate. Its GEMM packer is gemmPackQ8_0.
var q8_0 = qtype{name: "Q8_0", wb: 34, qs: 2, qh: -1, signed: true, offset: 128, bytes: true, ab: 34, aq: 2, twin: `//	for j := 0; j < 32; j++ {
//		s += int32(int8(x[2+j])) * int32(int8(y[2+j]))
//	}
//	sum = addBlock(sum, f16(x)*f16(y), float32(s)) // sum + float32(d·s) on amd64`}

// q_0 stands for the types whose blocks have one scale d and whose GEMM
// panels hold the quants plus an offset, q4_0 (8), q5_0 (16) and q8_0
// (128): their micro-kernels are one, the offset taken back by the
// -offset·Σy that legPrepQ8_0 prepares per token and block.
var q_0 = qtype{name: "Q_0", signed: true, ab: 34, aq: 2, twin: `//	for j := 0; j < 32; j++ {
//		s += (q[j] - offset) * int32(int8(y[2+j])) // q[j] as the panel holds it
//	}
//	sum += float32(f16(x) * f16(y) * float32(s))`}

// gen writes one level's kernels.
type gen struct {
	b      bytes.Buffer
	avx512 bool
	label  int
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.b, format+"\n", args...) }

// i emits one instruction line.
func (g *gen) i(format string, args ...any) { g.p("\t"+format, args...) }

func (g *gen) suffix() string {
	if g.avx512 {
		return "AVX512"
	}
	return "AVX2"
}

func (g *gen) newLabel(base string) string {
	g.label++
	return fmt.Sprintf("%s%d", base, g.label)
}

func main() {
	for _, avx512 := range []bool{false, true} {
		g := &gen{avx512: avx512}
		g.header()
		for _, t := range types {
			g.mv(t)
			if !avx512 {
				// With AVX-512 the 8-row mv kernels beat one-row x
				// kernels per token, and batches go to the GEMMs.
				g.xn(t, 4)
				g.xn(t, 2)
			}
		}
		if avx512 {
			g.mv(q8_0)
		}
		name := "dot_legacy_avx2_amd64.s"
		if avx512 {
			name = "dot_legacy_avx512_amd64.s"
		}
		if err := os.WriteFile(name, g.b.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	// The GEMMs' micro-kernels: q4_1, q5_1 and the one of q_0 (q4_0, q5_0
	// and q8_0, whose panels (gemmPackQ8_0) hold its bytes plus 128).
	var kernels []qtype
	for _, t := range types {
		if t.hasM {
			kernels = append(kernels, t)
		}
	}
	kernels = append(kernels, q_0)
	g := &gen{avx512: true}
	g.gemmHeader()
	for _, t := range types {
		g.gemmPack(t)
	}
	g.gemmPackQ8_0()
	for _, t := range kernels {
		for _, T := range []int{8, 4, 2, 1} {
			g.gemmKernel(t, T)
		}
	}
	if err := os.WriteFile("gemm_legacy_avx512_amd64.s", g.b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	g = &gen{}
	g.gemmHeader2()
	for _, t := range types {
		g.gemmPack2(t)
	}
	for _, t := range kernels {
		for _, T := range []int{4, 2, 1} {
			g.gemmKernel2(t, T)
		}
	}
	g.gemmPrep(false)
	g.gemmPrep(true)
	if err := os.WriteFile("gemm_legacy_avx2_amd64.s", g.b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

func (g *gen) header() {
	g.p("// Code generated by gen_legacy.go; DO NOT EDIT.")
	g.p("")
	g.p("//go:build gc && !purego")
	g.p("")
	g.p(`#include "textflag.h"`)
	g.p("")
	if g.avx512 {
		g.p(`// AVX-512 MatVec kernels (F, BW, VL, VNNI) of the types q4_0, q4_1,
// q5_0, q5_1 and mxfp4; see dot_legacy_amd64.go. VPDPBUSD meets the unsigned
// weight bytes with the signed activation bytes; a mask register loaded
// from the blocks' fifth bits adds them as 16s (VPADDB under the mask).`)
	} else {
		g.p(`// AVX2 kernels of the types q4_0, q4_1, q5_0, q5_1 and mxfp4; see
// dot_legacy_amd64.go. VPMADDUBSW meets the unsigned weight bytes with the
// signed activation bytes (no saturation: at most 2·31·128); the fifth bits
// are spread to bytes with VPSHUFB and VPCMPEQB as ggml's
// bytes_from_bits_32.`)
	}
	g.p("")
	data := func(name string, qwords ...uint64) {
		for k, q := range qwords {
			g.p("DATA %s<>+0x%02x(SB)/8, $0x%016x", name, 8*k, q)
		}
		g.p("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	pre := "leg2"
	if g.avx512 {
		pre = "leg5"
	}
	g.p("// %sNib: bytes 0x0f. %sHi: bytes 0x10. %sEight: bytes 8. %sHi4: bytes 0xf0.", pre, pre, pre, pre)
	data(pre+"Nib", 0x0f0f0f0f0f0f0f0f, 0x0f0f0f0f0f0f0f0f, 0x0f0f0f0f0f0f0f0f, 0x0f0f0f0f0f0f0f0f)
	data(pre+"Hi", 0x1010101010101010, 0x1010101010101010, 0x1010101010101010, 0x1010101010101010)
	data(pre+"Eight", 0x0808080808080808, 0x0808080808080808, 0x0808080808080808, 0x0808080808080808)
	if g.avx512 {
		g.p("// %sX80: bytes 0x80.", pre)
		data(pre+"X80", 0x8080808080808080, 0x8080808080808080, 0x8080808080808080, 0x8080808080808080)
	}
	if !g.avx512 {
		data(pre+"Hi4", 0xf0f0f0f0f0f0f0f0, 0xf0f0f0f0f0f0f0f0, 0xf0f0f0f0f0f0f0f0, 0xf0f0f0f0f0f0f0f0)
		g.p("// %sQhShuf: byte j takes byte j/8 of the broadcast fifth bits; %sQhBit:", pre, pre)
		g.p("// byte j keeps bit j%%8 of it; %sOnes: words 1.", pre)
		data(pre+"QhShuf", 0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303)
		data(pre+"QhBit", 0x8040201008040201, 0x8040201008040201, 0x8040201008040201, 0x8040201008040201)
		data(pre+"Ones", 0x0001000100010001, 0x0001000100010001, 0x0001000100010001, 0x0001000100010001)
	}
	lo, hi := tableQwords(12)
	slo, shi := tableQwords(0)
	g.p("// %sMx: mxfp4's values plus 12 (both 128-bit lanes); %sMxS: the values;", pre, pre)
	g.p("// %sTwelve: bytes 12.", pre)
	data(pre+"Mx", lo, hi, lo, hi)
	data(pre+"MxS", slo, shi, slo, shi)
	data(pre+"Twelve", 0x0c0c0c0c0c0c0c0c, 0x0c0c0c0c0c0c0c0c, 0x0c0c0c0c0c0c0c0c, 0x0c0c0c0c0c0c0c0c)
	g.p("// %sE8Tab: the 256 halved E8M0 scales 2^(e-128) as float32 (e8m0Half).", pre)
	data(pre+"E8Tab", e8m0TableQwords()...)
	g.p("// %sDM orders the halves d0 s0 d1 s1 d2 s2 d3 s3 as d0 d1 d2 d3 s0 s1 s2 s3.", pre)
	data(pre+"DM", 0x0d0c090805040100, 0x0f0e0b0a07060302, 0x0d0c090805040100, 0x0f0e0b0a07060302)
	if g.avx512 {
		g.p("// leg5Shift: word shift counts 0, 4, 0, 4 by 128-bit lane (VPSRLVW);")
		g.p("// leg5Gather: dwords 0, 4, 8, 12, 1, 5, 9, 13 (VPERMD, see mv8).")
		data("leg5Shift", 0, 0, 0x0004000400040004, 0x0004000400040004, 0, 0, 0x0004000400040004, 0x0004000400040004)
		data("leg5Gather", 0x0000000400000000, 0x0000000c00000008, 0x0000000500000001, 0x0000000d00000009, 0, 0, 0, 0)
	}
}

func (g *gen) pre() string {
	if g.avx512 {
		return "leg5"
	}
	return "leg2"
}

// Registers shared by the kernels (all below 16: VPSIGNB, VPHADDW and
// VPHADDD have no EVEX form):
//
//	Y15 bytes 0x0f; Y14, Y13 the fifth-bit spreading (AVX2), or Y14 mxfp4's
//	table; Y12 bytes 0x10 (0xf0 for q5_0's signed quants with AVX2), or
//	q4_0's bytes 8, or mxfp4's bytes 12 (mv); Y11 words
//	1 (AVX2); Y10 the activation block (mv); Y9 the four sums; Y8 the
//	offset times y (mv: q4_0 8·y, q5_0 16·y); Y1 the unpacked weights, Y7
//	their absolute values (q4_0, q5_0: x kernels);
//	Y0, Y2, Y3, Y5 the four products; Y4, Y5, Y6 the scales.
func (g *gen) constants(t qtype, signedX bool) {
	pre := g.pre()
	g.i("VMOVDQU %sNib<>(SB), Y15", pre)
	if t.qh >= 0 {
		if !g.avx512 {
			g.i("VMOVDQU %sQhShuf<>(SB), Y14", pre)
			g.i("VMOVDQU %sQhBit<>(SB), Y13", pre)
		}
		if signedX && !g.avx512 {
			g.i("VMOVDQU %sHi4<>(SB), Y12", pre)
		} else {
			g.i("VMOVDQU %sHi<>(SB), Y12", pre)
		}
	}
	if t.table {
		// Y14 the table; the mv kernels' offset bytes in Y12.
		if signedX {
			g.i("VMOVDQU %sMxS<>(SB), Y14", pre)
		} else {
			g.i("VMOVDQU %sMx<>(SB), Y14", pre)
			g.i("VMOVDQU %sTwelve<>(SB), Y12", pre)
		}
	} else if t.signed && t.qh < 0 {
		if t.bytes {
			g.i("VMOVDQU %sX80<>(SB), Y12", pre)
		} else {
			g.i("VMOVDQU %sEight<>(SB), Y12", pre)
		}
	}
	if !g.avx512 {
		g.i("VMOVDQU %sOnes<>(SB), Y11", pre)
	}
}

// unpack leaves the 32 quants of the weight block at P in Y1, in element
// order: unsigned (nibble | fifth bit << 4), or for signedX the q4_0 or
// q5_0 value minus its offset with its absolute value in Y7. Y4 is
// clobbered.
func (g *gen) unpack(t qtype, P string, signedX bool) {
	if t.bytes { // q8_0 (AVX-512 mv only): the bytes plus 128
		g.i("VPXOR %d(%s), Y12, Y1", t.qs, P)
		return
	}
	g.i("VMOVDQU %d(%s), X1", t.qs, P)
	g.i("VPSRLW $4, X1, X4")
	g.i("VINSERTI128 $1, X4, Y1, Y1")
	g.i("VPAND Y15, Y1, Y1")
	if t.table {
		g.i("VPSHUFB Y1, Y14, Y1 // the table's values")
		if signedX {
			g.i("VPABSB Y1, Y7")
		}
		return
	}
	if t.qh < 0 {
		if signedX {
			g.i("VPSUBB Y12, Y1, Y1 // minus 8")
			g.i("VPABSB Y1, Y7")
		}
		return
	}
	if g.avx512 {
		g.i("KMOVD %d(%s), K1", t.qh, P)
		if signedX {
			g.i("KNOTD K1, K1")
			g.i("VPSUBB Y12, Y1, K1, Y1 // minus 16 where the fifth bit is clear")
			g.i("VPABSB Y1, Y7")
		} else {
			g.i("VPADDB Y12, Y1, K1, Y1 // plus 16 where the fifth bit is set")
		}
		return
	}
	g.i("VPBROADCASTD %d(%s), Y4", t.qh, P)
	g.i("VPSHUFB Y14, Y4, Y4")
	g.i("VPAND Y13, Y4, Y4")
	g.i("VPCMPEQB Y13, Y4, Y4 // 0xff where the fifth bit is set")
	if signedX {
		g.i("VPANDN Y12, Y4, Y4 // 0xf0 where it is clear")
		g.i("VPOR Y4, Y1, Y1")
		g.i("VPABSB Y1, Y7")
	} else {
		g.i("VPAND Y12, Y4, Y4")
		g.i("VPOR Y4, Y1, Y1")
	}
}

// prod: the int16 pair sums (AVX2) or int32 quad sums (AVX-512) of the
// unsigned weights in W and the signed activations src (a register or a
// memory operand) into dst.
func (g *gen) prod(src, W, dst string) {
	if g.avx512 {
		g.i("VPXOR %s, %s, %s", dst, dst, dst)
		g.i("VPDPBUSD %s, %s, %s", src, W, dst)
	} else {
		g.i("VPMADDUBSW %s, %s, %s", src, W, dst)
	}
}

// reduce sums the lanes of the L product registers in prods into the
// int32 lanes 0..L-1 of X0 (prods[0] must be Y0; Y1 is clobbered).
func (g *gen) reduce(prods []string) {
	if !g.avx512 {
		// Pairs of words first (at most 2·2·31·128, no overflow), then
		// VPMADDWD widens to int32.
		g.i("VPHADDW %s, %s, %s", prods[1], prods[0], prods[0])
		g.i("VPMADDWD Y11, %s, %s", prods[0], prods[0])
		if len(prods) == 4 {
			g.i("VPHADDW %s, %s, %s", prods[3], prods[2], prods[2])
			g.i("VPMADDWD Y11, %s, %s", prods[2], prods[2])
		}
	} else {
		g.i("VPHADDD %s, %s, %s", prods[1], prods[0], prods[0])
		if len(prods) == 4 {
			g.i("VPHADDD %s, %s, %s", prods[3], prods[2], prods[2])
		}
	}
	if len(prods) == 4 {
		g.i("VPHADDD %s, %s, %s", prods[2], prods[0], prods[0])
		g.i("VEXTRACTI128 $1, Y0, X1")
		g.i("VPADDD X1, X0, X0")
		return
	}
	g.i("VEXTRACTI128 $1, Y0, X1")
	g.i("VPADDD X1, X0, X0")
	g.i("VPHADDD X0, X0, X0")
}

// e8m0 turns the E8M0 bytes in the dwords of the X or Y register e into
// their halved scales 2^(e-128) as float32 bits, in place, as e8m0Half does:
// exponent field e-1 for e ≥ 2, the subnormal 0x200000 << e for e < 2 (a
// blend under e > 1). b and m are clobbered; pre names the file's
// constants (<pre>E8One: dwords 1, <pre>E8Sub: dwords 0x200000). The AVX2
// packer converts eight rows' bytes at once with it; the kernels, which
// take four or eight bytes from as many rows, look them up (e8m0Lookup).
func (g *gen) e8m0(pre, e, b, m string) {
	g.i("VMOVDQU %sE8Sub<>(SB), %s", pre, b)
	g.i("VPSLLVD %s, %s, %s // 0x200000 << e", e, b, b)
	g.i("VPCMPGTD %sE8One<>(SB), %s, %s // e > 1", pre, e, m)
	g.i("VPSUBD %sE8One<>(SB), %s, %s", pre, e, e)
	g.i("VPSLLD $23, %s, %s // (e-1) << 23", e, e)
	g.i("VPBLENDVB %s, %s, %s, %s // 2^(e-128)", m, e, b, e)
}

// e8m0Lookup loads the halved scales 2^(e-128) of the E8M0 bytes at addrs
// (four, or eight for a Y register) from the table <pre>E8Tab into dst's
// float lanes, in order. AX, BX and, for eight, X6 are clobbered.
func (g *gen) e8m0Lookup(pre string, addrs []string, dst string) {
	x := "X" + dst[1:]
	g.i("LEAQ %sE8Tab<>(SB), BX", pre)
	for k, a := range addrs {
		reg := x
		if k >= 4 {
			reg = "X6"
		}
		g.i("MOVBLZX %s, AX", a)
		if k%4 == 0 {
			g.i("VMOVSS (BX)(AX*4), %s", reg)
		} else {
			g.i("VINSERTPS $0x%02x, (BX)(AX*4), %s, %s", (k%4)<<4, reg, reg)
		}
	}
	if len(addrs) == 8 {
		g.i("VINSERTF128 $1, X6, %s, %s", dst, dst)
	}
}

// scale turns the block sums in X0 (lane l: the block at lanes[l]) into the
// twin's float steps and adds them to the sums in X9: lanes are the rows of
// the mv kernels, the tokens of the x kernels; shared points at the block
// (activation or weight) that all lanes share.
func (g *gen) scale(t qtype, lanes []string, shared string) {
	pre := g.pre()
	if t.e8m0 {
		// d_w·d_a = 2^(e-128)·f16(d_a), one rounded product (VMULPS
		// commutes: the twin's f16(y)·e8m0Half(e)). X6, X7 are free here.
		weightLanes := shared == "DI"
		if weightLanes {
			addrs := make([]string, len(lanes))
			for k, l := range lanes {
				addrs[k] = "(" + l + ")"
			}
			g.e8m0Lookup(pre, addrs, "X4")
			g.i("VPBROADCASTW (%s), X5", shared)
			g.i("VCVTPH2PS X5, X5")
		} else {
			g.i("MOVWLZX (%s), AX", lanes[0])
			g.i("MOVWLZX (%s), BX", lanes[1])
			g.i("SHLL $16, BX")
			g.i("ORL BX, AX")
			if len(lanes) == 4 {
				g.i("MOVWLZX (%s), BX", lanes[2])
				g.i("SHLQ $32, BX")
				g.i("ORQ BX, AX")
				g.i("MOVWLZX (%s), BX", lanes[3])
				g.i("SHLQ $48, BX")
				g.i("ORQ BX, AX")
				g.i("VMOVQ AX, X4")
			} else {
				g.i("VMOVD AX, X4")
			}
			g.i("VCVTPH2PS X4, X4")
			g.i("LEAQ %sE8Tab<>(SB), BX", pre)
			g.i("MOVBLZX (%s), AX", shared)
			g.i("VBROADCASTSS (BX)(AX*4), X5 // 2^(e-128)")
		}
		g.i("VMULPS X5, X4, X4")
		g.i("VCVTDQ2PS X0, X0")
		g.i("VMULPS X4, X0, X0 // d_w·d_a·s")
		g.i("VADDPS X0, X9, X9")
		return
	}
	if t.hasM {
		// Y4 = [d of each lane | m or s of each lane], Y5 = [d | m or s] of
		// the shared block: their product is [d_w·d_a | m·s], exact.
		g.i("MOVL (%s), AX", lanes[0])
		g.i("MOVL (%s), BX", lanes[1])
		g.i("SHLQ $32, BX")
		g.i("ORQ BX, AX")
		g.i("VMOVQ AX, X4")
		if len(lanes) == 4 {
			g.i("MOVL (%s), AX", lanes[2])
			g.i("MOVL (%s), BX", lanes[3])
			g.i("SHLQ $32, BX")
			g.i("ORQ BX, AX")
			g.i("VPINSRQ $1, AX, X4, X4")
		}
		g.i("VPSHUFB %sDM<>(SB), X4, X4", pre)
		g.i("VCVTPH2PS X4, Y4")
		g.i("VPBROADCASTD (%s), X5", shared)
		g.i("VPSHUFB %sDM<>(SB), X5, X5", pre)
		g.i("VCVTPH2PS X5, Y5")
		g.i("VMULPS Y5, Y4, Y4")
		g.i("VCVTDQ2PS X0, X0")
		g.i("VMULPS X4, X0, X0 // d_w·d_a·s")
		g.i("VEXTRACTF128 $1, Y4, X6")
		g.i("VADDPS X6, X0, X0 // + m·s_a")
		g.i("VADDPS X0, X9, X9")
		return
	}
	g.i("MOVWLZX (%s), AX", lanes[0])
	g.i("MOVWLZX (%s), BX", lanes[1])
	g.i("SHLL $16, BX")
	g.i("ORL BX, AX")
	if len(lanes) == 4 {
		g.i("MOVWLZX (%s), BX", lanes[2])
		g.i("SHLQ $32, BX")
		g.i("ORQ BX, AX")
		g.i("MOVWLZX (%s), BX", lanes[3])
		g.i("SHLQ $48, BX")
		g.i("ORQ BX, AX")
		g.i("VMOVQ AX, X4")
	} else {
		g.i("VMOVD AX, X4")
	}
	g.i("VCVTPH2PS X4, X4")
	g.i("VPBROADCASTW (%s), X5", shared)
	g.i("VCVTPH2PS X5, X5")
	g.i("VMULPS X5, X4, X4")
	g.i("VCVTDQ2PS X0, X0")
	g.i("VMULPS X4, X0, X0 // d_w·d_a·s")
	g.i("VADDPS X0, X9, X9")
}

// mvBody computes the four rows at R9..R12 times the activation row from
// a_base into X9.
func (g *gen) mvBody(t qtype) {
	loop := g.newLabel(strings.ToLower(t.name) + g.suffix() + "mv")
	rows := []string{"R9", "R10", "R11", "R12"}
	prods := []string{"Y0", "Y2", "Y3", "Y5"}
	g.i("MOVQ a_base+24(FP), DI")
	g.i("MOVQ nb+48(FP), CX")
	g.i("VXORPS X9, X9, X9")
	g.p("%s:", loop)
	// The next group of four rows is one contiguous run of 4·rb bytes:
	// two lines of it per block (4·wb bytes) ask for all of it while this
	// group computes. Without it the four interleaved streams left memory
	// idle: 6.5 → 26 cpu-GB/s for q5_0 over 64 MB (AVX-512, Zen 5); one
	// group ahead and two were alike, and so were 4 KiB per row (13.6).
	g.i("PREFETCHT0 (R14)")
	g.i("PREFETCHT0 64(R14)")
	g.i("ADDQ $%d, R14", 4*t.wb)
	g.i("VMOVDQU %d(DI), Y10", t.aq)
	if t.signed {
		// q4_0, q5_0: the quants stay unsigned (0..15, 0..31) and the
		// offset times Σy, shared by the four rows, is taken off each
		// row's sums.
		if g.avx512 {
			g.i("VPXOR Y8, Y8, Y8")
			g.i("VPXOR Y6, Y6, Y6")
			g.i("VPDPBUSD Y10, Y12, Y6")
			g.i("VPSUBD Y6, Y8, Y8 // -%d·y in quads", t.offset)
		} else {
			g.i("VPMADDUBSW Y10, Y12, Y8 // %d·y in pairs", t.offset)
		}
	}
	for r, R := range rows {
		g.unpack(t, R, false)
		if t.signed && g.avx512 {
			g.i("VMOVDQA Y8, %s", prods[r])
			g.i("VPDPBUSD Y10, Y1, %s", prods[r])
			continue
		}
		g.prod("Y10", "Y1", prods[r])
		if t.signed {
			g.i("VPSUBW Y8, %s, %s", prods[r], prods[r])
		}
	}
	g.reduce(prods)
	g.scale(t, rows, "DI")
	for _, R := range rows {
		g.i("ADDQ $%d, %s", t.wb, R)
	}
	g.i("ADDQ $%d, DI", t.ab)
	g.i("DECQ CX")
	g.i("JNZ %s", loop)
}

func (g *gen) doc(t qtype) {
	g.p(t.twin)
}

// mv emits mv<T><level>(w, a []byte, nb, nrows int, out []float32) float32.
func (g *gen) mv(t qtype) {
	name := fmt.Sprintf("mv%s%s", t.name, g.suffix())
	lname := strings.ToLower(t.name) + g.suffix()
	vt := "q8_0"
	if t.hasM {
		vt = "q8_1"
	}
	g.p("")
	g.p("// func %s(w, a []byte, nb, nrows int, out []float32) float32", name)
	g.p("//")
	g.p("// For nrows rows of nb %s blocks, out[r] is the dot product with nb %s", strings.ToLower(t.name), vt)
	g.p("// activation blocks, bit for bit the Go twin's:")
	g.p("//")
	g.doc(t)
	g.p("//")
	if g.avx512 {
		g.p("// Eight rows at a time (two per 512-bit register), one per float lane:")
		g.p("// each block's integer sums are reduced to one lane per row and scaled")
		g.p("// and added there in the twin's order. A last group of fewer than eight")
		g.p("// rows overlaps the one before; under eight rows, four at a time.")
	} else {
		g.p("// Four rows at a time, one per float lane: each block's integer sums are")
		g.p("// reduced to one lane per row and scaled and added there in the twin's")
		g.p("// order. A last group of fewer than four rows overlaps the one before.")
	}
	g.p("TEXT ·%s(SB), NOSPLIT, $0-92", name)
	g.i("MOVQ w_base+0(FP), SI")
	g.i("MOVQ nb+48(FP), R8")
	g.i("IMULQ $%d, R8 // row bytes", t.wb)
	g.i("MOVQ nrows+56(FP), DX // rows left")
	g.i("MOVQ out_base+64(FP), R13")
	g.constants(t, false)
	if g.avx512 {
		g.mv8(t, lname)
	}
	g.i("CMPQ DX, $4")
	g.i("JLT %ssmall", lname)
	g.p("%sgroup:", lname)
	g.i("MOVQ SI, R9")
	g.i("LEAQ (SI)(R8*1), R10")
	g.i("LEAQ (SI)(R8*2), R11")
	g.i("LEAQ (R10)(R8*2), R12")
	g.i("LEAQ (SI)(R8*4), R14 // the next group, prefetched")
	g.mvBody(t)
	g.i("VMOVUPS X9, (R13)")
	g.i("SUBQ $4, DX")
	g.i("JEQ %sdone", lname)
	g.i("CMPQ DX, $4")
	g.i("JGE %snext", lname)
	g.i("MOVQ DX, AX // 1..3 rows left: the last group ends at the last row")
	g.i("IMULQ R8, AX")
	g.i("ADDQ AX, SI")
	g.i("LEAQ (R13)(DX*4), R13")
	g.i("MOVQ $4, DX")
	g.i("JMP %sgroup", lname)
	g.p("%snext:", lname)
	g.i("LEAQ (SI)(R8*4), SI")
	g.i("ADDQ $16, R13")
	g.i("JMP %sgroup", lname)
	g.p("%sdone:", lname)
	g.i("VEXTRACTPS $3, X9, ret+88(FP) // the last row's result")
	g.i("VZEROUPPER")
	g.i("RET")
	g.p("")
	g.p("%ssmall:", lname)
	g.i("// One to three rows: lanes past the last row repeat it.")
	g.i("MOVQ DX, AX")
	g.i("DECQ AX")
	g.i("IMULQ R8, AX")
	g.i("LEAQ (SI)(AX*1), R12")
	g.i("MOVQ SI, R9")
	g.i("MOVQ R12, R10")
	g.i("MOVQ R12, R11")
	g.i("CMPQ DX, $2")
	g.i("JLT %sptrs", lname)
	g.i("LEAQ (SI)(R8*1), R10")
	g.i("CMPQ DX, $3")
	g.i("JLT %sptrs", lname)
	g.i("LEAQ (SI)(R8*2), R11")
	g.p("%sptrs:", lname)
	g.i("LEAQ (SI)(R8*4), R14")
	g.mvBody(t)
	g.i("MOVQ out_len+72(FP), AX")
	g.i("TESTQ AX, AX")
	g.i("JEQ %sret", lname)
	g.i("VMOVSS X9, (R13)")
	g.i("CMPQ DX, $2")
	g.i("JLT %sret", lname)
	g.i("VEXTRACTPS $1, X9, 4(R13)")
	g.i("CMPQ DX, $3")
	g.i("JLT %sret", lname)
	g.i("VEXTRACTPS $2, X9, 8(R13)")
	g.p("%sret:", lname)
	g.i("VEXTRACTPS $3, X9, ret+88(FP) // lane 3 holds the last row")
	g.i("VZEROUPPER")
	g.i("RET")
}

// xn emits mat<T><level>x<L>(w, a []byte, astride, nb int, out *float32,
// ostride int): one weight row times L activation rows.
func (g *gen) xn(t qtype, L int) {
	name := fmt.Sprintf("mat%s%sx%d", t.name, g.suffix(), L)
	toks := []string{"DI", "R10", "R11", "R12"}[:L]
	prods := []string{"Y0", "Y2", "Y3", "Y5"}[:L]
	g.p("")
	g.p("// func %s(w, a []byte, astride, nb int, out *float32, ostride int)", name)
	g.p("//")
	g.p("// One %s weight row of nb blocks times %d activation rows (astride bytes", strings.ToLower(t.name), L)
	g.p("// apart) into %d floats ostride bytes apart from out, each bit for bit", L)
	g.p("// the Go twin's (so MatVec's): one float lane per token, the weight block")
	g.p("// unpacked once for the %d.", L)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-80", name)
	g.i("MOVQ w_base+0(FP), SI")
	g.i("MOVQ a_base+24(FP), DI")
	g.i("MOVQ astride+48(FP), R13")
	g.i("MOVQ nb+56(FP), CX")
	g.i("LEAQ (DI)(R13*1), R10")
	if L == 4 {
		g.i("LEAQ (DI)(R13*2), R11")
		g.i("LEAQ (R10)(R13*2), R12")
	}
	g.constants(t, t.signed)
	g.i("VXORPS X9, X9, X9")
	loop := g.newLabel(strings.ToLower(t.name) + g.suffix() + "x")
	g.p("%s:", loop)
	g.unpack(t, "SI", t.signed)
	for k, P := range toks {
		if t.signed {
			// |x| times y with x's sign, as ggml's mul_sum_i8_pairs.
			g.i("VMOVDQU %d(%s), Y6", t.aq, P)
			g.i("VPSIGNB Y1, Y6, Y6")
			g.prod("Y6", "Y7", prods[k])
			continue
		}
		g.prod(fmt.Sprintf("%d(%s)", t.aq, P), "Y1", prods[k])
	}
	g.reduce(prods)
	g.scale(t, toks, "SI")
	g.i("ADDQ $%d, SI", t.wb)
	for _, P := range toks {
		g.i("ADDQ $%d, %s", t.ab, P)
	}
	g.i("DECQ CX")
	g.i("JNZ %s", loop)
	g.i("MOVQ out+64(FP), AX")
	g.i("MOVQ ostride+72(FP), BX")
	g.i("VMOVSS X9, (AX)")
	g.i("VEXTRACTPS $1, X9, (AX)(BX*1)")
	if L == 4 {
		g.i("LEAQ (AX)(BX*2), AX")
		g.i("VEXTRACTPS $2, X9, (AX)")
		g.i("VEXTRACTPS $3, X9, (AX)(BX*1)")
	}
	g.i("VZEROUPPER")
	g.i("RET")
}

// The prefill GEMM (gemm_legacy_amd64.go has the layouts).
const (
	panelLen = 640 // one block of 16 rows: [8][16][4] quants, [16] d, [16] m
	panelD   = 512
	panelM   = 576
	scaleLen = 64 // one block of 8 tokens: [8] d_a, [8] s_a or -offset·Σy
)

func (g *gen) gemmHeader() {
	g.p("// Code generated by gen_legacy.go; DO NOT EDIT.")
	g.p("")
	g.p("//go:build gc && !purego")
	g.p("")
	g.p(`#include "textflag.h"`)
	g.p("")
	g.p("// The AVX-512 prefill GEMM of q4_0, q4_1, q5_0, q5_1 and q8_0: panel")
	g.p("// packers, 16-row micro-kernels and the activation scales they read")
	g.p("// (see gemm_legacy_amd64.go).")
	g.p("")
	data := func(name string, qwords ...uint64) {
		for k, q := range qwords {
			g.p("DATA %s<>+0x%02x(SB)/8, $0x%016x", name, 8*k, q)
		}
		g.p("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	rep := func(q uint64) []uint64 { return []uint64{q, q, q, q, q, q, q, q} }
	g.p("// legGIota: dwords 0..15, the rows of a panel.")
	data("legGIota", 0x0000000100000000, 0x0000000300000002, 0x0000000500000004, 0x0000000700000006,
		0x0000000900000008, 0x0000000b0000000a, 0x0000000d0000000c, 0x0000000f0000000e)
	g.p("// legGNib: bytes 0x0f; legGHi: bytes 0x10; legGBits0/1: in each dword,")
	g.p("// the bytes 1, 2, 4, 8 and 0x10, 0x20, 0x40, 0x80.")
	data("legGNib", rep(0x0f0f0f0f0f0f0f0f)...)
	data("legGHi", rep(0x1010101010101010)...)
	data("legGBits0", rep(0x0804020108040201)...)
	data("legGBits1", rep(0x8040201080402010)...)
	g.p("// legGByte<i>: in each dword, its byte i four times (VPSHUFB).")
	for i := 0; i < 4; i++ {
		var q [2]uint64
		for j := 0; j < 4; j++ {
			v := uint64(4*j+i) * 0x01010101
			q[j/2] |= v << (32 * uint(j%2))
		}
		data(fmt.Sprintf("legGByte%d", i), q[0], q[1], q[0], q[1], q[0], q[1], q[0], q[1])
	}
	lo, hi := tableQwords(12)
	g.p("// legGMx: mxfp4's values plus 12.")
	data("legGMx", lo, hi)
}

// gemmPack emits legPack<T>AVX512(panel, w []byte, rb, nb int): 16 rows of
// nb blocks, rb bytes apart, into nb panel blocks.
func (g *gen) gemmPack(t qtype) {
	name := fmt.Sprintf("legPack%sAVX512", t.name)
	lname := "legpack" + strings.ToLower(t.name)
	g.p("")
	g.p("// func %s(panel, w []byte, rb, nb int)", name)
	g.p("//")
	g.p("// Unpacks 16 %s rows (rb bytes apart from w) into nb panel blocks of %d", strings.ToLower(t.name), panelLen)
	g.p("// bytes: the quants (unsigned: q4_0's and q5_0's are their value plus 8 or")
	g.p("// 16) with dword k of row r at 64k+4r, then d and m of the 16 rows as")
	g.p("// float32. The nibbles of 16 rows are transposed as dwords (four rows per")
	if t.qh >= 0 {
		g.p("// register, an in-lane 4×4 transpose), split, and the fifth bits")
		g.p("// (gathered) added under masks.")
	} else {
		g.p("// register, an in-lane 4×4 transpose) and split.")
	}
	g.p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	g.packSetup()
	g.i("VMOVDQU64 legGNib<>(SB), Z30")
	if t.qh >= 0 {
		g.i("VMOVDQU64 legGHi<>(SB), Z29")
		g.i("VMOVDQU64 legGBits0<>(SB), Z23")
		g.i("VMOVDQU64 legGBits1<>(SB), Z24")
		for i := 0; i < 4; i++ {
			g.i("VMOVDQU64 legGByte%d<>(SB), Z%d", i, 25+i)
		}
	}
	if t.table {
		g.i("VBROADCASTI32X4 legGMx<>(SB), Z21 // the table plus 12")
		g.i("MOVL $0xff, AX")
		g.i("VPBROADCASTD AX, Z20")
		g.i("MOVL $1, AX")
		g.i("VPBROADCASTD AX, Z22")
		g.i("MOVL $0x200000, AX")
		g.i("VPBROADCASTD AX, Z23")
	}
	g.i("LEAQ (BX)(R8*8), R12 // the next panel, prefetched")
	g.p("%sloop:", lname)
	// The next panel's 16 rows are one run of 16·rb bytes: 16·wb of it per
	// block.
	for off := 0; off < 16*t.wb; off += 64 {
		g.i("PREFETCHT0 %d(R12)", off)
	}
	g.i("ADDQ $%d, R12", 16*t.wb)
	g.transpose16(t.qs, 0)
	for k := 0; k < 4; k++ {
		g.i("VPSRLD $4, Z%d, Z%d", k, 12+k)
		g.i("VPANDD Z30, Z%d, Z%d", k, 8+k)
		g.i("VPANDD Z30, Z%d, Z%d", 12+k, 12+k)
	}
	if t.table {
		for k := 8; k < 16; k++ {
			g.i("VPSHUFB Z%d, Z21, Z%d", k, k)
		}
	}
	if t.qh >= 0 {
		g.i("KXNORW K1, K1, K1")
		g.i("VPGATHERDD %d(SI)(Z31*1), K1, Z16 // the fifth bits of the 16 rows", t.qh)
		for k := 0; k < 8; k++ {
			g.i("VPSHUFB Z%d, Z16, Z17", 25+k/2)
			g.i("VPTESTMB Z%d, Z17, K2", 23+k%2)
			g.i("VPADDB Z29, Z%d, K2, Z%d", 8+k, 8+k)
		}
	}
	g.i("KXNORW K1, K1, K1")
	g.i("VPGATHERDD (SI)(Z31*1), K1, Z18 // d and m (or qh) of the 16 rows")
	if t.e8m0 {
		// The 16 rows' E8M0 bytes as 2^(e-128) (see e8m0).
		g.i("VPANDD Z20, Z18, Z18 // e")
		g.i("VPSUBD Z22, Z18, Z19")
		g.i("VPSLLD $23, Z19, Z19 // (e-1) << 23")
		g.i("VPCMPUD $2, Z22, Z18, K2 // e ≤ 1")
		g.i("VPSLLVD Z18, Z23, K2, Z19 // there 0x200000 << e")
	} else {
		g.i("VPMOVDW Z18, Y19")
		g.i("VCVTPH2PS Y19, Z19")
	}
	if t.hasM {
		g.i("VPSRLD $16, Z18, Z18")
		g.i("VPMOVDW Z18, Y20")
		g.i("VCVTPH2PS Y20, Z20")
	}
	for k := 0; k < 8; k++ {
		g.i("VMOVDQU64 Z%d, %d(DI)", 8+k, 64*k)
	}
	g.i("VMOVUPS Z19, %d(DI)", panelD)
	if t.hasM {
		g.i("VMOVUPS Z20, %d(DI)", panelM)
	}
	g.i("ADDQ $%d, SI", t.wb)
	g.i("ADDQ $%d, BX", t.wb)
	g.i("ADDQ $%d, DI", panelLen)
	g.i("DECQ CX")
	g.i("JNZ %sloop", lname)
	g.i("VZEROUPPER")
	g.i("RET")
}

// packSetup loads a panel packer's arguments (panel DI, w SI, rb R8, nb
// CX), the row offsets 3rb, 5rb, 7rb (R9, R10, R11), row 8 (BX) and, in
// Z31, the 16 rows' offsets for VPGATHERDD.
func (g *gen) packSetup() {
	g.i("MOVQ panel_base+0(FP), DI")
	g.i("MOVQ w_base+24(FP), SI")
	g.i("MOVQ rb+48(FP), R8")
	g.i("MOVQ nb+56(FP), CX")
	g.i("LEAQ (R8)(R8*2), R9 // 3rb")
	g.i("LEAQ (R8)(R8*4), R10 // 5rb")
	g.i("LEAQ (R9)(R8*4), R11 // 7rb")
	g.i("LEAQ (SI)(R8*8), BX // row 8")
	g.i("VPBROADCASTD R8, Z31")
	g.i("VPMULLD legGIota<>(SB), Z31, Z31 // the rows' offsets")
}

// transpose16 loads the 16 bytes at off of the 16 rows (packSetup's
// registers) and transposes them as dwords: Z0..Z3 then hold dwords
// first..first+3 of the 16 rows, row r in lane r (rows 4j+c are loaded into
// lane j of register c, then an in-lane 4×4 transpose).
func (g *gen) transpose16(off, first int) {
	rows := []string{"(SI)", "(SI)(R8*1)", "(SI)(R8*2)", "(SI)(R9*1)", "(SI)(R8*4)", "(SI)(R10*1)", "(SI)(R9*2)", "(SI)(R11*1)"}
	rowAddr := func(r int) string {
		a := rows[r%8]
		if r >= 8 {
			a = strings.Replace(a, "SI", "BX", 1)
		}
		return fmt.Sprint(off) + a
	}
	for c := 0; c < 4; c++ {
		g.i("VMOVDQU %s, X%d", rowAddr(c), c)
		for j := 1; j < 4; j++ {
			g.i("VINSERTI32X4 $%d, %s, Z%d, Z%d", j, rowAddr(4*j+c), c, c)
		}
	}
	g.i("VPUNPCKLDQ Z1, Z0, Z4")
	g.i("VPUNPCKHDQ Z1, Z0, Z5")
	g.i("VPUNPCKLDQ Z3, Z2, Z6")
	g.i("VPUNPCKHDQ Z3, Z2, Z7")
	g.i("VPUNPCKLQDQ Z6, Z4, Z0 // dword %d of the 16 rows", first)
	g.i("VPUNPCKHQDQ Z6, Z4, Z1")
	g.i("VPUNPCKLQDQ Z7, Z5, Z2")
	g.i("VPUNPCKHQDQ Z7, Z5, Z3")
}

// gemmPackQ8_0 emits legPackQ8_0AVX512(panel, w []byte, rb, nb int): 16
// q8_0 rows of nb blocks, rb bytes apart, into nb panel blocks, the quants
// plus 128 (XOR 0x80) so that VPDPBUSD takes them as unsigned bytes.
func (g *gen) gemmPackQ8_0() {
	const name, lname, wb = "legPackQ8_0AVX512", "legpackq8_0", 34
	g.p("")
	g.p("// func %s(panel, w []byte, rb, nb int)", name)
	g.p("//")
	g.p("// Unpacks 16 q8_0 rows (rb bytes apart from w) into nb panel blocks of %d", panelLen)
	g.p("// bytes: the quants plus 128 (unsigned) with dword k of row r at 64k+4r,")
	g.p("// then d of the 16 rows as float32. Each half block of the 16 rows is")
	g.p("// transposed as dwords (four rows per register, an in-lane 4×4 transpose).")
	g.p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	g.packSetup()
	g.i("MOVL $0x80808080, AX")
	g.i("VPBROADCASTD AX, Z30")
	g.i("LEAQ (BX)(R8*8), R12 // the next panel, prefetched")
	g.p("%sloop:", lname)
	for off := 0; off < 16*wb; off += 64 {
		g.i("PREFETCHT0 %d(R12)", off)
	}
	g.i("ADDQ $%d, R12", 16*wb)
	for h := 0; h < 2; h++ {
		qs := 2 + 16*h
		g.transpose16(qs, 4*h)
		for k := 0; k < 4; k++ {
			g.i("VPXORD Z30, Z%d, Z%d", k, k)
			g.i("VMOVDQU64 Z%d, %d(DI)", k, 64*(4*h+k))
		}
	}
	g.i("KXNORW K1, K1, K1")
	g.i("VPGATHERDD (SI)(Z31*1), K1, Z18 // d of the 16 rows")
	g.i("VPMOVDW Z18, Y19")
	g.i("VCVTPH2PS Y19, Z19")
	g.i("VMOVUPS Z19, %d(DI)", panelD)
	g.i("ADDQ $%d, SI", wb)
	g.i("ADDQ $%d, BX", wb)
	g.i("ADDQ $%d, DI", panelLen)
	g.i("DECQ CX")
	g.i("JNZ %sloop", lname)
	g.i("VZEROUPPER")
	g.i("RET")
}

// gemmKernel emits legGemm<T>AVX512x<T>(panel []byte, nb int, a []byte,
// astride int, scales []byte, out *float32, ostride int).
func (g *gen) gemmKernel(t qtype, T int) {
	name := fmt.Sprintf("legGemm%sAVX512x%d", t.name, T)
	tok := []string{"DI", "R8", "R9", "R10", "R11", "R12", "BX", "DX"}
	acc := func(k int) int { return k }
	res := func(k int) int { return 8 + k }
	g.p("")
	g.p("// func %s(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)", name)
	g.p("//")
	g.p("// 16 packed %s rows times %d activation rows (astride bytes apart; their", strings.ToLower(t.name), T)
	g.p("// scales from legPrep): the 16 results of token t go to out + t·ostride")
	g.p("// bytes. VPDPBUSD meets four quants of each row with four activation")
	g.p("// bytes broadcast from memory; each block's sum lands in one lane per row")
	g.p("// and is scaled and added there as the Go twin does:")
	g.p("//")
	g.doc(t)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-104", name)
	g.i("MOVQ panel_base+0(FP), SI")
	g.i("MOVQ nb+24(FP), CX")
	g.i("MOVQ a_base+32(FP), DI")
	g.i("MOVQ astride+56(FP), R13")
	g.i("MOVQ scales_base+64(FP), AX")
	if T >= 2 {
		g.i("LEAQ (DI)(R13*1), R8")
	}
	if T >= 4 {
		g.i("LEAQ (DI)(R13*2), R9")
		g.i("LEAQ (R8)(R13*2), R10")
	}
	if T == 8 {
		g.i("LEAQ (DI)(R13*4), R11")
		g.i("LEAQ (R8)(R13*4), R12")
		g.i("LEAQ (R9)(R13*4), BX")
		g.i("LEAQ (R10)(R13*4), DX")
	}
	for k := 0; k < T; k++ {
		g.i("VPXORD Z%d, Z%d, Z%d", res(k), res(k), res(k))
	}
	loop := name + "loop"
	g.p("%s:", loop)
	for k := 0; k < T; k++ {
		if t.signed {
			g.i("VPBROADCASTD %d(AX), Z%d // -offset·Σy", 32+4*k, acc(k))
		} else {
			g.i("VPXORD Z%d, Z%d, Z%d", acc(k), acc(k), acc(k))
		}
	}
	for q := 0; q < 8; q++ {
		g.i("VMOVDQU32 %d(SI), Z24", 64*q)
		for k := 0; k < T; k++ {
			g.i("VPDPBUSD.BCST %d(%s), Z24, Z%d", t.aq+4*q, tok[k], acc(k))
		}
	}
	g.i("VMOVUPS %d(SI), Z26 // d", panelD)
	if t.hasM {
		g.i("VMOVUPS %d(SI), Z27 // m", panelM)
	}
	for k := 0; k < T; k++ {
		g.i("VCVTDQ2PS Z%d, Z%d", acc(k), acc(k))
		g.i("VMULPS.BCST %d(AX), Z26, Z28", 4*k)
		g.i("VMULPS Z28, Z%d, Z%d // d_w·d_a·s", acc(k), acc(k))
		if t.hasM {
			g.i("VMULPS.BCST %d(AX), Z27, Z29", 32+4*k)
			g.i("VADDPS Z29, Z%d, Z%d // + m·s_a", acc(k), acc(k))
		}
		g.i("VADDPS Z%d, Z%d, Z%d", acc(k), res(k), res(k))
	}
	g.i("ADDQ $%d, SI", panelLen)
	g.i("ADDQ $%d, AX", scaleLen)
	for k := 0; k < T; k++ {
		g.i("ADDQ $%d, %s", t.ab, tok[k])
	}
	g.i("DECQ CX")
	g.i("JNZ %s", loop)
	g.i("MOVQ out+88(FP), AX")
	g.i("MOVQ ostride+96(FP), R13")
	for k := 0; k < T; k++ {
		g.i("VMOVUPS Z%d, (AX)", res(k))
		if k < T-1 {
			g.i("ADDQ R13, AX")
		}
	}
	g.i("VZEROUPPER")
	g.i("RET")
}

// gemmPrep emits legPrepQ8_0(a []byte, astride, nb, ntok int, scales
// []byte, off int) or legPrepQ8_1(a []byte, astride, nb, ntok int, scales
// []byte), for both GEMMs (AVX2 and F16C).
func (g *gen) gemmPrep(q81 bool) {
	name, ab, lname := "legPrepQ8_0", 34, "legprepq80"
	if q81 {
		name, ab, lname = "legPrepQ8_1", 36, "legprepq81"
	}
	g.p("")
	if q81 {
		g.p("// func %s(a []byte, astride, nb, ntok int, scales []byte)", name)
	} else {
		g.p("// func %s(a []byte, astride, nb, ntok int, scales []byte, off int)", name)
	}
	g.p("//")
	g.p("// For ntok activation rows astride bytes apart, writes the scales the")
	g.p("// GEMM reads: for token t and block b, at 64·(nb·(t/8) + b) + 4·(t%%8),")
	if q81 {
		g.p("// d as float32, and 32 bytes further s as float32.")
	} else {
		g.p("// d as float32, and 32 bytes further -off·Σy as int32 (q4_0's, q5_0's")
		g.p("// and q8_0's panels hold their quants plus off: 8, 16, 128).")
	}
	frame := 72
	if !q81 {
		frame = 80
	}
	g.p("TEXT ·%s(SB), NOSPLIT, $0-%d", name, frame)
	g.i("MOVQ a_base+0(FP), SI")
	g.i("MOVQ astride+24(FP), R8")
	g.i("MOVQ nb+32(FP), R9")
	g.i("MOVQ ntok+40(FP), DX")
	g.i("MOVQ scales_base+48(FP), DI")
	g.i("MOVQ R9, R10")
	g.i("SHLQ $6, R10 // 64·nb")
	if !q81 {
		g.i("MOVQ off+72(FP), R14")
		g.i("NEGL R14")
		g.i("VMOVDQU legGX80<>(SB), Y15")
		g.i("VPXOR Y14, Y14, Y14")
	}
	g.i("XORQ R11, R11 // token")
	g.p("%stok:", lname)
	g.i("MOVQ R11, AX")
	g.i("SHRQ $3, AX")
	g.i("IMULQ R10, AX")
	g.i("MOVQ R11, BX")
	g.i("ANDQ $7, BX")
	g.i("LEAQ (AX)(BX*4), R12")
	g.i("ADDQ DI, R12 // this token's first entry")
	g.i("MOVQ R11, R13")
	g.i("IMULQ R8, R13")
	g.i("ADDQ SI, R13 // this token's row")
	g.i("MOVQ R9, CX")
	g.p("%sblk:", lname)
	if q81 {
		g.i("VMOVD (R13), X0")
		g.i("VCVTPH2PS X0, X0")
		g.i("VMOVSS X0, (R12)")
		g.i("VEXTRACTPS $1, X0, 32(R12)")
	} else {
		g.i("MOVWLZX (R13), AX")
		g.i("VMOVD AX, X0")
		g.i("VCVTPH2PS X0, X0")
		g.i("VMOVSS X0, (R12)")
		g.i("VPXOR 2(R13), Y15, Y1 // the quants plus 128, unsigned")
		g.i("VPSADBW Y14, Y1, Y1")
		g.i("VEXTRACTI128 $1, Y1, X2")
		g.i("VPADDQ X2, X1, X1")
		g.i("VPSHUFD $0x4e, X1, X2")
		g.i("VPADDQ X2, X1, X1")
		g.i("VMOVD X1, AX")
		g.i("SUBL $4096, AX // Σy")
		g.i("IMULL R14, AX")
		g.i("MOVL AX, 32(R12)")
	}
	g.i("ADDQ $%d, R13", ab)
	g.i("ADDQ $%d, R12", scaleLen)
	g.i("DECQ CX")
	g.i("JNZ %sblk", lname)
	g.i("INCQ R11")
	g.i("CMPQ R11, DX")
	g.i("JLT %stok", lname)
	g.i("VZEROUPPER")
	g.i("RET")
}

// mv8 emits the AVX-512 mv kernels' main loop: eight rows at a time (while
// eight or more are left; a last group overlaps the one before), two rows
// per 512-bit register, and their eight sums reduced into one float lane
// each. It returns (with the last row's result) when DX rows are done and
// falls through to the four-row code for fewer than eight rows.
func (g *gen) mv8(t qtype, lname string) {
	g.i("CMPQ DX, $8")
	g.i("JLT %sfour", lname)
	g.i("MOVL $0x0f0f0f0f, AX")
	g.i("VPBROADCASTD AX, Z15")
	if t.signed {
		g.i("MOVL $0x%02x%02x%02x%02x, AX // the offset", t.offset, t.offset, t.offset, t.offset)
	} else {
		g.i("MOVL $0x10101010, AX")
	}
	g.i("VPBROADCASTD AX, Z12")
	g.i("VMOVDQU64 leg5Shift<>(SB), Z14")
	g.i("VMOVDQU64 leg5Gather<>(SB), Z13")
	if t.table {
		g.i("VBROADCASTI32X4 leg5Mx<>(SB), Z11 // the table plus 12, in each lane")
	}
	g.i("LEAQ (R8)(R8*2), R12 // 3rb")
	g.p("%sgroup8:", lname)
	g.i("MOVQ SI, R9")
	g.i("LEAQ (SI)(R8*1), R10")
	g.i("LEAQ (SI)(R8*8), R14 // the next group, prefetched")
	g.i("MOVQ a_base+24(FP), DI")
	g.i("MOVQ nb+48(FP), CX")
	g.i("VXORPS Y9, Y9, Y9")
	// Rows 0..7 at R9, R10, R9+2rb, R9+3rb, R9+4rb, R10+4rb, R9+6rb, R10+6rb.
	row := []string{"(R9)", "(R10)", "(R9)(R8*2)", "(R9)(R12*1)", "(R9)(R8*4)", "(R10)(R8*4)", "(R9)(R12*2)", "(R10)(R12*2)"}
	at := func(off, r int) string {
		if off == 0 {
			return row[r]
		}
		return fmt.Sprint(off) + row[r]
	}
	g.p("%sloop8:", lname)
	for off := 0; off < 8*t.wb; off += 64 {
		g.i("PREFETCHT0 %d(R14)", off)
	}
	g.i("ADDQ $%d, R14", 8*t.wb)
	g.i("VBROADCASTI64X4 %d(DI), Z10 // the activations twice", t.aq)
	if t.signed {
		g.i("VPXORD Z7, Z7, Z7")
		g.i("VPDPBUSD Z10, Z12, Z7")
		g.i("VPXORD Z8, Z8, Z8")
		g.i("VPSUBD Z7, Z8, Z8 // -%d·y in quads", t.offset)
	}
	prods := []string{"Z0", "Z2", "Z3", "Z5"}
	for p, P := range prods {
		a, b := 2*p, 2*p+1
		if t.bytes {
			g.i("VMOVDQU %s, Y1", at(t.qs, a))
			g.i("VINSERTI64X4 $1, %s, Z1, Z1", at(t.qs, b))
			g.i("VPXORD Z12, Z1, Z1 // rows %d and %d plus 128", a, b)
			g.i("VMOVDQA64 Z8, %s", P)
			g.i("VPDPBUSD Z10, Z1, %s", P)
			continue
		}
		g.i("VMOVDQU %s, X1", at(t.qs, a))
		g.i("VINSERTI32X4 $2, %s, Z1, Z1", at(t.qs, b))
		g.i("VSHUFI64X2 $0xa0, Z1, Z1, Z1")
		g.i("VPSRLVW Z14, Z1, Z1")
		g.i("VPANDD Z15, Z1, Z1 // rows %d and %d, element order", a, b)
		if t.table {
			g.i("VPSHUFB Z1, Z11, Z1")
		}
		if t.qh >= 0 {
			g.i("MOVL %s, AX", at(t.qh, a))
			g.i("MOVL %s, BX", at(t.qh, b))
			g.i("SHLQ $32, BX")
			g.i("ORQ BX, AX")
			g.i("KMOVQ AX, K1")
			g.i("VPADDB Z12, Z1, K1, Z1")
		}
		if t.signed {
			g.i("VMOVDQA64 Z8, %s", P)
		} else {
			g.i("VPXORD %s, %s, %s", P, P, P)
		}
		g.i("VPDPBUSD Z10, Z1, %s", P)
	}
	// Z0 = [r0 | r1], Z2 = [r2 | r3], ... (eight quad sums per row).
	g.i("VSHUFI64X2 $0x88, Z2, Z0, Z16")
	g.i("VSHUFI64X2 $0xdd, Z2, Z0, Z17")
	g.i("VPADDD Z17, Z16, Z16 // lane r: four sums of row r")
	g.i("VSHUFI64X2 $0x88, Z5, Z3, Z18")
	g.i("VSHUFI64X2 $0xdd, Z5, Z3, Z19")
	g.i("VPADDD Z19, Z18, Z18 // lane r: four sums of row 4+r")
	g.i("VPUNPCKLDQ Z18, Z16, Z17")
	g.i("VPUNPCKHDQ Z18, Z16, Z19")
	g.i("VPADDD Z19, Z17, Z17")
	g.i("VPSHUFD $0x4e, Z17, Z19")
	g.i("VPADDD Z19, Z17, Z17 // lane r: S(r), S(4+r), S(r), S(4+r)")
	g.i("VPERMD Z17, Z13, Z0 // Y0: the eight rows' sums")
	if t.hasM {
		for h, X := range []string{"X4", "X6"} {
			g.i("MOVL %s, AX", at(0, 4*h))
			g.i("MOVL %s, BX", at(0, 4*h+1))
			g.i("SHLQ $32, BX")
			g.i("ORQ BX, AX")
			g.i("VMOVQ AX, %s", X)
			g.i("MOVL %s, AX", at(0, 4*h+2))
			g.i("MOVL %s, BX", at(0, 4*h+3))
			g.i("SHLQ $32, BX")
			g.i("ORQ BX, AX")
			g.i("VPINSRQ $1, AX, %s, %s", X, X)
		}
		g.i("VINSERTI128 $1, X6, Y4, Y4")
		g.i("VPSHUFB leg5DM<>(SB), Y4, Y4")
		g.i("VPERMQ $0xd8, Y4, Y4 // d0..d7 m0..m7")
		g.i("VCVTPH2PS X4, Y6")
		g.i("VEXTRACTI128 $1, Y4, X4")
		g.i("VCVTPH2PS X4, Y7")
		g.i("VPBROADCASTW (DI), X5")
		g.i("VCVTPH2PS X5, Y5")
		g.i("VPBROADCASTW 2(DI), X4")
		g.i("VCVTPH2PS X4, Y4")
		g.i("VMULPS Y5, Y6, Y6")
		g.i("VMULPS Y4, Y7, Y7")
		g.i("VCVTDQ2PS Y0, Y0")
		g.i("VMULPS Y6, Y0, Y0 // d_w·d_a·s")
		g.i("VADDPS Y7, Y0, Y0 // + m·s_a")
		g.i("VADDPS Y0, Y9, Y9")
	} else if t.e8m0 {
		addrs := make([]string, 8)
		for r := range addrs {
			addrs[r] = at(0, r)
		}
		g.e8m0Lookup("leg5", addrs, "Y4")
		g.i("VPBROADCASTW (DI), X5")
		g.i("VCVTPH2PS X5, Y5")
		g.i("VMULPS Y5, Y4, Y4")
		g.i("VCVTDQ2PS Y0, Y0")
		g.i("VMULPS Y4, Y0, Y0 // d_w·d_a·s")
		g.i("VADDPS Y0, Y9, Y9")
	} else {
		for h := 0; h < 2; h++ {
			g.i("MOVWLZX %s, AX", at(0, 4*h))
			g.i("MOVWLZX %s, BX", at(0, 4*h+1))
			g.i("SHLL $16, BX")
			g.i("ORL BX, AX")
			g.i("MOVWLZX %s, BX", at(0, 4*h+2))
			g.i("SHLQ $32, BX")
			g.i("ORQ BX, AX")
			g.i("MOVWLZX %s, BX", at(0, 4*h+3))
			g.i("SHLQ $48, BX")
			g.i("ORQ BX, AX")
			if h == 0 {
				g.i("VMOVQ AX, X4")
			} else {
				g.i("VPINSRQ $1, AX, X4, X4")
			}
		}
		g.i("VCVTPH2PS X4, Y4")
		g.i("VPBROADCASTW (DI), X5")
		g.i("VCVTPH2PS X5, Y5")
		g.i("VMULPS Y5, Y4, Y4")
		g.i("VCVTDQ2PS Y0, Y0")
		g.i("VMULPS Y4, Y0, Y0 // d_w·d_a·s")
		g.i("VADDPS Y0, Y9, Y9")
	}
	g.i("ADDQ $%d, R9", t.wb)
	g.i("ADDQ $%d, R10", t.wb)
	g.i("ADDQ $%d, DI", t.ab)
	g.i("DECQ CX")
	g.i("JNZ %sloop8", lname)
	g.i("VMOVUPS Y9, (R13)")
	g.i("SUBQ $8, DX")
	g.i("JEQ %sdone8", lname)
	g.i("CMPQ DX, $8")
	g.i("JGE %snext8", lname)
	g.i("MOVQ DX, AX // 1..7 rows left: the last group ends at the last row")
	g.i("IMULQ R8, AX")
	g.i("ADDQ AX, SI")
	g.i("LEAQ (R13)(DX*4), R13")
	g.i("MOVQ $8, DX")
	g.i("JMP %sgroup8", lname)
	g.p("%snext8:", lname)
	g.i("LEAQ (SI)(R8*8), SI")
	g.i("ADDQ $32, R13")
	g.i("JMP %sgroup8", lname)
	g.p("%sdone8:", lname)
	g.i("VEXTRACTF128 $1, Y9, X0")
	g.i("VEXTRACTPS $3, X0, ret+88(FP) // the last row's result")
	g.i("VZEROUPPER")
	g.i("RET")
	g.p("%sfour:", lname)
}

func (g *gen) gemmHeader2() {
	g.p("// Code generated by gen_legacy.go; DO NOT EDIT.")
	g.p("")
	g.p("//go:build gc && !purego")
	g.p("")
	g.p(`#include "textflag.h"`)
	g.p("")
	g.p("// The AVX2 prefill GEMM of q4_0, q4_1, q5_0 and q5_1: panel packers of 8 rows,")
	g.p("// their micro-kernels, and the activation scales both GEMMs read (see")
	g.p("// gemm_legacy_amd64.go).")
	g.p("")
	data := func(name string, qwords ...uint64) {
		for k, q := range qwords {
			g.p("DATA %s<>+0x%02x(SB)/8, $0x%016x", name, 8*k, q)
		}
		g.p("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	rep := func(q uint64) []uint64 { return []uint64{q, q, q, q} }
	g.p("// legG2Nib: bytes 0x0f; legG2Hi: bytes 0x10; legG2Bits0/1: in each dword,")
	g.p("// the bytes 1, 2, 4, 8 and 0x10, 0x20, 0x40, 0x80; legG2Ones: words 1;")
	g.p("// legG2X80: bytes 0x80.")
	data("legG2Nib", rep(0x0f0f0f0f0f0f0f0f)...)
	data("legG2Hi", rep(0x1010101010101010)...)
	data("legG2Bits0", rep(0x0804020108040201)...)
	data("legG2Bits1", rep(0x8040201080402010)...)
	data("legG2Ones", rep(0x0001000100010001)...)
	data("legGX80", rep(0x8080808080808080)...)
	g.p("// legG2Byte<i>: in each dword, its byte i four times (VPSHUFB).")
	for i := 0; i < 4; i++ {
		var q [2]uint64
		for j := 0; j < 4; j++ {
			v := uint64(4*j+i) * 0x01010101
			q[j/2] |= v << (32 * uint(j%2))
		}
		data(fmt.Sprintf("legG2Byte%d", i), q[0], q[1], q[0], q[1])
	}
	lo, hi := tableQwords(12)
	g.p("// legG2Mx: mxfp4's values plus 12 (both lanes); legG2FF: dwords 0xff;")
	g.p("// legG2E8One, legG2E8Sub: dwords 1 and 0x200000 (e8m0).")
	data("legG2Mx", lo, hi, lo, hi)
	data("legG2FF", rep(0x000000ff000000ff)...)
	data("legG2E8One", rep(0x0000000100000001)...)
	data("legG2E8Sub", rep(0x0020000000200000)...)
	g.p("// legG2DM orders the halves d0 m0 d1 m1 d2 m2 d3 m3 of each lane as")
	g.p("// d0 d1 d2 d3 m0 m1 m2 m3.")
	data("legG2DM", 0x0d0c090805040100, 0x0f0e0b0a07060302, 0x0d0c090805040100, 0x0f0e0b0a07060302)
}

// gemmPack2 emits legPack<T>AVX2(panel, w []byte, rb, nb int): 8 rows of nb
// blocks, rb bytes apart, into nb panel blocks of 320 bytes.
func (g *gen) gemmPack2(t qtype) {
	name := fmt.Sprintf("legPack%sAVX2", t.name)
	lname := "legpack2" + strings.ToLower(t.name)
	const pl = panelLen / 2
	g.p("")
	g.p("// func %s(panel, w []byte, rb, nb int)", name)
	g.p("//")
	g.p("// Unpacks 8 %s rows (rb bytes apart from w) into nb panel blocks of %d", strings.ToLower(t.name), pl)
	g.p("// bytes: the quants (unsigned: q4_0's and q5_0's are their value plus 8 or")
	g.p("// 16) with dword k of row r at 32k+4r, then d and m of the 8 rows as float32, as")
	g.p("// legPack%sAVX512 does for 16 rows.", t.name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	g.i("MOVQ panel_base+0(FP), DI")
	g.i("MOVQ w_base+24(FP), SI")
	g.i("MOVQ rb+48(FP), R8")
	g.i("MOVQ nb+56(FP), CX")
	g.i("LEAQ (R8)(R8*2), R9 // 3rb")
	g.i("LEAQ (SI)(R8*4), BX // row 4")
	g.i("LEAQ (BX)(R8*4), R12 // the next panel, prefetched")
	g.i("VMOVDQU legG2Nib<>(SB), Y15")
	if t.table {
		g.i("VMOVDQU legG2Mx<>(SB), Y13 // the table plus 12")
	}
	if t.qh >= 0 {
		g.i("VMOVDQU legG2Hi<>(SB), Y14")
		g.i("VMOVDQU legG2Bits0<>(SB), Y13")
		g.i("VMOVDQU legG2Bits1<>(SB), Y12")
	}
	row := []string{"(SI)", "(SI)(R8*1)", "(SI)(R8*2)", "(SI)(R9*1)", "(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(BX)(R9*1)"}
	at := func(off, r int) string {
		if off == 0 {
			return row[r]
		}
		return fmt.Sprint(off) + row[r]
	}
	g.p("%sloop:", lname)
	for off := 0; off < 8*t.wb; off += 64 {
		g.i("PREFETCHT0 %d(R12)", off)
	}
	g.i("ADDQ $%d, R12", 8*t.wb)
	// Rows c and 4+c in register c.
	for c := 0; c < 4; c++ {
		g.i("VMOVDQU %s, X%d", at(t.qs, c), c)
		g.i("VINSERTI128 $1, %s, Y%d, Y%d", at(t.qs, 4+c), c, c)
	}
	g.i("VPUNPCKLDQ Y1, Y0, Y4")
	g.i("VPUNPCKHDQ Y1, Y0, Y5")
	g.i("VPUNPCKLDQ Y3, Y2, Y6")
	g.i("VPUNPCKHDQ Y3, Y2, Y7")
	g.i("VPUNPCKLQDQ Y6, Y4, Y0 // dword 0 of the 8 rows")
	g.i("VPUNPCKHQDQ Y6, Y4, Y1")
	g.i("VPUNPCKLQDQ Y7, Y5, Y2")
	g.i("VPUNPCKHQDQ Y7, Y5, Y3")
	for k := 0; k < 4; k++ {
		g.i("VPSRLD $4, Y%d, Y%d", k, 4+k)
		g.i("VPAND Y15, Y%d, Y%d", k, k)
		g.i("VPAND Y15, Y%d, Y%d", 4+k, 4+k)
	}
	if t.table {
		for k := 0; k < 8; k++ {
			g.i("VPSHUFB Y%d, Y13, Y%d", k, k)
		}
	}
	if t.qh >= 0 {
		for h, X := range []string{"X8", "X9"} {
			g.i("VMOVD %s, %s", at(t.qh, 4*h), X)
			for j := 1; j < 4; j++ {
				g.i("VPINSRD $%d, %s, %s, %s", j, at(t.qh, 4*h+j), X, X)
			}
		}
		g.i("VINSERTI128 $1, X9, Y8, Y8 // the fifth bits of the 8 rows")
		for k := 0; k < 8; k++ {
			bits := "Y13"
			if k%2 == 1 {
				bits = "Y12"
			}
			if k%2 == 0 {
				g.i("VPSHUFB legG2Byte%d<>(SB), Y8, Y10", k/2)
			}
			g.i("VPAND %s, Y10, Y11", bits)
			g.i("VPCMPEQB %s, Y11, Y11", bits)
			g.i("VPAND Y14, Y11, Y11")
			g.i("VPOR Y11, Y%d, Y%d", k, k)
		}
	}
	for h, X := range []string{"X10", "X11"} {
		g.i("VMOVD %s, %s", at(0, 4*h), X)
		for j := 1; j < 4; j++ {
			g.i("VPINSRD $%d, %s, %s, %s", j, at(0, 4*h+j), X, X)
		}
	}
	g.i("VINSERTI128 $1, X11, Y10, Y10")
	if t.e8m0 {
		g.i("VPAND legG2FF<>(SB), Y10, Y10 // the 8 rows' E8M0 bytes")
		g.e8m0("legG2", "Y10", "Y11", "Y12")
		g.i("VMOVDQU Y10, %d(DI)", pl*8/10)
	} else {
		g.i("VPSHUFB legG2DM<>(SB), Y10, Y10")
		g.i("VPERMQ $0xd8, Y10, Y10 // d0..d7, m0..m7")
		g.i("VCVTPH2PS X10, Y11")
		g.i("VMOVUPS Y11, %d(DI)", pl*8/10)
	}
	if t.hasM {
		g.i("VEXTRACTI128 $1, Y10, X10")
		g.i("VCVTPH2PS X10, Y10")
		g.i("VMOVUPS Y10, %d(DI)", pl*9/10)
	}
	for k := 0; k < 8; k++ {
		g.i("VMOVDQU Y%d, %d(DI)", k, 32*k)
	}
	g.i("ADDQ $%d, SI", t.wb)
	g.i("ADDQ $%d, BX", t.wb)
	g.i("ADDQ $%d, DI", pl)
	g.i("DECQ CX")
	g.i("JNZ %sloop", lname)
	g.i("VZEROUPPER")
	g.i("RET")
}

// gemmKernel2 emits legGemm<T>AVX2x<T>(panel []byte, nb int, a []byte,
// astride int, scales []byte, out *float32, ostride int): 8 packed rows
// times T tokens.
func (g *gen) gemmKernel2(t qtype, T int) {
	name := fmt.Sprintf("legGemm%sAVX2x%d", t.name, T)
	tok := []string{"DI", "R8", "R9", "R10"}
	const pl = panelLen / 2
	acc16 := func(k int) string { return fmt.Sprintf("Y%d", k) }
	acc32 := func(k int) string { return fmt.Sprintf("Y%d", 4+k) }
	res := func(k int) string { return fmt.Sprintf("Y%d", 8+k) }
	g.p("")
	g.p("// func %s(panel []byte, nb int, a []byte, astride int, scales []byte, out *float32, ostride int)", name)
	g.p("//")
	g.p("// 8 packed %s rows times %d activation rows (astride bytes apart; their", strings.ToLower(t.name), T)
	g.p("// scales from legPrep): the 8 results of token t go to out + t·ostride")
	g.p("// bytes. VPMADDUBSW meets four quants of each row with four activation")
	g.p("// bytes broadcast; four such products add up in 16-bit lanes (at most")
	g.p("// 4·2·31·128) before VPMADDWD widens them, and each block's sum lands in")
	g.p("// one lane per row, scaled and added there as the Go twin does.")
	g.p("TEXT ·%s(SB), NOSPLIT, $0-104", name)
	g.i("MOVQ panel_base+0(FP), SI")
	g.i("MOVQ nb+24(FP), CX")
	g.i("MOVQ a_base+32(FP), DI")
	g.i("MOVQ astride+56(FP), R13")
	g.i("MOVQ scales_base+64(FP), AX")
	if T >= 2 {
		g.i("LEAQ (DI)(R13*1), R8")
	}
	if T >= 4 {
		g.i("LEAQ (DI)(R13*2), R9")
		g.i("LEAQ (R8)(R13*2), R10")
	}
	g.i("VMOVDQU legG2Ones<>(SB), Y15")
	for k := 0; k < T; k++ {
		g.i("VXORPS %s, %s, %s", res(k), res(k), res(k))
	}
	loop := name + "loop"
	g.p("%s:", loop)
	for h := 0; h < 2; h++ {
		for q := 4 * h; q < 4*h+4; q++ {
			g.i("VMOVDQU %d(SI), Y12", 32*q)
			for k := 0; k < T; k++ {
				g.i("VPBROADCASTD %d(%s), Y13", t.aq+4*q, tok[k])
				if q == 4*h {
					g.i("VPMADDUBSW Y13, Y12, %s", acc16(k))
				} else {
					g.i("VPMADDUBSW Y13, Y12, Y13")
					g.i("VPADDW Y13, %s, %s", acc16(k), acc16(k))
				}
			}
		}
		for k := 0; k < T; k++ {
			if h == 0 {
				g.i("VPMADDWD Y15, %s, %s", acc16(k), acc32(k))
			} else {
				g.i("VPMADDWD Y15, %s, %s", acc16(k), acc16(k))
				g.i("VPADDD %s, %s, %s", acc16(k), acc32(k), acc32(k))
			}
		}
	}
	g.i("VMOVUPS %d(SI), Y12 // d", pl*8/10)
	if t.hasM {
		g.i("VMOVUPS %d(SI), Y14 // m", pl*9/10)
	}
	for k := 0; k < T; k++ {
		if t.signed {
			g.i("VPBROADCASTD %d(AX), Y13", 32+4*k)
			g.i("VPADDD Y13, %s, %s // -offset·Σy", acc32(k), acc32(k))
		}
		g.i("VCVTDQ2PS %s, %s", acc32(k), acc32(k))
		g.i("VBROADCASTSS %d(AX), Y13", 4*k)
		g.i("VMULPS Y13, Y12, Y13")
		g.i("VMULPS Y13, %s, %s // d_w·d_a·s", acc32(k), acc32(k))
		if t.hasM {
			g.i("VBROADCASTSS %d(AX), Y13", 32+4*k)
			g.i("VMULPS Y13, Y14, Y13")
			g.i("VADDPS Y13, %s, %s // + m·s_a", acc32(k), acc32(k))
		}
		g.i("VADDPS %s, %s, %s", acc32(k), res(k), res(k))
	}
	g.i("ADDQ $%d, SI", pl)
	g.i("ADDQ $%d, AX", scaleLen)
	for k := 0; k < T; k++ {
		g.i("ADDQ $%d, %s", t.ab, tok[k])
	}
	g.i("DECQ CX")
	g.i("JNZ %s", loop)
	g.i("MOVQ out+88(FP), AX")
	g.i("MOVQ ostride+96(FP), R13")
	for k := 0; k < T; k++ {
		g.i("VMOVUPS %s, (AX)", res(k))
		if k < T-1 {
			g.i("ADDQ R13, AX")
		}
	}
	g.i("VZEROUPPER")
	g.i("RET")
}
