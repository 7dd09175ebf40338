package quant

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/smolgo/smolgo/gguf"
)

func TestDequantizeErrors(t *testing.T) {
	tests := []struct {
		name string
		typ  gguf.Type
		src  int
		dst  int
		want string
	}{
		{"partial block", gguf.TypeQ4_0, 18, 31, "not a multiple of the block size 32"},
		{"short source", gguf.TypeQ4_K, 143, 256, "need 144 bytes, have 143"},
		{"unsupported", gguf.TypeIQ2_XXS, 66, 256, "unsupported type"},
		{"unknown", gguf.Type(99), 0, 0, "unsupported type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Dequantize(tt.typ, make([]byte, tt.src), make([]float32, tt.dst))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	// Extra source bytes are allowed and ignored.
	if err := Dequantize(gguf.TypeQ8_0, make([]byte, 100), make([]float32, 64)); err != nil {
		t.Fatal(err)
	}
}

// TestDequantizeHandMade checks formats absent from the golden models on
// blocks built by hand from the documented layouts.
func TestDequantizeHandMade(t *testing.T) {
	half := func(b []byte, v uint16) { binary.LittleEndian.PutUint16(b, v) }
	const f16Half = 0x3800 // 0.5
	t.Run("iq4_nl", func(t *testing.T) {
		b := make([]byte, iq4NLBytes)
		half(b, f16Half)
		for j := 0; j < 16; j++ {
			b[2+j] = byte(j) | byte(15-j)<<4
		}
		got := make([]float32, QK)
		if err := Dequantize(gguf.TypeIQ4_NL, b, got); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 16; j++ {
			if w := 0.5 * float32(iq4nlValues[j]); got[j] != w {
				t.Errorf("x[%d] = %v, want %v", j, got[j], w)
			}
			if w := 0.5 * float32(iq4nlValues[15-j]); got[j+16] != w {
				t.Errorf("x[%d] = %v, want %v", j+16, got[j+16], w)
			}
		}
	})
	t.Run("iq4_xs", func(t *testing.T) {
		b := make([]byte, iq4XSBytes)
		half(b, f16Half)
		// Sub-block s gets the 6-bit scale 32+s+1 (so ls-32 = s+1): low nibble
		// (33+s)&15, top bits (33+s)>>4.
		var sh uint16
		for s := 0; s < 8; s++ {
			ls := 33 + s
			b[iq4XSScalesL+s/2] |= byte(ls&15) << (4 * (s % 2))
			sh |= uint16(ls>>4) << (2 * s)
		}
		binary.LittleEndian.PutUint16(b[iq4XSScalesH:], sh)
		for i := 0; i < 128; i++ {
			b[iq4XSQS+i] = byte(i%16) | byte((i+3)%16)<<4
		}
		got := make([]float32, QKK)
		if err := Dequantize(gguf.TypeIQ4_XS, b, got); err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 8; s++ {
			for j := 0; j < 16; j++ {
				i := 16*s + j
				lo := 0.5 * float32(s+1) * float32(iq4nlValues[i%16])
				hi := 0.5 * float32(s+1) * float32(iq4nlValues[(i+3)%16])
				if got[32*s+j] != lo || got[32*s+j+16] != hi {
					t.Fatalf("sub-block %d element %d: got %v,%v want %v,%v", s, j, got[32*s+j], got[32*s+j+16], lo, hi)
				}
			}
		}
	})
	t.Run("q8_1", func(t *testing.T) {
		b := make([]byte, q8_1Bytes)
		half(b, f16Half)
		half(b[2:], 0x7c00) // s is not used by dequantization
		for j := 0; j < QK; j++ {
			b[4+j] = byte(int8(j - 16))
		}
		got := make([]float32, QK)
		if err := Dequantize(gguf.TypeQ8_1, b, got); err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if w := 0.5 * float32(j-16); got[j] != w {
				t.Fatalf("x[%d] = %v, want %v", j, got[j], w)
			}
		}
	})
	t.Run("q8_K", func(t *testing.T) {
		b := make([]byte, q8KBytes)
		binary.LittleEndian.PutUint32(b, math.Float32bits(0.25))
		for j := 0; j < QKK; j++ {
			b[4+j] = byte(int8(j - 128))
		}
		got := make([]float32, QKK)
		if err := Dequantize(gguf.TypeQ8_K, b, got); err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if w := 0.25 * float32(j-128); got[j] != w {
				t.Fatalf("x[%d] = %v, want %v", j, got[j], w)
			}
		}
	})
}

// TestHalfToFloat checks the fast float16 widening against x448/float16 on
// every one of the 65536 inputs (NaN payloads included, bit for bit).
func TestHalfToFloat(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got := math.Float32bits(halfToFloat(uint16(h)))
		want := math.Float32bits(float16.Frombits(uint16(h)).Float32())
		if got != want {
			t.Fatalf("halfToFloat(%#04x) = %#08x, want %#08x", h, got, want)
		}
	}
}
