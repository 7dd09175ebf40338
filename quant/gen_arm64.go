//go:build ignore

// gen_arm64 writes dot_x4_arm64.s, the arm64 kernels for batches of tokens
// (MatMul): one weight row times four activation rows (NEON and dotprod),
// and two weight rows times four activation rows (SMMLA, i8mm):
//
//	cd quant && go run gen_arm64.go && go run armwords.go dot_x4_arm64.s
//
// The kernels are unrolled over the four tokens, and the instructions the Go
// assembler lacks (SDOT, SMMLA, SMULL, MLA by element, ...) name different
// registers for each token; WORD encodings cannot take macro arguments, so a
// generator writes them out. Each WORD carries its instruction in GNU syntax,
// which armwords.go checks against binutils.
package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"strings"
)

type gen struct{ b bytes.Buffer }

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.b, "\t"+format+"\n", args...) }

func (g *gen) label(l string) { fmt.Fprintf(&g.b, "%s:\n", l) }

func (g *gen) word(w uint32, format string, args ...any) {
	fmt.Fprintf(&g.b, "\tWORD $0x%08x // %s\n", w, fmt.Sprintf(format, args...))
}

// simd lists the Advanced SIMD instructions the kernels spell as WORDs:
// the encoding with all register fields zero (Arm ARM, C7.2) and the GNU
// syntax with a %d per register (and lane index).
var simd = map[string]struct {
	base   uint32
	syntax string
}{
	"sdot":      {0x4e809400, "sdot v%d.4s, v%d.16b, v%d.16b"},
	"smmla":     {0x4e80a400, "smmla v%d.4s, v%d.16b, v%d.16b"},
	"smull.8h":  {0x0e20c000, "smull v%d.8h, v%d.8b, v%d.8b"},
	"smull2.8h": {0x4e20c000, "smull2 v%d.8h, v%d.16b, v%d.16b"},
	"smlal.8h":  {0x0e208000, "smlal v%d.8h, v%d.8b, v%d.8b"},
	"smlal2.8h": {0x4e208000, "smlal2 v%d.8h, v%d.16b, v%d.16b"},
	"smull.4s":  {0x0e60c000, "smull v%d.4s, v%d.4h, v%d.4h"},
	"smlal.4s":  {0x0e608000, "smlal v%d.4s, v%d.4h, v%d.4h"},
	"smlal2.4s": {0x4e608000, "smlal2 v%d.4s, v%d.8h, v%d.8h"},
	"sxtl.8h":   {0x0f08a400, "sxtl v%d.8h, v%d.8b"},
	"sxtl2.8h":  {0x4f08a400, "sxtl2 v%d.8h, v%d.16b"},
	"sxtl.4s":   {0x0f10a400, "sxtl v%d.4s, v%d.4h"},
	"sxtl2.4s":  {0x4f10a400, "sxtl2 v%d.4s, v%d.8h"},
	"saddlp":    {0x4e602800, "saddlp v%d.4s, v%d.8h"},
	"sadalp":    {0x4e606800, "sadalp v%d.4s, v%d.8h"},
	"mla.s":     {0x6f800000, "mla v%d.4s, v%d.4s, v%d.s[%d]"},
	"fmul.s":    {0x4f809000, "fmul v%d.4s, v%d.4s, v%d.s[%d]"},
	"fmul":      {0x6e20dc00, "fmul v%d.4s, v%d.4s, v%d.4s"},
	"fadd":      {0x4e20d400, "fadd v%d.4s, v%d.4s, v%d.4s"},
	"fsub":      {0x4ea0d400, "fsub v%d.4s, v%d.4s, v%d.4s"},
	"scvtf":     {0x4e21d800, "scvtf v%d.4s, v%d.4s"},
	"fcvtl":     {0x0e217800, "fcvtl v%d.4s, v%d.4h"},
}

// v writes instruction op of the simd table with registers d, n (and m, and
// for the by-element forms the lane index) as a WORD.
func (g *gen) v(op string, regs ...int) {
	in, ok := simd[op]
	if !ok || strings.Count(in.syntax, "%d") != len(regs) {
		log.Fatalf("gen_arm64: %s with %d operands", op, len(regs))
	}
	w := in.base | uint32(regs[0]) | uint32(regs[1])<<5
	if len(regs) > 2 {
		w |= uint32(regs[2]) << 16
	}
	if len(regs) > 3 { // lane index: H in bit 11, L in bit 21
		w |= uint32(regs[3]&1)<<21 | uint32(regs[3]>>1)<<11
	}
	args := make([]any, len(regs))
	for i, r := range regs {
		args[i] = r
	}
	g.word(w, in.syntax, args...)
}

// The four tokens' activation pointers, each at its current block.
var tokReg = []string{"R1", "R7", "R8", "R9"}

// prologue loads the x4 arguments: R0 the weights, R1/R7/R8/R9 the four
// activation rows, R2 the block count, R4 out and R5 ostride; V30 (the four
// float sums) is cleared.
func (g *gen) prologue(name, doc string) {
	fmt.Fprintf(&g.b, "\n// func %s(w, a []byte, astride, nb int, out *float32, ostride int)\n//\n%s", name, doc)
	fmt.Fprintf(&g.b, "TEXT ·%s(SB), NOSPLIT, $0-80\n", name)
	g.p("MOVD w_base+0(FP), R0")
	g.p("MOVD a_base+24(FP), R1")
	g.p("MOVD astride+48(FP), R6")
	g.p("MOVD nb+56(FP), R2")
	g.p("MOVD out+64(FP), R4")
	g.p("MOVD ostride+72(FP), R5")
	g.p("ADD R6, R1, R7")
	g.p("ADD R6, R7, R8")
	g.p("ADD R6, R8, R9")
	g.p("VEOR V30.B16, V30.B16, V30.B16")
}

// reduce4 turns the int32x4 vectors v, v+1, v+2, v+3 (one per token) into
// one vector of their four lane sums in v.
func (g *gen) reduce4(v0, v1, v2, v3 int) {
	g.p("VADDP V%d.S4, V%d.S4, V%d.S4", v1, v0, v0)
	g.p("VADDP V%d.S4, V%d.S4, V%d.S4", v3, v2, v2)
	g.p("VADDP V%d.S4, V%d.S4, V%d.S4", v2, v0, v0)
}

// scalesDY gathers the four tokens' q8_K scales d (float32) into V16.
func (g *gen) scalesDY() {
	for t, r := range tokReg {
		g.p("MOVWU (%s), R10", r)
		g.p("VMOV R10, V16.S[%d]", t)
	}
}

// half loads the f16 at addr into Fd as a float32.
func (g *gen) half(addr string, d int) {
	g.p("MOVHU %s, R10", addr)
	g.p("FMOVS R10, F%d", d)
	g.p("FCVTHS F%d, F%d", d, d)
}

// quantConsts sets the constants loadQuants needs for q4_0: 0x0f in every
// byte of V22 and 8 in every byte of V23.
func (g *gen) quantConsts(q4 bool) {
	if q4 {
		g.p("VMOVI $15, V22.B16")
		g.p("VMOVI $8, V23.B16")
	}
}

// loadQuants loads one weight block's 32 quants from (r), advancing r, into
// Vv, Vv+1 as int8: 32 bytes of q8_0, or 16 bytes of q4_0 nibbles (element
// j the low nibble of byte j minus 8, element j+16 the high one).
func (g *gen) loadQuants(q4 bool, r string, v int) {
	if !q4 {
		g.p("VLD1.P 32(%s), [V%d.B16, V%d.B16]", r, v, v+1)
		return
	}
	g.p("VLD1.P 16(%s), [V%d.B16]", r, v)
	g.p("VUSHR $4, V%d.B16, V%d.B16", v, v+1)
	g.p("VAND V22.B16, V%d.B16, V%d.B16", v, v)
	g.p("VSUB V23.B16, V%d.B16, V%d.B16", v, v)
	g.p("VSUB V23.B16, V%d.B16, V%d.B16", v+1, v+1)
}

// loadMXFP4 loads one mxfp4 block's 16 bytes of nibbles from (r),
// advancing r, and looks them up in the table V23 (V22: 0x0f in every byte):
// Vv the values of elements 0-15, Vv+1 of 16-31, as int8.
func (g *gen) loadMXFP4(r string, v int) {
	g.p("VLD1.P 16(%s), [V%d.B16]", r, v)
	g.p("VUSHR $4, V%d.B16, V%d.B16", v, v+1)
	g.p("VAND V22.B16, V%d.B16, V%d.B16", v, v)
	g.p("VTBL V%d.B16, [V23.B16], V%d.B16", v, v)
	g.p("VTBL V%d.B16, [V23.B16], V%d.B16", v+1, v+1)
}

// e8m0 turns the E8M0 byte in register e into its halved scale 2^(e-128)
// in Fd, as e8m0Half does: exponent field e-1, or for e < 2 the subnormal
// 0x200000 << e. t1 and t2 are clobbered.
func (g *gen) e8m0(e, t1, t2 string, d int) {
	g.p("SUBW $1, %s, %s", e, t1)
	g.p("LSLW $23, %s, %s // (e-1) << 23", t1, t1)
	g.p("MOVW $0x200000, %s", t2)
	g.p("LSLW %s, %s, %s // 0x200000 << e", e, t2, t2)
	g.p("CMPW $2, %s", e)
	g.p("CSELW LO, %s, %s, %s", t2, t1, t1)
	g.p("FMOVS %s, F%d", t1, d)
}

// epilogue stores the four sums of V30 ostride bytes apart.
func (g *gen) epilogue() {
	for t := 0; t < 4; t++ {
		g.p("VMOV V30.S[%d], R10", t)
		g.p("MOVW R10, (R4)")
		if t < 3 {
			g.p("ADD R5, R4")
		}
	}
	g.p("RET")
}

// q8_0x4 writes the q8_0 kernel: per block, the 32 weight quants (V0, V1)
// meet each token's 32 (V2, V3) into int32x4 sums V24..V27, which reduce to
// one vector of the four tokens' block sums; the four d_w·d_a form one
// vector too, and V30 += (d_w·d_a)·s, the product rounded before the add
// (FMUL, FADD), as the Go twin's addBlock computes it.
//
// With wt "q4_0" it writes the q4_0 kernel: the same, with each block's 16
// bytes of nibbles unpacked to 32 int8 quants first (loadQuants); with
// "mxfp4" the mxfp4 kernel: the nibbles looked up in the E2M1 table
// (loadMXFP4) and the E8M0 scale byte turned into 2^(e-128) (e8m0).
func (g *gen) q8_0x4(name string, dotprod bool, wt string) {
	ref := map[string][2]string{ // the twin and the mv kernel
		"q8_0":  {"dotQ8_0", "mvQ8_0NEON"},
		"q4_0":  {"dotQ4_0", "mvQ4_0NEON"},
		"mxfp4": {"dotMXFP4", "mvMXFP4NEON"},
	}[wt]
	twin, mv := ref[0], ref[1]
	q4, mx := wt == "q4_0", wt == "mxfp4"
	g.prologue(name, fmt.Sprintf("// One %s weight row of nb blocks times four q8_0 activation rows (astride\n// bytes apart) into four floats ostride bytes apart from out:\n// out[t] = %s(w, a[t*astride:]), as %s computes it for one.\n", wt, twin, mv))
	if mx {
		g.p("VMOVI $15, V22.B16")
		g.p("MOVD $mxfp4Values4<>(SB), R10")
		g.p("VLD1 (R10), [V23.B16] // the E2M1 values, doubled")
	}
	g.quantConsts(q4)
	g.label("blk")
	if mx {
		g.p("MOVBU.P 1(R0), R10")
		g.e8m0("R10", "R11", "R12", 20)
		g.loadMXFP4("R0", 0)
	} else {
		g.p("MOVHU.P 2(R0), R10")
		g.p("FMOVS R10, F20")
		g.p("FCVTHS F20, F20")
		g.loadQuants(q4, "R0", 0)
	}
	for t, r := range tokReg {
		acc := 24 + t
		g.p("MOVHU.P 2(%s), R10", r)
		g.p("VMOV R10, V16.H[%d]", t)
		g.p("VLD1.P 32(%s), [V2.B16, V3.B16]", r)
		if dotprod {
			g.p("VEOR V%d.B16, V%d.B16, V%d.B16", acc, acc, acc)
			g.v("sdot", acc, 0, 2)
			g.v("sdot", acc, 1, 3)
			continue
		}
		g.v("smull.8h", 17, 0, 2)
		g.v("smull2.8h", 18, 0, 2)
		g.v("smull.8h", 19, 1, 3)
		g.v("smull2.8h", 29, 1, 3)
		g.v("saddlp", acc, 17)
		g.v("sadalp", acc, 18)
		g.v("sadalp", acc, 19)
		g.v("sadalp", acc, 29)
	}
	g.reduce4(24, 25, 26, 27)
	g.v("scvtf", 24, 24)
	g.v("fcvtl", 16, 16)
	g.v("fmul.s", 17, 16, 20, 0)
	g.v("fmul", 17, 17, 24)
	g.v("fadd", 30, 30, 17)
	g.p("SUBS $1, R2")
	g.p("BNE blk")
	g.epilogue()
}

// q4Kx4 writes the q4_K kernel (q5 true: q5_K, the fifth bit from qh). Per
// block the scales and mins are unpacked once (V21, V22: sc as int32; V23:
// mins as int16) and each token's Σ m·bsums forms in V24..V27; each
// 32-byte chunk of nibbles is split once (V12..V15) and meets the four
// tokens' activations (V8..V11), whose sub-block sums are scaled into the
// int32 accumulators V2, V3, V6, V7. At the end of the block the four
// tokens' isum and msum reduce to one vector each, and
// V30 += (d·dy)·isum - (dmin·dy)·msum, each product rounded before the
// subtraction, as the Go twin computes it.
func (g *gen) q4Kx4(name string, dotprod, q5 bool) {
	blockBytes, qs, twin, mv := 144, 16, "dotQ4_K", "mvQ4KNEON"
	if q5 {
		blockBytes, qs, twin, mv = 176, 48, "dotQ5_K", "mvQ5KNEON"
	}
	t := "q4_K"
	if q5 {
		t = "q5_K"
	}
	g.prologue(name, fmt.Sprintf("// One %s weight row of nb blocks times four q8_K activation rows (astride\n// bytes apart) into four floats ostride bytes apart from out:\n// out[t] = %s(w, a[t*astride:]), as %s computes it for one.\n", t, twin, mv))
	acc := []int{2, 3, 6, 7}
	yReg := []string{"R19", "R20", "R21", "R22"}
	g.p("VMOVI $15, V31.B16")
	if q5 {
		g.p("VMOVI $16, V28.B16")
	}
	g.label("blk")
	for _, l := range []string{
		"MOVWU 4(R0), R10", "MOVWU 8(R0), R11", "MOVWU 12(R0), R12",
		"LSRW $6, R10, R13", "ANDW $0x03030303, R13", "ANDW $0x0f0f0f0f, R12, R14", "ORRW R13<<4, R14, R14",
		"LSRW $6, R11, R13", "ANDW $0x03030303, R13", "LSRW $4, R12, R15", "ANDW $0x0f0f0f0f, R15", "ORRW R13<<4, R15, R15",
		"ANDW $0x3f3f3f3f, R10", "ANDW $0x3f3f3f3f, R11",
		"VMOV R10, V20.S[0]", "VMOV R14, V20.S[1]", "VMOV R11, V23.S[0]", "VMOV R15, V23.S[1]",
		"VUXTL V20.B8, V20.H8", "VUXTL V20.H4, V21.S4", "VUXTL2 V20.H8, V22.S4", "VUXTL V23.B8, V23.H8",
	} {
		g.p("%s", l)
	}
	for t, r := range tokReg {
		g.p("ADD $260, %s, R15", r)
		g.p("VLD1 (R15), [V16.H8, V17.H8]")
		g.p("VADDP V17.H8, V16.H8, V16.H8")
		g.v("smull.4s", 24+t, 16, 23)
		g.v("smlal2.4s", 24+t, 16, 23)
		g.p("ADD $4, %s, %s", r, yReg[t])
		g.p("VEOR V%d.B16, V%d.B16, V%d.B16", acc[t], acc[t], acc[t])
	}
	if q5 {
		g.p("ADD $16, R0, R15")
		g.p("VLD1 (R15), [V4.B16, V5.B16]")
	}
	g.p("ADD $%d, R0, R15", qs)
	for c := 0; c < 4; c++ {
		g.p("VLD1.P 32(R15), [V0.B16, V1.B16]")
		g.p("VAND V31.B16, V0.B16, V12.B16")
		g.p("VAND V31.B16, V1.B16, V13.B16")
		g.p("VUSHR $4, V0.B16, V14.B16")
		g.p("VUSHR $4, V1.B16, V15.B16")
		if q5 {
			// Bit 0 of qh to bit 4 of the low-nibble quants, bit 1 to
			// the high-nibble ones; then qh >>= 2 for the next chunk.
			for _, l := range []string{
				"VSHL $4, V4.B16, V19.B16", "VSHL $4, V5.B16, V29.B16",
				"VBIT V28.B16, V19.B16, V12.B16", "VBIT V28.B16, V29.B16, V13.B16",
				"VSHL $3, V4.B16, V19.B16", "VSHL $3, V5.B16, V29.B16",
				"VBIT V28.B16, V19.B16, V14.B16", "VBIT V28.B16, V29.B16, V15.B16",
				"VUSHR $2, V4.B16, V4.B16", "VUSHR $2, V5.B16, V5.B16",
			} {
				g.p("%s", l)
			}
		}
		scv := 21 + c/2 // sub-blocks 2c, 2c+1: lanes 2(c%2), 2(c%2)+1
		for t := range tokReg {
			g.p("VLD1.P 64(%s), [V8.B16, V9.B16, V10.B16, V11.B16]", yReg[t])
			if dotprod {
				g.p("VEOR V17.B16, V17.B16, V17.B16")
				g.p("VEOR V18.B16, V18.B16, V18.B16")
				g.v("sdot", 17, 12, 8)
				g.v("sdot", 17, 13, 9)
				g.v("sdot", 18, 14, 10)
				g.v("sdot", 18, 15, 11)
			} else {
				g.v("smull.8h", 17, 12, 8)
				g.v("smlal2.8h", 17, 12, 8)
				g.v("smlal.8h", 17, 13, 9)
				g.v("smlal2.8h", 17, 13, 9)
				g.v("smull.8h", 18, 14, 10)
				g.v("smlal2.8h", 18, 14, 10)
				g.v("smlal.8h", 18, 15, 11)
				g.v("smlal2.8h", 18, 15, 11)
				g.v("saddlp", 17, 17)
				g.v("saddlp", 18, 18)
			}
			g.v("mla.s", acc[t], 17, scv, 2*(c%2))
			g.v("mla.s", acc[t], 18, scv, 2*(c%2)+1)
		}
	}
	g.reduce4(2, 3, 6, 7)
	g.reduce4(24, 25, 26, 27)
	g.v("scvtf", 2, 2)
	g.v("scvtf", 24, 24)
	g.scalesDY()
	g.half("(R0)", 20)
	g.half("2(R0)", 29)
	g.v("fmul.s", 17, 16, 20, 0) // d·dy
	g.v("fmul.s", 18, 16, 29, 0) // dmin·dy
	g.v("fmul", 17, 17, 2)       // ·isum
	g.v("fmul", 18, 18, 24)      // ·msum
	g.v("fsub", 17, 17, 18)      // the two products, each rounded
	g.v("fadd", 30, 30, 17)
	g.p("ADD $%d, R0", blockBytes)
	for _, r := range tokReg {
		g.p("ADD $292, %s", r)
	}
	g.p("SUBS $1, R2")
	g.p("BNE blk")
	g.epilogue()
}

// q6Kx4 writes the q6_K kernel. Per block the 16 scales widen to int32
// (V20..V23) and each token's accumulator (V6, V7, V24, V25) starts at
// -32·Σ sc_g·bsums[g], so the 6-bit values multiply unsigned (q - 32 is the
// quant); each half's ql (V0..V3) and qh (V4, V5) unpack once per quarter
// pair into V12..V15 and meet the four tokens' activations (V8..V11). At
// the end V30 += (d·dy)·isum, the product rounded before the add, as the Go
// twin computes it.
func (g *gen) q6Kx4(name string, dotprod bool) {
	g.prologue(name, "// One q6_K weight row of nb blocks times four q8_K activation rows (astride\n// bytes apart) into four floats ostride bytes apart from out:\n// out[t] = dotQ6_K(w, a[t*astride:]), as mvQ6KNEON computes it for one.\n")
	acc := []int{6, 7, 24, 25}
	yReg := []string{"R19", "R20", "R21", "R22"}
	g.p("VMOVI $15, V31.B16")
	g.p("VMOVI $48, V28.B16")
	g.p("VEOR V27.B16, V27.B16, V27.B16")
	g.label("blk")
	g.p("ADD $192, R0, R15")
	g.p("VLD1 (R15), [V17.B16]")
	g.v("sxtl.8h", 18, 17)
	g.v("sxtl2.8h", 19, 17)
	g.v("sxtl.4s", 20, 18)
	g.v("sxtl2.4s", 21, 18)
	g.v("sxtl.4s", 22, 19)
	g.v("sxtl2.4s", 23, 19)
	for t, r := range tokReg {
		a := acc[t]
		g.p("ADD $260, %s, R15", r)
		g.p("VLD1 (R15), [V16.H8, V17.H8]")
		g.v("smull.4s", a, 16, 18)
		g.v("smlal2.4s", a, 16, 18)
		g.v("smlal.4s", a, 17, 19)
		g.v("smlal2.4s", a, 17, 19)
		g.p("VSHL $5, V%d.S4, V%d.S4", a, a)
		g.p("VSUB V%d.S4, V27.S4, V%d.S4", a, a)
		g.p("ADD $4, %s, %s", r, yReg[t])
	}
	g.p("MOVD R0, R15")
	g.p("ADD $128, R0, R23")
	for h := 0; h < 2; h++ {
		g.p("VLD1.P 64(R15), [V0.B16, V1.B16, V2.B16, V3.B16]")
		g.p("VLD1.P 32(R23), [V4.B16, V5.B16]")
		for hi := 0; hi < 2; hi++ {
			var unpack []string
			if hi == 0 {
				// Quarters 0, 1: low nibbles, qh bits 0-1 and 2-3 to bits 4-5.
				unpack = []string{
					"VAND V31.B16, V0.B16, V12.B16", "VAND V31.B16, V1.B16, V13.B16",
					"VAND V31.B16, V2.B16, V14.B16", "VAND V31.B16, V3.B16, V15.B16",
					"VSHL $4, V4.B16, V19.B16", "VSHL $4, V5.B16, V29.B16",
					"VBIT V28.B16, V19.B16, V12.B16", "VBIT V28.B16, V29.B16, V13.B16",
					"VSHL $2, V4.B16, V19.B16", "VSHL $2, V5.B16, V29.B16",
					"VBIT V28.B16, V19.B16, V14.B16", "VBIT V28.B16, V29.B16, V15.B16",
				}
			} else {
				// Quarters 2, 3: high nibbles, qh bits 4-5 and 6-7.
				unpack = []string{
					"VUSHR $4, V0.B16, V12.B16", "VUSHR $4, V1.B16, V13.B16",
					"VUSHR $4, V2.B16, V14.B16", "VUSHR $4, V3.B16, V15.B16",
					"VBIT V28.B16, V4.B16, V12.B16", "VBIT V28.B16, V5.B16, V13.B16",
					"VUSHR $2, V4.B16, V19.B16", "VUSHR $2, V5.B16, V29.B16",
					"VBIT V28.B16, V19.B16, V14.B16", "VBIT V28.B16, V29.B16, V15.B16",
				}
			}
			for _, l := range unpack {
				g.p("%s", l)
			}
			g0 := 8*h + 4*hi // first group of 16
			outs := []int{16, 17, 18, 26}
			for t := range tokReg {
				g.p("VLD1.P 64(%s), [V8.B16, V9.B16, V10.B16, V11.B16]", yReg[t])
				for k, o := range outs {
					if dotprod {
						g.p("VEOR V%d.B16, V%d.B16, V%d.B16", o, o, o)
						g.v("sdot", o, 12+k, 8+k)
						continue
					}
					g.v("smull.8h", o, 12+k, 8+k)
					g.v("smlal2.8h", o, 12+k, 8+k)
					g.v("saddlp", o, o)
				}
				for k, o := range outs {
					gr := g0 + k
					g.v("mla.s", acc[t], o, 20+gr/4, gr%4)
				}
			}
		}
	}
	g.reduce4(6, 7, 24, 25)
	g.v("scvtf", 6, 6)
	g.scalesDY()
	g.half("208(R0)", 20)
	g.v("fmul.s", 17, 16, 20, 0) // d·dy
	g.v("fmul", 17, 17, 6)       // ·isum
	g.v("fadd", 30, 30, 17)
	g.p("ADD $210, R0")
	for _, r := range tokReg {
		g.p("ADD $292, %s", r)
	}
	g.p("SUBS $1, R2")
	g.p("BNE blk")
	g.epilogue()
}

// q8_0i8mm writes the q8_0 kernel of two weight rows by four tokens with
// SMMLA, which multiplies a 2×8 int8 matrix by the transpose of another into
// a 2×2 int32 one: the rows' quants are zipped 8 bytes at a time into
// V4..V7 (row 0 in the low half), two tokens' likewise, and four SMMLAs
// give one block's sums of (row, token) in lanes [r0t0 r0t1 r1t0 r1t1] (V24
// for tokens 0, 1; V25 for 2, 3). The scales d_w·d_a form vectors of the
// same layout, and V30, V31 += (d_w·d_a)·s, each product rounded before
// the add (FMUL, FADD), as the Go twin's addBlock computes it.
//
// With q4 true it writes the q4_0 kernel (loadQuants unpacks the nibbles).
func (g *gen) q8_0i8mm(name string, q4 bool) {
	wt, twin, mv := "q8_0", "dotQ8_0", "mvQ8_0NEON"
	if q4 {
		wt, twin, mv = "q4_0", "dotQ4_0", "mvQ4_0NEON"
	}
	fmt.Fprintf(&g.b, "\n// func %s(w []byte, wstride int, a []byte, astride, nb int, out *float32, ostride int)\n//\n", name)
	fmt.Fprintf(&g.b, "// Two %s weight rows of nb blocks (wstride bytes apart) times four q8_0\n// activation rows (astride bytes apart): out[t*ostride/4+r] =\n// %s(w[r*wstride:], a[t*astride:]) for r < 2, t < 4, as %s\n// computes each.\n", wt, twin, mv)
	fmt.Fprintf(&g.b, "TEXT ·%s(SB), NOSPLIT, $0-88\n", name)
	g.p("MOVD w_base+0(FP), R0")
	g.p("MOVD wstride+24(FP), R3")
	g.p("ADD R0, R3")
	g.p("MOVD a_base+32(FP), R1")
	g.p("MOVD astride+56(FP), R6")
	g.p("MOVD nb+64(FP), R2")
	g.p("MOVD out+72(FP), R4")
	g.p("MOVD ostride+80(FP), R5")
	g.p("ADD R6, R1, R7")
	g.p("ADD R6, R7, R8")
	g.p("ADD R6, R8, R9")
	g.p("VEOR V30.B16, V30.B16, V30.B16")
	g.p("VEOR V31.B16, V31.B16, V31.B16")
	g.quantConsts(q4)
	g.label("blk")
	g.p("MOVHU.P 2(R0), R10")
	g.p("VMOV R10, V16.H[0]")
	g.p("MOVHU.P 2(R3), R10")
	g.p("VMOV R10, V16.H[1]")
	g.loadQuants(q4, "R0", 0)
	g.loadQuants(q4, "R3", 2)
	g.p("VZIP1 V2.D2, V0.D2, V4.D2")
	g.p("VZIP2 V2.D2, V0.D2, V5.D2")
	g.p("VZIP1 V3.D2, V1.D2, V6.D2")
	g.p("VZIP2 V3.D2, V1.D2, V7.D2")
	for t, r := range tokReg {
		g.p("MOVHU.P 2(%s), R10", r)
		g.p("VMOV R10, V17.H[%d]", t)
		g.p("VLD1.P 32(%s), [V%d.B16, V%d.B16]", r, 8+2*t, 9+2*t)
	}
	for pair, acc := range []int{24, 25} {
		a, b := 8+4*pair, 10+4*pair // the pair's two tokens: quants 0-15 in a, b; 16-31 in a+1, b+1
		g.p("VZIP1 V%d.D2, V%d.D2, V18.D2", b, a)
		g.p("VZIP2 V%d.D2, V%d.D2, V19.D2", b, a)
		g.p("VZIP1 V%d.D2, V%d.D2, V20.D2", b+1, a+1)
		g.p("VZIP2 V%d.D2, V%d.D2, V21.D2", b+1, a+1)
		g.p("VEOR V%d.B16, V%d.B16, V%d.B16", acc, acc, acc)
		for k := 0; k < 4; k++ {
			g.v("smmla", acc, 4+k, 18+k)
		}
	}
	g.v("fcvtl", 16, 16)
	g.p("VZIP1 V16.S4, V16.S4, V26.S4") // [dw0 dw0 dw1 dw1]
	g.v("fcvtl", 17, 17)
	g.p("VZIP1 V17.D2, V17.D2, V27.D2") // [dy0 dy1 dy0 dy1]
	g.p("VZIP2 V17.D2, V17.D2, V28.D2") // [dy2 dy3 dy2 dy3]
	g.v("fmul", 27, 26, 27)
	g.v("fmul", 28, 26, 28)
	g.v("scvtf", 24, 24)
	g.v("scvtf", 25, 25)
	g.v("fmul", 27, 27, 24)
	g.v("fmul", 28, 28, 25)
	g.v("fadd", 30, 30, 27)
	g.v("fadd", 31, 31, 28)
	g.p("SUBS $1, R2")
	g.p("BNE blk")
	// [r0t0 r1t0 r0t2 r1t2] and [r0t1 r1t1 r0t3 r1t3]: each token's two
	// rows are one 64-bit store.
	g.p("VUZP1 V31.S4, V30.S4, V0.S4")
	g.p("VUZP2 V31.S4, V30.S4, V1.S4")
	for t := 0; t < 4; t++ {
		g.p("VMOV V%d.D[%d], R10", t%2, t/2)
		g.p("MOVD R10, (R4)")
		if t < 3 {
			g.p("ADD R5, R4")
		}
	}
	g.p("RET")
}

func main() {
	var g gen
	g.b.WriteString(`// Code generated by gen_arm64.go; DO NOT EDIT.

//go:build gc && !purego

#include "textflag.h"

// One weight row times four activation rows, for MatMul (matMulBy4 in
// dot_asm.go): each weight block is loaded and unpacked once and meets four
// tokens. NEON variants form the integer sums with SMULL/SMLAL and
// SADDLP/SADALP, DotProd ones with SDOT; and two rows times four tokens
// with SMMLA (i8mm; matMulBy2x4 in dot_arm64.go). The float arithmetic is
// the Go twin's (see dot_neon_arm64.s), so each result is the twin's bit for
// bit.
`)
	g.q8_0x4("matQ8_0NEONx4", false, "q8_0")
	g.q8_0x4("matQ8_0DotProdx4", true, "q8_0")
	g.q8_0x4("matQ4_0NEONx4", false, "q4_0")
	g.q8_0x4("matQ4_0DotProdx4", true, "q4_0")
	g.q8_0x4("matMXFP4NEONx4", false, "mxfp4")
	g.q8_0x4("matMXFP4DotProdx4", true, "mxfp4")
	g.q4Kx4("matQ4KNEONx4", false, false)
	g.q4Kx4("matQ4KDotProdx4", true, false)
	g.q4Kx4("matQ5KNEONx4", false, true)
	g.q4Kx4("matQ5KDotProdx4", true, true)
	g.q6Kx4("matQ6KNEONx4", false)
	g.q6Kx4("matQ6KDotProdx4", true)
	g.q8_0i8mm("matQ8_0I8MM2x4", false)
	g.q8_0i8mm("matQ4_0I8MM2x4", true)
	g.b.WriteString("\n// mxfp4Values4: ggml's kvalues_mxfp4, the E2M1 values doubled.\n")
	g.b.WriteString("DATA mxfp4Values4<>+0x00(SB)/8, $0x0c08060403020100\n")
	g.b.WriteString("DATA mxfp4Values4<>+0x08(SB)/8, $0xf4f8fafcfdfeff00\n")
	g.b.WriteString("GLOBL mxfp4Values4<>(SB), RODATA|NOPTR, $16\n")
	if err := os.WriteFile("dot_x4_arm64.s", g.b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
