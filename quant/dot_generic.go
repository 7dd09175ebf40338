package quant

import (
	"encoding/binary"
	"math"

	"github.com/smolgo/smolgo/gguf"
)

// The pure Go kernels: the reference every assembly kernel is tested against,
// and the fallback on CPUs (and builds, tag purego) without one. Each follows
// ggml's generic C loop: an exact integer sum per block (or per sub-block,
// times its integer scale), scaled by d_weight·d_activation in float32 and
// accumulated in float32.
//
// The float steps of the quantized kernels are pinned with explicit
// conversions (dotQ8_0, dotQ4_0 and dotMXFP4 through addBlock), which forbid
// the compiler to fuse a multiply and an add: GOAMD64=v3 and arm64 builds
// would otherwise round once instead of twice, and a Q8_0 model's logits
// would then depend on the architecture. Each product is rounded, then
// added; the amd64 and arm64 assembly kernels give these bits
// (dot_legacy_amd64.go, dot_neon_arm64.s, gen_arm64.go). The float kernels
// (dotF32, dotF16, dotBF16) are left free: their assembly sums in lanes, in
// another order, whatever the twin does.

// genericDots maps each weight type to its pure Go kernel. Read-only.
var genericDots = map[gguf.Type]DotFunc{
	gguf.TypeF32:    dotF32,
	gguf.TypeF16:    dotF16,
	gguf.TypeBF16:   dotBF16,
	gguf.TypeQ8_0:   dotQ8_0,
	gguf.TypeQ4_0:   dotQ4_0,
	gguf.TypeQ4_1:   dotQ4_1,
	gguf.TypeQ5_0:   dotQ5_0,
	gguf.TypeQ5_1:   dotQ5_1,
	gguf.TypeIQ4_NL: dotIQ4NL,
	gguf.TypeMXFP4:  dotMXFP4,
	gguf.TypeQ2_K:   dotQ2_K,
	gguf.TypeQ3_K:   dotQ3_K,
	gguf.TypeQ4_K:   dotQ4_K,
	gguf.TypeQ5_K:   dotQ5_K,
	gguf.TypeQ6_K:   dotQ6_K,
}

// q8KScale reads the float32 d of a Q8_K activation block.
func q8KScale(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// q8KBsum reads bsums[j] of a Q8_K activation block (the sum of its quants
// 16j..16j+15).
func q8KBsum(b []byte, j int) int32 { return int32(int16(binary.LittleEndian.Uint16(b[260+2*j:]))) }

func dotF32(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n; i++ {
		x := math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:]))
		y := math.Float32frombits(binary.LittleEndian.Uint32(a[4*i:]))
		sum += x * y
	}
	return sum
}

// dotF16: f16 weights · f16 activations; each product is exact in float32.
func dotF16(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n; i++ {
		sum += f16(w[2*i:]) * f16(a[2*i:])
	}
	return sum
}

// dotBF16: bf16 weights · bf16 activations; each product is exact in float32.
func dotBF16(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n; i++ {
		x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*i:])) << 16)
		y := math.Float32frombits(uint32(binary.LittleEndian.Uint16(a[2*i:])) << 16)
		sum += x * y
	}
	return sum
}

// dotQ8_0: q8_0 weights (d f16 | qs [32]int8) · q8_0 activations.
func dotQ8_0(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/32; i++ {
		x, y := w[34*i:34*i+34], a[34*i:34*i+34]
		var s int32
		for j := 0; j < 32; j++ {
			s += int32(int8(x[2+j])) * int32(int8(y[2+j]))
		}
		sum = addBlock(sum, f16(x)*f16(y), float32(s))
	}
	return sum
}

// dotQ4_0: q4_0 weights (d f16 | qs [16]u8; element j is the low nibble of
// qs[j] minus 8, element j+16 the high one) · q8_0 activations.
func dotQ4_0(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/32; i++ {
		x, y := w[18*i:18*i+18], a[34*i:34*i+34]
		var s int32
		for j := 0; j < 16; j++ {
			s += (int32(x[2+j]&0xf) - 8) * int32(int8(y[2+j]))
			s += (int32(x[2+j]>>4) - 8) * int32(int8(y[18+j]))
		}
		sum = addBlock(sum, f16(x)*f16(y), float32(s))
	}
	return sum
}

// dotQ4_1: q4_1 weights (d f16 | m f16 | qs [16]u8, x = d·q + m) · q8_1
// activations (d f16 | s f16 | qs [32]int8, s = d·Σq): the offset m
// contributes m·s.
func dotQ4_1(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/32; i++ {
		x, y := w[20*i:20*i+20], a[36*i:36*i+36]
		var s int32
		for j := 0; j < 16; j++ {
			s += int32(x[4+j]&0xf) * int32(int8(y[4+j]))
			s += int32(x[4+j]>>4) * int32(int8(y[20+j]))
		}
		sum += float32(float32(f16(x)*f16(y)*float32(s)) + float32(f16(x[2:])*f16(y[2:])))
	}
	return sum
}

// dotQ5_0: q5_0 weights (d f16 | qh u32 | qs [16]u8; bit j of qh is the fifth
// bit of element j; values minus 16) · q8_0 activations.
func dotQ5_0(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/32; i++ {
		x, y := w[22*i:22*i+22], a[34*i:34*i+34]
		qh := binary.LittleEndian.Uint32(x[2:])
		var s int32
		for j := 0; j < 16; j++ {
			lo := int32(x[6+j]&0xf) | int32(qh>>j&1)<<4
			hi := int32(x[6+j]>>4) | int32(qh>>(j+16)&1)<<4
			s += (lo - 16) * int32(int8(y[2+j]))
			s += (hi - 16) * int32(int8(y[18+j]))
		}
		sum += float32(f16(x) * f16(y) * float32(s))
	}
	return sum
}

// dotQ5_1: q5_1 weights (d f16 | m f16 | qh u32 | qs [16]u8) · q8_1.
func dotQ5_1(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/32; i++ {
		x, y := w[24*i:24*i+24], a[36*i:36*i+36]
		qh := binary.LittleEndian.Uint32(x[4:])
		var s int32
		for j := 0; j < 16; j++ {
			lo := int32(x[8+j]&0xf) | int32(qh>>j&1)<<4
			hi := int32(x[8+j]>>4) | int32(qh>>(j+16)&1)<<4
			s += lo * int32(int8(y[4+j]))
			s += hi * int32(int8(y[20+j]))
		}
		sum += float32(float32(f16(x)*f16(y)*float32(s)) + float32(f16(x[2:])*f16(y[2:])))
	}
	return sum
}

// dotIQ4NL: iq4_nl weights (d f16 | qs [16]u8 of indices, laid out like
// q4_0) · q8_0 activations.
func dotIQ4NL(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/32; i++ {
		x, y := w[18*i:18*i+18], a[34*i:34*i+34]
		var s int32
		for j := 0; j < 16; j++ {
			s += int32(iq4nlValues[x[2+j]&0xf]) * int32(int8(y[2+j]))
			s += int32(iq4nlValues[x[2+j]>>4]) * int32(int8(y[18+j]))
		}
		sum += float32(f16(x) * f16(y) * float32(s))
	}
	return sum
}

// dotMXFP4: mxfp4 weights (e E8M0 | qs [16]u8 of indices into
// mxfp4Values, laid out like q4_0) · q8_0 activations, as ggml's
// ggml_vec_dot_mxfp4_q8_0: the block's scale is f16(d_a)·2^(e-128) (one
// rounded product: exact unless it leaves float32's normal range), times
// the exact integer sum, added in block order.
func dotMXFP4(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/32; i++ {
		x, y := w[17*i:17*i+17], a[34*i:34*i+34]
		var s int32
		for j := 0; j < 16; j++ {
			s += int32(mxfp4Values[x[1+j]&0xf]) * int32(int8(y[2+j]))
			s += int32(mxfp4Values[x[1+j]>>4]) * int32(int8(y[18+j]))
		}
		sum = addBlock(sum, f16(y)*e8m0Half(x[0]), float32(s))
	}
	return sum
}

// dotQ2_K: q2_K weights (scales [16]u8 | qs [64]u8 | d f16 | dmin f16) ·
// q8_K. Element e = 128k + 32j + 16h + l holds bits 2j..2j+1 of
// qs[32k+16h+l]; its group of 16, g = e/16, has scale scales[g]&15 and min
// scales[g]>>4: x = d·sc·q - dmin·m.
func dotQ2_K(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/256; i++ {
		x, y := w[84*i:84*i+84], a[292*i:292*i+292]
		var isum, msum int32
		for g := 0; g < 16; g++ {
			msum += int32(x[g]>>4) * q8KBsum(y, g)
		}
		for e0 := 0; e0 < 256; e0 += 16 {
			k, j, h := e0/128, e0%128/32, e0%32/16
			q := x[16+32*k+16*h:]
			var s int32
			for l := 0; l < 16; l++ {
				s += int32(q[l]>>(2*j)&3) * int32(int8(y[4+e0+l]))
			}
			isum += int32(x[e0/16]&0xf) * s
		}
		dy := q8KScale(y)
		sum += float32(dy*f16(x[80:])*float32(isum)) - float32(dy*f16(x[82:])*float32(msum))
	}
	return sum
}

// dotQ3_K: q3_K weights (hmask [32]u8 | qs [64]u8 | scales [12]u8 | d f16) ·
// q8_K. Element e = 128k + 32j + 16h + l has low bits 2j..2j+1 of
// qs[32k+16h+l], minus 4 unless bit 4k+j of hmask[16h+l] is set; group
// g = e/16 has a signed 6-bit scale.
func dotQ3_K(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/256; i++ {
		x, y := w[110*i:110*i+110], a[292*i:292*i+292]
		var sc [16]int8
		q3KUnpackScales(x[96:108], &sc)
		var isum int32
		for e0 := 0; e0 < 256; e0 += 16 {
			k, j, h := e0/128, e0%128/32, e0%32/16
			q := x[32+32*k+16*h:]
			hm := x[16*h:]
			var s int32
			for l := 0; l < 16; l++ {
				v := int32(q[l] >> (2 * j) & 3)
				if hm[l]>>(4*k+j)&1 == 0 {
					v -= 4
				}
				s += v * int32(int8(y[4+e0+l]))
			}
			isum += (int32(sc[e0/16]) - 32) * s
		}
		sum += float32(f16(x[108:]) * q8KScale(y) * float32(isum))
	}
	return sum
}

// dotQ4_K: q4_K weights (d f16 | dmin f16 | scales [12]u8 | qs [128]u8) ·
// q8_K. Sub-block s (32 elements) of chunk c = s/2 is the low (s even) or
// high (s odd) nibbles of qs[32c:32c+32]; x = d·sc_s·q - dmin·m_s. The mins
// meet the activations through bsums.
func dotQ4_K(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/256; i++ {
		x, y := w[144*i:144*i+144], a[292*i:292*i+292]
		var isum, msum int32
		for s := 0; s < 8; s++ {
			sc, m := scaleMinK4(s, x[4:16])
			msum += int32(m) * (q8KBsum(y, 2*s) + q8KBsum(y, 2*s+1))
			q := x[16+32*(s/2):]
			shift := 4 * (s % 2)
			var d int32
			for l := 0; l < 32; l++ {
				d += int32(q[l]>>shift&0xf) * int32(int8(y[4+32*s+l]))
			}
			isum += int32(sc) * d
		}
		dy := q8KScale(y)
		sum += float32(f16(x)*dy*float32(isum)) - float32(f16(x[2:])*dy*float32(msum))
	}
	return sum
}

// dotQ5_K: q5_K weights (d f16 | dmin f16 | scales [12]u8 | qh [32]u8 |
// qs [128]u8) · q8_K: like q4_K, with bit s of qh[l] the fifth bit of
// element 32s+l.
func dotQ5_K(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/256; i++ {
		x, y := w[176*i:176*i+176], a[292*i:292*i+292]
		var isum, msum int32
		for s := 0; s < 8; s++ {
			sc, m := scaleMinK4(s, x[4:16])
			msum += int32(m) * (q8KBsum(y, 2*s) + q8KBsum(y, 2*s+1))
			q := x[48+32*(s/2):]
			shift := 4 * (s % 2)
			var d int32
			for l := 0; l < 32; l++ {
				v := int32(q[l]>>shift&0xf) | int32(x[16+l]>>s&1)<<4
				d += v * int32(int8(y[4+32*s+l]))
			}
			isum += int32(sc) * d
		}
		dy := q8KScale(y)
		sum += float32(f16(x)*dy*float32(isum)) - float32(f16(x[2:])*dy*float32(msum))
	}
	return sum
}

// dotQ6_K: q6_K weights (ql [128]u8 | qh [64]u8 | scales [16]int8 | d f16) ·
// q8_K. In half H (128 elements), element 32p+l (p = 0..3) has its low four
// bits in ql[64H + 32(p%2) + l] (low nibble for p < 2, high for p >= 2) and
// its top two in bits 2p..2p+1 of qh[32H+l]; values minus 32; group e/16
// has scale scales[e/16].
func dotQ6_K(n int, w, a []byte) float32 {
	var sum float32
	for i := 0; i < n/256; i++ {
		x, y := w[210*i:210*i+210], a[292*i:292*i+292]
		var isum int32
		for g := 0; g < 16; g++ {
			hh, p := g/8, g%8/2
			ql := x[64*hh+32*(p%2):]
			qh := x[128+32*hh:]
			var s int32
			for l := 16 * (g % 2); l < 16*(g%2)+16; l++ {
				v := int32(ql[l]>>(4*(p/2))&0xf) | int32(qh[l]>>(2*p)&3)<<4
				s += (v - 32) * int32(int8(y[4+16*g+l%16]))
			}
			isum += int32(int8(x[192+g])) * s
		}
		sum += float32(f16(x[208:]) * q8KScale(y) * float32(isum))
	}
	return sum
}
