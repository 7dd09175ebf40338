package quant

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// quantTypes is every type Quantize supports, in a stable order.
var quantTypes = []gguf.Type{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0, gguf.TypeQ8_1,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ8_K,
	gguf.TypeMXFP4,
}

// randomRelRMS bounds the relative RMS round-trip error on Gaussian data:
// about 20% above the worst of 20 rows of 1024 at scales 0.01, 1 and 100
// (in parentheses).
var randomRelRMS = map[gguf.Type]float64{
	gguf.TypeF32:   0,
	gguf.TypeF16:   0.0003, // (0.00022)
	gguf.TypeBF16:  0.0022, // (0.0018)
	gguf.TypeQ8_0:  0.007,  // (0.0057)
	gguf.TypeQ8_1:  0.007,  // (0.0057)
	gguf.TypeQ8_K:  0.0095, // (0.0081)
	gguf.TypeQ6_K:  0.022,  // (0.0186)
	gguf.TypeQ5_1:  0.048,  // (0.0399)
	gguf.TypeQ5_K:  0.047,  // (0.0395)
	gguf.TypeQ5_0:  0.055,  // (0.0460)
	gguf.TypeQ4_1:  0.10,   // (0.0830)
	gguf.TypeQ4_K:  0.09,   // (0.0751)
	gguf.TypeQ4_0:  0.11,   // (0.0916)
	gguf.TypeMXFP4: 0.15,   // (0.1242): E2M1's steps widen with magnitude, and 12·d to 16·d clips
	gguf.TypeQ3_K:  0.19,   // (0.1603)
	gguf.TypeQ2_K:  0.38,   // (0.3182)
}

func roundTrip(t *testing.T, typ gguf.Type, x []float32) ([]float32, error) {
	t.Helper()
	n, err := typ.RowBytes(len(x))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if err := Quantize(typ, x, b); err != nil {
		return nil, err
	}
	y := make([]float32, len(x))
	if err := Dequantize(typ, b, y); err != nil {
		t.Fatalf("dequantize what Quantize wrote: %v", err)
	}
	return y, nil
}

func gaussian(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

func TestQuantizeRoundTrip(t *testing.T) {
	const n = 4 * QKK
	r := rand.New(rand.NewPCG(1, 2))
	constant := func(v float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = v
		}
		return x
	}
	// Rows whose blocks have very different scales: each block must get its own.
	mixed := gaussian(r, n, 1)
	for i := range mixed {
		mixed[i] *= float32(math.Pow(10, float64(i/QKK)-2))
	}
	// One outlier per 32 values.
	outliers := gaussian(r, n, 0.02)
	for i := 0; i < n; i += 32 {
		outliers[i+i%7] = 3
	}
	cases := []struct {
		name  string
		x     []float32
		bound func(typ gguf.Type) float64 // relative RMS bound
	}{
		{"gaussian", gaussian(r, n, 1), func(typ gguf.Type) float64 { return randomRelRMS[typ] }},
		{"gaussian-small", gaussian(r, n, 0.01), func(typ gguf.Type) float64 { return randomRelRMS[typ] }},
		{"gaussian-large", gaussian(r, n, 100), func(typ gguf.Type) float64 { return randomRelRMS[typ] }},
		{"mixed-block-scales", mixed, func(typ gguf.Type) float64 { return randomRelRMS[typ] }},
		{"outliers", outliers, func(typ gguf.Type) float64 { return 2 * randomRelRMS[typ] }},
		// A constant is one value per block: only float16 rounding of the scale
		// (or min) remains, and for 2-3-bit K-quants a little more.
		{"constant+", constant(0.37), func(typ gguf.Type) float64 { return constBound(typ) }},
		{"constant-", constant(-1.5), func(typ gguf.Type) float64 { return constBound(typ) }},
	}
	for _, typ := range quantTypes {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", typ, c.name), func(t *testing.T) {
				y, err := roundTrip(t, typ, c.x)
				if err != nil {
					t.Fatal(err)
				}
				if e, b := relRMS(y, c.x), c.bound(typ); !(e <= b) {
					t.Errorf("relative RMS error %.5f > bound %.5f", e, b)
				}
			})
		}
	}
}

func constBound(typ gguf.Type) float64 {
	switch typ {
	case gguf.TypeF32:
		return 0
	case gguf.TypeQ8_K:
		return 1e-6 // f32 scale
	case gguf.TypeQ2_K, gguf.TypeQ3_K:
		return 0.01
	case gguf.TypeBF16:
		return 0.004 // one bfloat16 rounding (2^-9 relative)
	case gguf.TypeMXFP4:
		return 0.25 // the power-of-two scale leaves the value on E2M1's grid: 8·d to 16·d go to 8·d or 12·d
	}
	return 0.0015 // one float16 rounding (2^-11 relative), plus the quant's
}

// TestQuantizeZeros: all-zero input comes back as exact zeros.
func TestQuantizeZeros(t *testing.T) {
	x := make([]float32, 2*QKK)
	for _, typ := range quantTypes {
		y, err := roundTrip(t, typ, x)
		if err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%v: x[%d] = %v, want 0", typ, i, v)
			}
		}
	}
}

// TestQuantizeExtremeMagnitudes: huge values either round-trip within the
// type's bound or are rejected with an error naming the overflow (no Inf or
// NaN ever comes back); tiny values and subnormals come back finite, within
// a small absolute error.
func TestQuantizeExtremeMagnitudes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := gaussian(r, 2*QKK, 1)
	scaled := func(s float64) []float32 {
		x := make([]float32, len(base))
		for i, v := range base {
			x[i] = float32(float64(v) * s)
		}
		return x
	}
	// Types whose scales are f32 (or that store f32's exponent range) take any
	// finite magnitude; the others must reject 1e30.
	wide := map[gguf.Type]bool{gguf.TypeF32: true, gguf.TypeBF16: true, gguf.TypeQ8_K: true, gguf.TypeMXFP4: true}
	for _, typ := range quantTypes {
		t.Run(typ.String(), func(t *testing.T) {
			for _, s := range []float64{1e3, 1e5, 1e6, 1e8, 1e12, 1e15, 1e20, 1e30} {
				y, err := roundTrip(t, typ, scaled(s))
				if err != nil {
					if wide[typ] || !strings.Contains(err.Error(), "overflows") || !strings.Contains(err.Error(), "block ") {
						t.Errorf("scale %g: unexpected error %v", s, err)
					}
					continue
				}
				if s == 1e30 && !wide[typ] {
					t.Errorf("scale %g: no error for values beyond float16", s)
				}
				if e := relRMS(y, scaled(s)); !(e <= 1.5*randomRelRMS[typ]) {
					t.Errorf("scale %g: relative RMS error %.5f", s, e)
				}
			}
			// Below about 1e-4 the float16 super-scales go subnormal and the
			// formats lose precision (exactly as in ggml: the bytes are the
			// same), but the error stays bounded in absolute terms: roughly the
			// largest quant × sub-scale times half the smallest float16
			// subnormal (2^-25), at most about 1e-4.
			for _, s := range []float64{1e-4, 1e-5, 1e-6, 1e-7, 1e-10, 1e-30, 1e-40} {
				x := scaled(s)
				y, err := roundTrip(t, typ, x)
				if err != nil {
					t.Errorf("scale %g: %v", s, err)
					continue
				}
				amax := float64(maxAbs(x))
				for i, v := range y {
					if e := math.Abs(float64(v) - float64(x[i])); !(e <= 3*amax+1e-4) {
						t.Fatalf("scale %g: x[%d] = %g came back as %g (input max %g)", s, i, x[i], v, amax)
					}
				}
				if s <= 1e-10 { // every scale underflows: zeros (or the input, for wide types)
					grow := 1.01
					if typ == gguf.TypeMXFP4 {
						grow = 1.25 // E2M1's grid: an element near amax may round up from 10·d to 12·d
					}
					for i, v := range y {
						if math.Abs(float64(v)) > grow*amax {
							t.Fatalf("scale %g: x[%d] = %g came back as %g", s, i, x[i], v)
						}
					}
				}
			}
		})
	}
}

// TestQuantizeLargestFloat32: F32, BF16, Q8_K and MXFP4 hold values up to
// 1e38; at math.MaxFloat32 only F32 and MXFP4 do (BF16 rounds it to
// infinity and Q8_K's d*127 would overflow; MXFP4 writes 6·2^125, its
// largest finite value at the exponent ggml picks), and the others must
// refuse.
func TestQuantizeLargestFloat32(t *testing.T) {
	for _, c := range []struct {
		amax float32
		ok   map[gguf.Type]bool
	}{
		{1e38, map[gguf.Type]bool{gguf.TypeF32: true, gguf.TypeBF16: true, gguf.TypeQ8_K: true, gguf.TypeMXFP4: true}},
		{math.MaxFloat32, map[gguf.Type]bool{gguf.TypeF32: true, gguf.TypeMXFP4: true}},
	} {
		x := make([]float32, QKK)
		for i := range x {
			x[i] = c.amax / 2 * float32(i%5-2)
		}
		for _, typ := range quantTypes {
			y, err := roundTrip(t, typ, x)
			switch {
			case c.ok[typ] && err != nil:
				t.Errorf("%v, max %g: %v", typ, c.amax, err)
			case c.ok[typ]:
				if e := relRMS(y, x); !(e <= 2*randomRelRMS[typ]) { // five distinct values: not Gaussian
					t.Errorf("%v, max %g: relative RMS error %g", typ, c.amax, e)
				}
			case err == nil || !strings.Contains(err.Error(), "overflows"):
				t.Errorf("%v, max %g: err = %v, want an overflow error", typ, c.amax, err)
			}
		}
	}
}

// TestQuantizeRejectsNonFinite: NaN and ±Inf are rejected with an error that
// names the block and the element.
func TestQuantizeRejectsNonFinite(t *testing.T) {
	for _, typ := range quantTypes {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			x := make([]float32, 2*QKK)
			for i := range x {
				x[i] = float32(i%17) - 8
			}
			const at = QKK + 37 // block 1 for K-quants, 9 for 32-element types, 293 for plain ones
			x[at] = bad
			b := make([]byte, 2*QKK*typ.BlockBytes()/typ.BlockSize())
			err := Quantize(typ, x, b)
			want := fmt.Sprintf("block %d: element %d is %v", at/typ.BlockSize(), at, bad)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v with %v: err = %v, want it to contain %q", typ, bad, err, want)
			}
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	tests := []struct {
		typ  gguf.Type
		n    int
		dst  int
		want string
	}{
		{gguf.TypeQ4_K, 255, 144, "not a multiple of the block size 256"},
		{gguf.TypeQ8_0, 64, 67, "need 68 bytes, have 67"},
		{gguf.TypeIQ4_NL, 32, 18, "unsupported type"},
	}
	for _, tt := range tests {
		err := Quantize(tt.typ, make([]float32, tt.n), make([]byte, tt.dst))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want it to contain %q", tt.typ, err, tt.want)
		}
	}
	for _, typ := range quantTypes {
		if !CanQuantize(typ) || !CanDequantize(typ) {
			t.Errorf("%v: CanQuantize %v, CanDequantize %v", typ, CanQuantize(typ), CanDequantize(typ))
		}
	}
	if CanQuantize(gguf.TypeIQ2_XXS) {
		t.Error("CanQuantize(iq2_xxs) = true")
	}
}

// TestQuantizeQ8KBsums: the Q8_K block sums match its quants.
func TestQuantizeQ8KBsums(t *testing.T) {
	x := gaussian(rand.New(rand.NewPCG(5, 6)), QKK, 3)
	b := make([]byte, q8KBytes)
	if err := Quantize(gguf.TypeQ8_K, x, b); err != nil {
		t.Fatal(err)
	}
	for g := 0; g < 16; g++ {
		var s int
		for _, q := range b[q8KQS+16*g : q8KQS+16*g+16] {
			s += int(int8(q))
		}
		if got := int(int16(uint16(b[q8KBsums+2*g]) | uint16(b[q8KBsums+2*g+1])<<8)); got != s {
			t.Errorf("bsums[%d] = %d, want %d", g, got, s)
		}
	}
}

// TestQuantizeQ8KMatchesActivations: Q8_K has one reference quantizer in
// ggml (quantize_row_q8_K_ref), used both for files and for activations, so
// Quantize and QuantizeActivations (written separately) must agree byte for
// byte.
func TestQuantizeQ8KMatchesActivations(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, scale := range []float64{1e-3, 1, 1e3} {
		x := gaussian(r, 8*QKK, scale)
		x[5] = 0 // and one all-zero block
		clear(x[3*QKK : 4*QKK])
		a, b := make([]byte, 8*q8KBytes), make([]byte, 8*q8KBytes)
		if err := Quantize(gguf.TypeQ8_K, x, a); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeActivations(gguf.TypeQ8_K, x, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("scale %g: Quantize vs QuantizeActivations: %s", scale, firstBlockDiff(gguf.TypeQ8_K, a, b))
		}
	}
}
