package quant

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os/exec"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// The MXFP4 golden file is ../shared/golden-next's gpt-oss model, which
// llama.cpp quantized with its MXFP4_MOE mix (the 3-D expert tensors MXFP4,
// the other matrices Q8_0) from the F32 file beside it.
const (
	gptossF32   = "golden-next/models/gptoss-tiny-F32.gguf"
	gptossMXFP4 = "golden-next/models/gptoss-tiny-MXFP4.gguf"
)

func openShared(t *testing.T, rel string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(sharedtest.Path(t, rel))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestE8M0Half checks the halved E8M0 scale against its definition, 2^(e-128),
// for every byte: the normal exponents and the two subnormals.
func TestE8M0Half(t *testing.T) {
	for e := 0; e < 256; e++ {
		if got, want := e8m0Half(uint8(e)), float32(math.Ldexp(1, e-128)); got != want {
			t.Errorf("e8m0Half(%d) = %g, want 2^%d = %g", e, got, e-128, want)
		}
	}
}

// TestDequantizeMXFP4HandMade decodes blocks built from the documented
// layout: every nibble in both halves, at a normal, a subnormal and the
// largest scale.
func TestDequantizeMXFP4HandMade(t *testing.T) {
	e2m1 := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6} // the OCP table
	for _, e := range []uint8{127, 130, 0, 1, 254, 255} {
		b := make([]byte, mxfp4Bytes)
		b[mxfp4E] = e
		for j := 0; j < 16; j++ {
			b[mxfp4QS+j] = byte(j) | byte(15-j)<<4
		}
		got := make([]float32, QK)
		if err := Dequantize(gguf.TypeMXFP4, b, got); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 32; j++ {
			q := j
			if j >= 16 {
				q = 15 - (j - 16)
			}
			want := float32(e2m1[q] * math.Ldexp(1, int(e)-127)) // exact, or ±Inf past float32
			if got[j] != want {
				t.Errorf("e=%d: x[%d] = %g, want %g", e, j, got[j], want)
			}
		}
	}
}

// TestMXFP4Exponent checks the block exponent at the edges of its binades,
// where floorf(log2f(amax)) turns on log2f's rounding: amax = 2^k gives
// exactly k; the float just below it has a log2 of k - 8.6e-8, which rounds
// up to k where the float32 spacing below k is wider than 1.7e-7 (k ≥ 3)
// and stays below k for k = 2 or -1; zero and magnitudes below 2^-125 give
// the values ggml writes on x86.
func TestMXFP4Exponent(t *testing.T) {
	for k := -125; k <= 127; k++ {
		p := float32(math.Ldexp(1, k))
		if got, want := mxfp4Exponent(p), uint8(k+125); got != want {
			t.Errorf("amax 2^%d: e = %d, want %d", k, got, want)
		}
		below := math.Nextafter32(p, 0)
		// float64 tells where float32 log2 of below rounds.
		l := math.Log2(float64(below))
		want := uint8(int32(float32(math.Floor(float64(float32(l)))) + 125))
		if got := mxfp4Exponent(below); got != want {
			t.Errorf("amax just below 2^%d: e = %d, want %d", k, got, want)
		}
		if k >= 3 && want != uint8(k+125) {
			t.Errorf("amax just below 2^%d: log2f should round up to %d", k, k)
		}
		if (k == 2 || k == -1) && want != uint8(k+124) {
			t.Errorf("amax just below 2^%d: log2f should stay below %d", k, k)
		}
	}
	for _, c := range []struct {
		amax float32
		want uint8
	}{
		{0, 0},
		{math.MaxFloat32, 253},              // log2f rounds up to 128
		{float32(math.Ldexp(1, -126)), 255}, // -1 as int32, its low byte
		{math.SmallestNonzeroFloat32, 232},  // -24
	} {
		if got := mxfp4Exponent(c.amax); got != c.want {
			t.Errorf("mxfp4Exponent(%g) = %d, want %d", c.amax, got, c.want)
		}
	}
}

// mxfp4NearestLoop is ggml's best_index_mxfp4 as it is written: every
// table value in index order, the first with the smallest float32 error.
// mxfp4Nearest must give its index on every input.
func mxfp4NearestLoop(x, d float32) uint8 {
	best, bestErr := 0, abs32(float32(float32(mxfp4Values[0])*d)-x)
	for i := 1; i < 16; i++ {
		if err := abs32(float32(float32(mxfp4Values[i])*d) - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}

// TestMXFP4Nearest checks the nearest-value search against ggml's loop
// (mxfp4NearestLoop): on midpoints (ties to the smaller magnitude, 0 rather
// than -0) and clipping by hand, then on every float32 within a few ulps
// of each magnitude and midpoint of the table, random values, and x far
// below d (where the subtraction rounds), at normal, subnormal and
// overflowing scales.
func TestMXFP4Nearest(t *testing.T) {
	d := float32(0.25)
	for _, c := range []struct {
		x    float32
		want uint8
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0}, {0.5 * 0.25, 0}, {-0.5 * 0.25, 0},
		{0.25, 1}, {-0.25, 9}, {5 * 0.25, 4}, {-5 * 0.25, 12}, {10 * 0.25, 6}, {-10 * 0.25, 14},
		{10.001 * 0.25, 7}, {12 * 0.25, 7}, {100, 7}, {-100, 15},
	} {
		if got := mxfp4Nearest(c.x, d); got != c.want {
			t.Errorf("mxfp4Nearest(%g, %g) = %d, want %d", c.x, d, got, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(41, 42))
	checked := 0
	check := func(x, d float32) {
		if math.IsInf(float64(x), 0) {
			return // Quantize refuses infinities
		}
		checked++
		if got, want := mxfp4Nearest(x, d), mxfp4NearestLoop(x, d); got != want {
			t.Fatalf("mxfp4Nearest(%g, %g) = %d, ggml's loop %d", x, d, got, want)
		}
	}
	var points []float64 // the table's magnitudes and the midpoints between them, in units of d
	for k, m := range mxfp4Mags {
		points = append(points, float64(m))
		if k < 7 {
			points = append(points, float64(m+mxfp4Mags[k+1])/2)
		}
	}
	points = append(points, 16, 1e-30)
	for _, e := range []int{0, 1, 2, 100, 127, 128, 200, 252, 253, 254, 255} {
		d := e8m0Half(uint8(e))
		for _, p := range points {
			c := float32(p) * d
			for _, sign := range []float32{1, -1} {
				x := sign * c
				for range 40 {
					check(x, d)
					x = math.Nextafter32(x, float32(math.Inf(1)))
				}
				x = sign * c
				for range 40 {
					check(x, d)
					x = math.Nextafter32(x, float32(math.Inf(-1)))
				}
			}
		}
		for range 20000 {
			check(float32(rng.NormFloat64()*8)*d, d)
			check(float32(math.Ldexp(rng.Float64(), -rng.IntN(60)))*d, d)
		}
	}
	if checked < 400000 {
		t.Fatalf("only %d inputs checked", checked)
	}
}

// TestQuantizeMXFP4 checks blocks that probe the exponent's edges: a zero
// block, one whose largest magnitude sits just below a power of two, the
// largest float32, and a block too small for any exponent (all zeros back).
func TestQuantizeMXFP4(t *testing.T) {
	b := make([]byte, mxfp4Bytes)
	x := make([]float32, QK)
	back := make([]float32, QK)
	quant := func() {
		t.Helper()
		if err := Quantize(gguf.TypeMXFP4, x, b); err != nil {
			t.Fatal(err)
		}
		if err := Dequantize(gguf.TypeMXFP4, b, back); err != nil {
			t.Fatal(err)
		}
	}
	quant()
	if !bytes.Equal(b, make([]byte, mxfp4Bytes)) {
		t.Errorf("zero block: % x, want zeros", b)
	}
	// amax = 6 exactly: e = 2+125, d = 0.5, 6 = 12·d.
	for i := range x {
		x[i] = float32(i%13-6) / 2 * 2 // -6..6 in steps of 1
	}
	quant()
	if b[0] != 127 {
		t.Errorf("amax 6: e = %d, want 127", b[0])
	}
	for i := range x {
		if want := x[i]; math.Abs(float64(x[i])) <= 4 || x[i] == 6 || x[i] == -6 {
			if back[i] != want {
				t.Errorf("amax 6: x[%d] = %g comes back as %g", i, x[i], back[i])
			}
		}
	}
	x[3] = math.MaxFloat32
	quant()
	// log2f rounds up to 128, so d = 2^125: 8·d and 12·d overflow to +Inf
	// (an infinite error in ggml's search too) and the element takes 6·d.
	if want := float32(math.Ldexp(6, 125)); b[0] != 253 || back[3] != want {
		t.Errorf("amax MaxFloat32: e = %d, back %g; want 253 and %g", b[0], back[3], want)
	}
	for i := range x {
		x[i] = float32(math.Ldexp(float64(i+1), -140))
	}
	quant()
	for i, v := range back {
		if v != 0 {
			t.Errorf("tiny block: x[%d] = %g comes back as %g, want 0", i, x[i], v)
		}
	}
	x[0] = float32(math.NaN())
	if err := Quantize(gguf.TypeMXFP4, x, b); err == nil {
		t.Error("a NaN element: no error")
	}
}

// llamarefDequant runs llama.cpp's own dequantization (llamaref dequant) on
// a model and returns each tensor's f32 SHA-256 by name.
func llamarefDequant(t *testing.T, path string) map[string]string {
	t.Helper()
	bin := sharedtest.Llamaref(t)
	out, err := exec.Command(bin, "dequant", path).Output()
	if err != nil {
		t.Fatalf("llamaref dequant %s: %v", path, err)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row struct {
			Name   string `json:"name"`
			SHA256 string `json:"f32_sha256"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("llamaref dequant: %v in %q", err, sc.Text())
		}
		sums[row.Name] = row.SHA256
	}
	return sums
}

// TestDequantizeMXFP4Golden dequantizes every tensor of the MXFP4 golden
// file (mxfp4, q8_0 and f32) and compares the SHA-256 of the float32 bytes
// with llama.cpp's own (ggml's to_float, run by llamaref): bit for bit.
func TestDequantizeMXFP4Golden(t *testing.T) {
	f := openShared(t, gptossMXFP4)
	sums := llamarefDequant(t, sharedtest.Path(t, gptossMXFP4))
	perType := map[gguf.Type]int{}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		want, ok := sums[ti.Name]
		if !ok {
			t.Errorf("%s: not in llamaref's output", ti.Name)
			continue
		}
		if got := f32SHA256(dequantTensor(t, f, ti)); got != want {
			t.Errorf("%s (%v): SHA-256 %s, ggml's %s", ti.Name, ti.Type, got, want)
			continue
		}
		perType[ti.Type]++
	}
	t.Logf("bit-exact tensors per type: %v", perType)
	if perType[gguf.TypeMXFP4] != 6 {
		t.Errorf("%d mxfp4 tensors checked, want the file's 6", perType[gguf.TypeMXFP4])
	}
}

// TestQuantizeMXFP4Golden quantizes the F32 golden source of the MXFP4 file
// to each of its quantized tensors' types (the experts' mxfp4, the other
// matrices' q8_0) and requires llama.cpp's bytes.
func TestQuantizeMXFP4Golden(t *testing.T) {
	src := openShared(t, gptossF32)
	f := openShared(t, gptossMXFP4)
	identical := map[gguf.Type]int{}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Type == gguf.TypeF32 {
			continue
		}
		si, ok := src.Tensor(ti.Name)
		if !ok {
			t.Fatalf("%s: not in the F32 source", ti.Name)
		}
		x := dequantTensor(t, src, si)
		want := f.TensorData(ti)
		got := make([]byte, len(want))
		if err := Quantize(ti.Type, x, got); err != nil {
			t.Errorf("%s: %v", ti.Name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s (%v): %s", ti.Name, ti.Type, firstBlockDiff(ti.Type, got, want))
			continue
		}
		identical[ti.Type]++
	}
	t.Logf("byte-identical tensors per type: %v", identical)
	if identical[gguf.TypeMXFP4] != 6 || identical[gguf.TypeQ8_0] != 10 {
		t.Errorf("checked %d mxfp4 and %d q8_0 tensors, want the file's 6 and 10", identical[gguf.TypeMXFP4], identical[gguf.TypeQ8_0])
	}
}

// mxfp4EdgeScales are the E8M0 exponents at the ends of the scale's range:
// the subnormal halved scales (0, 1), the first normal ones, 1, and the
// largest, whose products overflow to ±Inf (and Inf - Inf to NaN).
var mxfp4EdgeScales = []byte{0, 1, 2, 3, 128, 252, 253, 254, 255}

// TestMXFP4KernelsEdgeScales runs every level's mxfp4 Dot, MatVec and
// MatMul (1 to 40 tokens: on amd64 the x kernels and the GEMM with its
// panel packers) on blocks whose exponents are drawn from
// mxfp4EdgeScales, with the largest quants and activations of ±127, and
// requires the Go twin's bits, NaN and infinities included.
func TestMXFP4KernelsEdgeScales(t *testing.T) {
	const wt = gguf.TypeMXFP4
	vt, _ := VecDotType(wt)
	twin := genericDots[wt]
	rng := rand.New(rand.NewPCG(43, 44))
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		dot, _ := ks.dot(wt)
		mv, _ := ks.matVec(wt)
		mm, _ := ks.matMul(wt)
		for _, sh := range []struct{ n, nrows int }{{64, 3}, {96, 17}, {1152, 21}} {
			rb, _ := wt.RowBytes(sh.n)
			ab, _ := vt.RowBytes(sh.n)
			for _, fill := range []blockFill{fillRandom, fillMax} {
				w := makeWeights(rng, wt, sh.n*sh.nrows, fill)
				for blk := 0; blk < len(w)/mxfp4Bytes; blk++ {
					w[blk*mxfp4Bytes] = mxfp4EdgeScales[rng.IntN(len(mxfp4EdgeScales))]
				}
				const maxTok, ldo = 40, 43
				a := make([]byte, 0, maxTok*ab)
				for range maxTok {
					a = append(a, makeActs(t, rng, vt, sh.n, fill)...)
				}
				name := func(what string) string {
					return level.String() + "/" + what
				}
				want := make([]float32, maxTok*sh.nrows)
				for tok := range maxTok {
					for r := range sh.nrows {
						want[tok*sh.nrows+r] = twin(sh.n, w[r*rb:(r+1)*rb], a[tok*ab:(tok+1)*ab])
					}
				}
				got := make([]float32, sh.nrows)
				mv(sh.n, w, a[:ab], got)
				for r := range sh.nrows {
					if !sameFloatBits(got[r], want[r]) {
						t.Errorf("%s n=%d %v: MatVec row %d: %g, Go twin %g", name("mv"), sh.n, fill, r, got[r], want[r])
					}
					if d := dot(sh.n, w[r*rb:(r+1)*rb], a[:ab]); !sameFloatBits(d, want[r]) {
						t.Errorf("%s n=%d %v: Dot row %d: %g, Go twin %g", name("dot"), sh.n, fill, r, d, want[r])
					}
				}
				for _, ntok := range []int{2, 3, 4, 5, 8, 9, 17, 24, maxTok} {
					out := make([]float32, (ntok-1)*ldo+sh.nrows)
					mm(sh.n, w, sh.nrows, a, ntok, out, ldo)
					bad := 0
					for tok := range ntok {
						for r := range sh.nrows {
							if g, wv := out[tok*ldo+r], want[tok*sh.nrows+r]; !sameFloatBits(g, wv) && bad < 3 {
								bad++
								t.Errorf("%s n=%d %v: MatMul of %d tokens, token %d row %d: %g, Go twin %g", name("mm"), sh.n, fill, ntok, tok, r, g, wv)
							}
						}
					}
				}
			}
		}
	}
}

// sameFloatBits reports whether a and b have the same bits, or are both
// NaN (the sign of a NaN made by Inf - Inf is the hardware's).
func sameFloatBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}
