package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/smolgo/smolgo/gguf"
)

// Dequantize expands len(dst) elements of type t, stored in ggml's byte
// layout at the start of src, into float32. len(dst) must be a whole number
// of blocks and src must hold at least t.RowBytes(len(dst)) bytes (extra
// bytes are ignored, so a slice of a larger tensor can be passed).
//
// The result is bit-identical to ggml's dequantize_row_* (its to_float): the
// float32 operations happen in the same order, with no fused multiply-adds.
//
// Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, MXFP4. CanDequantize reports whether a
// type is among them.
func Dequantize(t gguf.Type, src []byte, dst []float32) error {
	f, ok := dequantizers[t]
	if !ok {
		return fmt.Errorf("quant: dequantize %v: unsupported type", t)
	}
	bs, bb := t.BlockSize(), t.BlockBytes()
	if len(dst)%bs != 0 {
		return fmt.Errorf("quant: dequantize %v: %d elements is not a multiple of the block size %d", t, len(dst), bs)
	}
	nb := len(dst) / bs
	if need := nb * bb; len(src) < need {
		return fmt.Errorf("quant: dequantize %v: %d elements need %d bytes, have %d", t, len(dst), need, len(src))
	}
	f(src[:nb*bb], dst)
	return nil
}

// DequantizeRow is Dequantize under the name ggml uses (dequantize_row_*):
// one row of a weight matrix, or any whole number of blocks.
func DequantizeRow(t gguf.Type, src []byte, dst []float32) error {
	return Dequantize(t, src, dst)
}

// CanDequantize reports whether Dequantize supports type t.
func CanDequantize(t gguf.Type) bool {
	_, ok := dequantizers[t]
	return ok
}

// dequantizers map a type to its block loop. Each gets exactly
// len(dst)/BlockSize blocks of input.
var dequantizers = map[gguf.Type]func(src []byte, dst []float32){
	gguf.TypeF32:    dequantF32,
	gguf.TypeF16:    dequantF16,
	gguf.TypeBF16:   dequantBF16,
	gguf.TypeQ4_0:   dequantQ4_0,
	gguf.TypeQ4_1:   dequantQ4_1,
	gguf.TypeQ5_0:   dequantQ5_0,
	gguf.TypeQ5_1:   dequantQ5_1,
	gguf.TypeQ8_0:   dequantQ8_0,
	gguf.TypeQ8_1:   dequantQ8_1,
	gguf.TypeQ2_K:   dequantQ2K,
	gguf.TypeQ3_K:   dequantQ3K,
	gguf.TypeQ4_K:   dequantQ4K,
	gguf.TypeQ5_K:   dequantQ5K,
	gguf.TypeQ6_K:   dequantQ6K,
	gguf.TypeQ8_K:   dequantQ8K,
	gguf.TypeIQ4_NL: dequantIQ4NL,
	gguf.TypeIQ4_XS: dequantIQ4XS,
	gguf.TypeMXFP4:  dequantMXFP4,
}

func dequantF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func dequantF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = halfToFloat(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}

func dequantBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = bf16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func dequantQ4_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*q4_0Bytes : (i+1)*q4_0Bytes]
		y := dst[i*QK : (i+1)*QK]
		d := f16(b[q4_0D:])
		qs := b[q4_0QS : q4_0QS+16]
		for j, q := range qs {
			y[j] = float32(int(q&0xF)-8) * d
			y[j+16] = float32(int(q>>4)-8) * d
		}
	}
}

func dequantQ4_1(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*q4_1Bytes : (i+1)*q4_1Bytes]
		y := dst[i*QK : (i+1)*QK]
		d, m := f16(b[q4_1D:]), f16(b[q4_1M:])
		qs := b[q4_1QS : q4_1QS+16]
		for j, q := range qs {
			// float32(...) keeps the product rounded on its own (no FMA), as in ggml.
			y[j] = float32(float32(q&0xF)*d) + m
			y[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

func dequantQ5_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*q5_0Bytes : (i+1)*q5_0Bytes]
		y := dst[i*QK : (i+1)*QK]
		d := f16(b[q5_0D:])
		qh := binary.LittleEndian.Uint32(b[q5_0QH:])
		qs := b[q5_0QS : q5_0QS+16]
		for j, q := range qs {
			h0 := uint8(qh>>j<<4) & 0x10
			h1 := uint8(qh>>(j+12)) & 0x10
			y[j] = float32(int(q&0xF|h0)-16) * d
			y[j+16] = float32(int(q>>4|h1)-16) * d
		}
	}
}

func dequantQ5_1(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*q5_1Bytes : (i+1)*q5_1Bytes]
		y := dst[i*QK : (i+1)*QK]
		d, m := f16(b[q5_1D:]), f16(b[q5_1M:])
		qh := binary.LittleEndian.Uint32(b[q5_1QH:])
		qs := b[q5_1QS : q5_1QS+16]
		for j, q := range qs {
			h0 := uint8(qh>>j<<4) & 0x10
			h1 := uint8(qh>>(j+12)) & 0x10
			y[j] = float32(float32(q&0xF|h0)*d) + m
			y[j+16] = float32(float32(q>>4|h1)*d) + m
		}
	}
}

func dequantQ8_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*q8_0Bytes : (i+1)*q8_0Bytes]
		y := dst[i*QK : (i+1)*QK]
		d := f16(b[q8_0D:])
		for j, q := range b[q8_0QS : q8_0QS+QK] {
			y[j] = float32(int8(q)) * d
		}
	}
}

func dequantQ8_1(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*q8_1Bytes : (i+1)*q8_1Bytes]
		y := dst[i*QK : (i+1)*QK]
		d := f16(b[q8_1D:])
		for j, q := range b[q8_1QS : q8_1QS+QK] {
			y[j] = float32(int8(q)) * d
		}
	}
}

func dequantQ2K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*q2KBytes : (i+1)*q2KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d, dmin := f16(b[q2KD:]), f16(b[q2KDmin:])
		scales := b[q2KScales : q2KScales+16]
		for s := 0; s < 16; s++ {
			// Sub-block s: half h, bit pair p, and first or second 16 of the 32 bytes.
			h, p, off := s/8, (s%8)/2, (s%2)*16
			q := b[q2KQS+32*h+off : q2KQS+32*h+off+16]
			dl := d * float32(scales[s]&0xF)
			ml := float32(dmin * float32(scales[s]>>4)) // rounded alone: never fused into the subtraction below
			out := y[16*s : 16*s+16]
			shift := uint(2 * p)
			for l, v := range q {
				out[l] = float32(dl*float32((v>>shift)&3)) - ml
			}
		}
	}
}

func dequantQ3K(src []byte, dst []float32) {
	var sc [16]int8
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*q3KBytes : (i+1)*q3KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d := f16(b[q3KD:])
		q3KUnpackScales(b[q3KScales:q3KScales+12], &sc)
		hm := b[q3KHmask : q3KHmask+32]
		for s := 0; s < 16; s++ {
			h, p, off := s/8, (s%8)/2, (s%2)*16
			q := b[q3KQS+32*h+off : q3KQS+32*h+off+16]
			hshift := uint(s / 2) // the high bit is bit element/32 of hmask
			dl := d * float32(int(sc[s])-32)
			out := y[16*s : 16*s+16]
			h16 := hm[off : off+16]
			shift := uint(2 * p)
			for l, v := range q {
				// q - 4 if the high bit is clear, q if it is set (branch-free).
				qv := int((v>>shift)&3) - 4 + 4*int((h16[l]>>hshift)&1)
				out[l] = dl * float32(qv)
			}
		}
	}
}

func dequantQ4K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*q4KBytes : (i+1)*q4KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d, dmin := f16(b[q4KD:]), f16(b[q4KDmin:])
		scales := b[q4KScales : q4KScales+12]
		for c := 0; c < 4; c++ {
			sc1, m1 := scaleMinK4(2*c, scales)
			sc2, m2 := scaleMinK4(2*c+1, scales)
			d1, mm1 := d*float32(sc1), float32(dmin*float32(m1))
			d2, mm2 := d*float32(sc2), float32(dmin*float32(m2))
			q := b[q4KQS+32*c : q4KQS+32*c+32]
			lo, hi := y[64*c:64*c+32], y[64*c+32:64*c+64]
			for l, v := range q {
				lo[l] = float32(d1*float32(v&0xF)) - mm1
				hi[l] = float32(d2*float32(v>>4)) - mm2
			}
		}
	}
}

func dequantQ5K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*q5KBytes : (i+1)*q5KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d, dmin := f16(b[q5KD:]), f16(b[q5KDmin:])
		scales := b[q5KScales : q5KScales+12]
		qh := (*[32]byte)(b[q5KQH:])
		for c := 0; c < 4; c++ {
			sc1, m1 := scaleMinK4(2*c, scales)
			sc2, m2 := scaleMinK4(2*c+1, scales)
			d1, mm1 := d*float32(sc1), float32(dmin*float32(m1))
			d2, mm2 := d*float32(sc2), float32(dmin*float32(m2))
			s1, s2 := uint(2*c), uint(2*c+1) // fifth-bit positions in qh
			q := (*[32]byte)(b[q5KQS+32*c:])
			lo, hi := (*[32]float32)(y[64*c:]), (*[32]float32)(y[64*c+32:])
			for l, v := range q {
				a := v&0xF | (qh[l]>>s1&1)<<4
				h := v>>4 | (qh[l]>>s2&1)<<4
				lo[l] = float32(d1*float32(a)) - mm1
				hi[l] = float32(d2*float32(h)) - mm2
			}
		}
	}
}

func dequantQ6K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*q6KBytes : (i+1)*q6KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d := f16(b[q6KD:])
		for h := 0; h < 2; h++ {
			ql := (*[64]byte)(b[q6KQL+64*h:])
			qh := (*[32]byte)(b[q6KQH+32*h:])
			sc := b[q6KScales+8*h : q6KScales+8*h+8]
			out := (*[128]float32)(y[128*h:])
			// ggml computes d * sc * q left to right, so d*sc can be hoisted.
			var ds [8]float32
			for k := range ds {
				ds[k] = d * float32(int8(sc[k]))
			}
			for is := 0; is < 2; is++ {
				d1, d2, d3, d4 := ds[is], ds[is+2], ds[is+4], ds[is+6]
				for l := 16 * is; l < 16*is+16; l++ {
					a, c, hb := ql[l], ql[l+32], qh[l]
					out[l] = d1 * float32(int(a&0xF|(hb&3)<<4)-32)
					out[l+32] = d2 * float32(int(c&0xF|(hb>>2&3)<<4)-32)
					out[l+64] = d3 * float32(int(a>>4|(hb>>4&3)<<4)-32)
					out[l+96] = d4 * float32(int(c>>4|(hb>>6)<<4)-32)
				}
			}
		}
	}
}

func dequantQ8K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*q8KBytes : (i+1)*q8KBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d := math.Float32frombits(binary.LittleEndian.Uint32(b[q8KD:]))
		for j, q := range b[q8KQS : q8KQS+QKK] {
			y[j] = d * float32(int8(q))
		}
	}
}

func dequantIQ4NL(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*iq4NLBytes : (i+1)*iq4NLBytes]
		y := dst[i*QK : (i+1)*QK]
		d := f16(b[iq4NLD:])
		for j, q := range b[iq4NLQS : iq4NLQS+16] {
			y[j] = d * float32(iq4nlValues[q&0xF])
			y[j+16] = d * float32(iq4nlValues[q>>4])
		}
	}
}

func dequantIQ4XS(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*iq4XSBytes : (i+1)*iq4XSBytes]
		y := dst[i*QKK : (i+1)*QKK]
		d := f16(b[iq4XSD:])
		sh := binary.LittleEndian.Uint16(b[iq4XSScalesH:])
		for s := 0; s < 8; s++ {
			ls := int((b[iq4XSScalesL+s/2]>>(4*uint(s%2)))&0xF) | int((sh>>(2*uint(s)))&3)<<4
			dl := d * float32(ls-32)
			qs := b[iq4XSQS+16*s : iq4XSQS+16*s+16]
			out := y[32*s : 32*s+32]
			for j, q := range qs {
				out[j] = dl * float32(iq4nlValues[q&0xF])
				out[j+16] = dl * float32(iq4nlValues[q>>4])
			}
		}
	}
}

// dequantMXFP4: x = mxfp4Values[q] · 2^(e-128), the integer converted to
// float32 and multiplied by the halved scale, as ggml does (exact).
func dequantMXFP4(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*mxfp4Bytes : (i+1)*mxfp4Bytes]
		y := dst[i*QK : (i+1)*QK]
		d := e8m0Half(b[mxfp4E])
		for j, q := range b[mxfp4QS : mxfp4QS+16] {
			y[j] = float32(mxfp4Values[q&0xF]) * d
			y[j+16] = float32(mxfp4Values[q>>4]) * d
		}
	}
}
