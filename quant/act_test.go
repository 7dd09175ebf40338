package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

func int8s(b []byte) []int8 {
	out := make([]int8, len(b))
	for i, v := range b {
		out[i] = int8(v)
	}
	return out
}

// TestQuantizeActivationsQ8_0 checks ggml's x86 rounding: the f32 multiplier
// 127/amax, then round half to even (roundf would give 1, 3, -3 below).
func TestQuantizeActivationsQ8_0(t *testing.T) {
	x := make([]float32, 32)
	copy(x, []float32{127, 0.5, 1.5, 2.5, -2.5, -0.5, 3.4, -127, 126.5})
	for _, vt := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ8_1} {
		b := make([]byte, vt.BlockBytes())
		if err := QuantizeActivations(vt, x, b); err != nil {
			t.Fatal(err)
		}
		off := 2
		if vt == gguf.TypeQ8_1 {
			off = 4
		}
		want := []int8{127, 0, 2, 2, -2, 0, 3, -127, 126}
		got := int8s(b[off : off+len(want)])
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%v q[%d] = %d, want %d (all %v)", vt, i, got[i], want[i], got)
			}
		}
		if d := binary.LittleEndian.Uint16(b); d != 0x3c00 { // 127/127 = 1
			t.Errorf("%v d = %#x, want 0x3c00 (1.0)", vt, d)
		}
		if vt == gguf.TypeQ8_1 {
			// s = d·Σq = 127+0+2+2-2+0+3-127+126 = 131
			if s := f16(b[2:]); s != 131 {
				t.Errorf("q8_1 s = %g, want 131", s)
			}
		}
	}
	// The multiplier is 127/amax in f32, not 1/f16(d): amax = 3 gives
	// 127/3 = 42.333332, and 3·42.333332 rounds to 127 exactly.
	x = make([]float32, 32)
	x[0], x[1] = 3, 1.5
	b := make([]byte, 34)
	if err := QuantizeActivations(gguf.TypeQ8_0, x, b); err != nil {
		t.Fatal(err)
	}
	if q := int8s(b[2:4]); q[0] != 127 || q[1] != 64 {
		t.Errorf("amax 3: q = %v, want [127 64]", q) // 63.5 -> 64 (even)
	}
	if d, want := binary.LittleEndian.Uint16(b), halfBits(float32(3)/127); d != want {
		t.Errorf("amax 3: d = %#x, want %#x", d, want)
	}
	// A block of tiny subnormals: 127/amax overflows to +Inf, and ggml's
	// AVX2 code turns every Inf or NaN product into -128.
	x = make([]float32, 32)
	x[3] = 1e-45
	if err := QuantizeActivations(gguf.TypeQ8_0, x, b); err != nil {
		t.Fatal(err)
	}
	for i, q := range int8s(b[2:34]) {
		if q != -128 {
			t.Fatalf("subnormal block: q[%d] = %d, want -128", i, q)
		}
	}
}

// TestQuantizeActivationsQ8_K checks the signed maximum (first on ties),
// iscale = -127/max, the clamp to 127, d = 1/iscale and the bsums.
func TestQuantizeActivationsQ8_K(t *testing.T) {
	tests := []struct {
		name  string
		x     []float32 // the rest of the 256 are zero
		wantQ []int8
		wantD float32
	}{
		{"negative max", []float32{1, -2, 2, 0.5}, []int8{64, -127, 127, 32}, 2.0 / 127},
		{"positive max first", []float32{2, -2, 1}, []int8{-127, 127, -64}, -2.0 / 127},
		{"tie to even", []float32{-127, 0.5, 1.5, -2.5}, []int8{-127, 0, 2, -2}, 1},
	}
	for _, tt := range tests {
		x := make([]float32, 256)
		copy(x, tt.x)
		b := make([]byte, 292)
		if err := QuantizeActivations(gguf.TypeQ8_K, x, b); err != nil {
			t.Fatal(err)
		}
		got := int8s(b[4 : 4+len(tt.wantQ)])
		for i := range tt.wantQ {
			if got[i] != tt.wantQ[i] {
				t.Errorf("%s: q[%d] = %d, want %d", tt.name, i, got[i], tt.wantQ[i])
			}
		}
		iscale := -127 / tt.x[0]
		for _, v := range tt.x {
			if float32(math.Abs(float64(v))) > float32(math.Abs(float64(-127/iscale))) {
				iscale = -127 / v
			}
		}
		if d := q8KScale(b); d != 1/iscale || math.Abs(float64(d-tt.wantD)) > 1e-6 {
			t.Errorf("%s: d = %g, want %g", tt.name, d, tt.wantD)
		}
		var sum int32
		for _, q := range got {
			sum += int32(q)
		}
		if bs := q8KBsum(b, 0); bs != sum {
			t.Errorf("%s: bsums[0] = %d, want %d", tt.name, bs, sum)
		}
	}
	// All zero: d = 0, no NaN.
	b := make([]byte, 292)
	for i := range b {
		b[i] = 0xaa
	}
	if err := QuantizeActivations(gguf.TypeQ8_K, make([]float32, 256), b); err != nil {
		t.Fatal(err)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("zero block: byte %d = %#x, want 0", i, v)
		}
	}
	// Random rows: every bsum is the sum of its 16 quants, |q| <= 127 and
	// the largest element maps to -127.
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, 1024)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	b = make([]byte, 4*292)
	if err := QuantizeActivations(gguf.TypeQ8_K, x, b); err != nil {
		t.Fatal(err)
	}
	for blk := 0; blk < 4; blk++ {
		y := b[292*blk:]
		q := int8s(y[4:260])
		for g := 0; g < 16; g++ {
			var s int32
			for _, v := range q[16*g : 16*g+16] {
				s += int32(v)
			}
			if s != q8KBsum(y, g) {
				t.Errorf("block %d bsums[%d] = %d, want %d", blk, g, q8KBsum(y, g), s)
			}
		}
		imax := 0
		for i, v := range x[256*blk : 256*blk+256] {
			if math.Abs(float64(v)) > math.Abs(float64(x[256*blk+imax])) {
				imax = i
			}
		}
		if q[imax] != -127 {
			t.Errorf("block %d: largest element quantized to %d, want -127", blk, q[imax])
		}
	}
}

func TestBF16Rounding(t *testing.T) {
	tests := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie: down to even
		{0x3f818000, 0x3f82}, // tie: up to even
		{0x3f808001, 0x3f81}, // above the tie
		{0xff800000, 0xff80}, // -Inf
		{0x7f7fffff, 0x7f80}, // max float rounds to Inf
		{0x7fc00001, 0x7fc0}, // NaN stays NaN
		{0x7f800001, 0x7fc0}, // signalling NaN becomes quiet
	}
	for _, tt := range tests {
		if got := f32ToBF16(math.Float32frombits(tt.in)); got != tt.want {
			t.Errorf("f32ToBF16(%#x) = %#x, want %#x", tt.in, got, tt.want)
		}
	}
	x := []float32{1, -2.5, 3.14159}
	b := make([]byte, 6)
	if err := QuantizeActivations(gguf.TypeBF16, x, b); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint16(b[4:]); got != 0x4049 {
		t.Errorf("bf16(3.14159) = %#x, want 0x4049", got)
	}
}

func TestQuantizeActivationsErrors(t *testing.T) {
	tests := []struct {
		name string
		t    gguf.Type
		n    int
		dst  int
		want string
	}{
		{"weight type", gguf.TypeQ4_K, 256, 1000, "not an activation"},
		{"unknown type", gguf.Type(77), 256, 1000, "not an activation"},
		{"partial block", gguf.TypeQ8_K, 300, 1000, "multiple"},
		{"short dst", gguf.TypeQ8_0, 64, 67, "need 68 bytes"},
		{"short f16 dst", gguf.TypeF16, 10, 19, "need 20 bytes"},
	}
	for _, tt := range tests {
		err := QuantizeActivations(tt.t, make([]float32, tt.n), make([]byte, tt.dst))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// TestQuantizeQ8KVariants checks the assembly q8_K quantizer (where this CPU
// runs it) against the Go twin, byte for byte, on random rows and edge
// blocks: all zero, ties for the largest magnitude with both signs, a single
// outlier, halves that round to even, tiny and huge values.
func TestQuantizeQ8KVariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	var rows [][]float32
	for _, nb := range []int{1, 2, 5} {
		x := make([]float32, 256*nb)
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * float32(math.Ldexp(1, rng.IntN(8)-4))
		}
		rows = append(rows, x)
	}
	edge := func(f func(x []float32)) {
		x := make([]float32, 256)
		f(x)
		rows = append(rows, x)
	}
	edge(func(x []float32) {})                              // all zero
	edge(func(x []float32) { x[7], x[200] = 3, -3 })        // tie, positive first
	edge(func(x []float32) { x[7], x[200] = -3, 3 })        // tie, negative first
	edge(func(x []float32) { x[255] = -1e30; x[0] = 1 })    // one huge outlier, last
	edge(func(x []float32) { x[0] = 1e-40; x[1] = -2e-40 }) // subnormals only
	edge(func(x []float32) {
		for i := range x {
			x[i] = float32(i%255-127) / 2 // halves: x·iscale hits .5 often
		}
	})
	edge(func(x []float32) {
		for i := range x {
			x[i] = 5
		}
	})
	checkQuantizerLevels(t, rows, 292, 256, quantizeQ8KGo, quantizeQ8K)
}

// TestQuantizeQ8_0Variants checks the assembly q8_0 quantizers against the
// Go twin, byte for byte, on random rows and edge blocks.
func TestQuantizeQ8_0Variants(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	var rows [][]float32
	for _, nb := range []int{1, 3, 64} {
		x := make([]float32, 32*nb)
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * float32(math.Ldexp(1, rng.IntN(12)-6))
		}
		rows = append(rows, x)
	}
	edge := func(f func(x []float32)) {
		x := make([]float32, 32)
		f(x)
		rows = append(rows, x)
	}
	edge(func(x []float32) {})                            // all zero
	edge(func(x []float32) { x[3] = 1e-45 })              // 127/amax overflows: -128
	edge(func(x []float32) { x[0], x[31] = -127, 126.5 }) // ties to even
	edge(func(x []float32) { x[5] = 3e38; x[6] = -1 })    // huge
	edge(func(x []float32) {
		for i := range x {
			x[i] = float32(i) - 15.5
		}
	})
	checkQuantizerLevels(t, rows, 34, 32, quantizeQ8_0Go, quantizeQ8_0)
}

// checkQuantizerLevels compares quantizer q at every dispatch level with its
// Go twin, byte for byte, on rows of blocks of bs values (bb bytes).
func checkQuantizerLevels(t *testing.T, rows [][]float32, bb, bs int, twin func(x []float32, dst []byte), q func(x []float32, dst []byte, level isaLevel)) {
	t.Helper()
	for _, level := range supportedLevels() {
		for i, x := range rows {
			want := make([]byte, len(x)/bs*bb)
			got := make([]byte, len(want))
			for j := range got {
				got[j] = 0xcc
			}
			twin(x, want)
			q(x, got, level)
			for j := range want {
				if got[j] != want[j] {
					t.Errorf("%v row %d: byte %d (block %d offset %d) = %#x, Go twin %#x", level, i, j, j/bb, j%bb, got[j], want[j])
					break
				}
			}
		}
	}
}

// TestF16Activations holds the F16C conversion to the Go twin on random
// bit patterns, values around float16's range and rounding edges, at every
// level and for lengths with and without a tail (a NaN only needs to stay
// a NaN).
func TestF16Activations(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	edges := []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.99, 65520, -65520, 6.1035156e-05, 5.96e-08,
		2.98e-08, 1e-10, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1.00048828125, 2049, 2051}
	isNaN := func(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }
	for _, level := range supportedLevels() {
		for _, n := range []int{1, 7, 8, 9, 64, 1000} {
			x := make([]float32, n)
			for i := range x {
				switch i % 3 {
				case 0:
					x[i] = math.Float32frombits(r.Uint32())
				case 1:
					x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(60)-30)))
				default:
					x[i] = edges[r.IntN(len(edges))]
				}
			}
			got, want := make([]byte, 2*n+2), make([]byte, 2*n)
			toF16(x, got[:2*n], level)
			toF16Go(x, want)
			for i := range n {
				g, w := binary.LittleEndian.Uint16(got[2*i:]), binary.LittleEndian.Uint16(want[2*i:])
				if g != w && !(isNaN(g) && isNaN(w)) {
					t.Fatalf("%v, n=%d: %v (%#x) → %#x, Go twin %#x", level, n, x[i], math.Float32bits(x[i]), g, w)
				}
			}
			if got[2*n] != 0 || got[2*n+1] != 0 {
				t.Fatalf("%v, n=%d: wrote past the end", level, n)
			}
		}
	}
}
