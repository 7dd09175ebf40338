package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// dotTypes are the weight types with a dot product.
var dotTypes = []gguf.Type{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeIQ4_NL, gguf.TypeMXFP4,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
}

// halfFields lists the byte offsets of the f16 scale fields in one block of a
// quantized type (random bytes there could be NaN or Inf).
func halfFields(t gguf.Type) []int {
	switch t {
	case gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ8_0, gguf.TypeIQ4_NL:
		return []int{0}
	case gguf.TypeQ4_1, gguf.TypeQ5_1, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ8_1:
		return []int{0, 2}
	case gguf.TypeQ2_K:
		return []int{80, 82}
	case gguf.TypeQ3_K:
		return []int{108}
	case gguf.TypeQ6_K:
		return []int{208}
	}
	return nil
}

// randE8M0 returns an MXFP4 block's E8M0 scale for fill f, the
// counterpart of randHalf: 2^-8 to 2^1 (halved: 2^(e-128)) at random, 1
// for fillMax, one power of two for fillExact. fillNegScale has no negative
// scale to give (E8M0 is unsigned): a random one. The extreme exponents
// (0, 1, 254, 255) have their own tests (TestMXFP4KernelsEdgeScales).
func randE8M0(rng *rand.Rand, f blockFill) byte {
	switch f {
	case fillMax:
		return 128
	case fillExact:
		return 126
	}
	return byte(120 + rng.IntN(10))
}

// blockFill says how a test block is made.
type blockFill int

const (
	fillRandom   blockFill = iota // random quants, random finite scales of both signs
	fillZero                      // all zero bytes
	fillMax                       // every quant bit set, scales ±1
	fillExact                     // random quants, one power-of-two scale: every float step is exact
	fillNegScale                  // random quants, negative scales
)

func (f blockFill) String() string {
	return [...]string{"random", "zero", "max", "exact", "negscale"}[f]
}

// randHalf returns f16 bits of a random scale for fill f.
func randHalf(rng *rand.Rand, f blockFill) uint16 {
	switch f {
	case fillMax:
		if rng.IntN(2) == 0 {
			return 0x3c00 // 1
		}
		return 0xbc00 // -1
	case fillExact:
		return 0x3400 // 0.25: one power of two for every block, so every partial sum is exact
	case fillNegScale:
		return halfBits(-float32(math.Ldexp(0.5+rng.Float64(), -rng.IntN(6)-2)))
	}
	v := float32(math.Ldexp(0.5+rng.Float64(), -rng.IntN(6)-2))
	if rng.IntN(4) == 0 {
		v = -v
	}
	return halfBits(v)
}

// makeWeights returns n elements of type t filled per f.
func makeWeights(rng *rand.Rand, t gguf.Type, n int, f blockFill) []byte {
	nb, _ := t.RowBytes(n)
	b := make([]byte, nb)
	switch t {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16:
		for i := 0; i < n; i++ {
			var v float32
			switch f {
			case fillRandom, fillNegScale:
				v = float32(rng.NormFloat64())
			case fillMax:
				v = 60000
			case fillExact:
				v = float32(rng.IntN(256)-128) / 16
			}
			switch t {
			case gguf.TypeF32:
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
			case gguf.TypeF16:
				binary.LittleEndian.PutUint16(b[2*i:], halfBits(v))
			default:
				binary.LittleEndian.PutUint16(b[2*i:], f32ToBF16(v))
			}
		}
		return b
	}
	switch f {
	case fillZero:
		return b
	case fillMax:
		for i := range b {
			b[i] = 0xff
		}
	default:
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	}
	bb := t.BlockBytes()
	for blk := 0; blk < len(b)/bb; blk++ {
		for _, off := range halfFields(t) {
			binary.LittleEndian.PutUint16(b[blk*bb+off:], randHalf(rng, f))
		}
		if t == gguf.TypeMXFP4 && f != fillZero {
			b[blk*bb] = randE8M0(rng, f)
		}
	}
	return b
}

// makeActs returns n activations in type vt: f32 values rounded with
// QuantizeActivations, or (fillExact) quant blocks built directly with
// power-of-two scales and small quants.
func makeActs(t testing.TB, rng *rand.Rand, vt gguf.Type, n int, f blockFill) []byte {
	t.Helper()
	nb, _ := vt.RowBytes(n)
	b := make([]byte, nb)
	if f == fillExact && vt.BlockSize() > 1 {
		bb := vt.BlockBytes()
		for blk := 0; blk < nb/bb; blk++ {
			x := b[blk*bb : (blk+1)*bb]
			var qs []byte
			switch vt {
			case gguf.TypeQ8_K:
				binary.LittleEndian.PutUint32(x, math.Float32bits(0.125))
				qs = x[4:260]
			case gguf.TypeQ8_0:
				binary.LittleEndian.PutUint16(x, randHalf(rng, fillExact))
				qs = x[2:34]
			case gguf.TypeQ8_1:
				binary.LittleEndian.PutUint16(x, randHalf(rng, fillExact))
				qs = x[4:36]
			}
			var sum int32
			for i := range qs {
				q := int8(rng.IntN(31) - 15)
				qs[i] = byte(q)
				sum += int32(q)
				if vt == gguf.TypeQ8_K && i%16 == 15 {
					binary.LittleEndian.PutUint16(x[260+2*(i/16):], uint16(int16(sum)))
					sum = 0
				}
			}
			if vt == gguf.TypeQ8_1 {
				binary.LittleEndian.PutUint16(x[2:], halfBits(f16(x)*float32(sum)))
			}
		}
		return b
	}
	xs := make([]float32, n)
	for i := range xs {
		switch f {
		case fillZero:
		case fillMax:
			xs[i] = 100
			if rng.IntN(2) == 0 {
				xs[i] = -100
			}
		case fillExact:
			xs[i] = float32(rng.IntN(64)-32) / 8
		default:
			xs[i] = float32(rng.NormFloat64())
			if rng.IntN(50) == 0 {
				xs[i] *= 20 // an outlier, as real activations have
			}
		}
	}
	if err := QuantizeActivations(vt, xs, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// refDot is the float64 dot product of Dequantize(w) and Dequantize(a).
func refDot(t *testing.T, wt, vt gguf.Type, n int, w, a []byte) (dot, mag float64) {
	t.Helper()
	wf, af := make([]float32, n), make([]float32, n)
	if err := Dequantize(wt, w, wf); err != nil {
		t.Fatal(err)
	}
	if err := Dequantize(vt, a, af); err != nil {
		t.Fatal(err)
	}
	for i := range wf {
		p := float64(wf[i]) * float64(af[i])
		dot += p
		mag += math.Abs(p)
	}
	if vt == gguf.TypeQ8_1 {
		// The weight's offset m meets the activations through the stored
		// s = f16(d·Σq), not through Σ of the dequantized activations: the
		// difference is llama.cpp's too.
		for blk := 0; blk < n/32; blk++ {
			m := float64(f16(w[blk*wt.BlockBytes()+2:]))
			var sum float64
			for _, v := range af[32*blk : 32*blk+32] {
				sum += float64(v)
			}
			c := m * (float64(f16(a[36*blk+2:])) - sum)
			dot += c
			mag += math.Abs(c)
		}
	}
	return dot, mag
}

// testLengths returns row lengths of several blocks for type t.
func testLengths(t gguf.Type) []int {
	bs := t.BlockSize()
	switch bs {
	case 1:
		return []int{1, 7, 64, 96, 333, 1024}
	case 32:
		return []int{32, 96, 256, 2048}
	}
	return []int{256, 768, 2048}
}

var allFills = []blockFill{fillRandom, fillZero, fillMax, fillExact, fillNegScale}

// TestDotReference checks the pure Go kernels against the float64 dot
// product of the dequantized weights and activations.
func TestDotReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, wt := range dotTypes {
		vt, err := VecDotType(wt)
		if err != nil {
			t.Fatal(err)
		}
		dot := genericDots[wt]
		for _, n := range testLengths(wt) {
			for _, f := range allFills {
				for rep := 0; rep < 3; rep++ {
					w := makeWeights(rng, wt, n, f)
					a := makeActs(t, rng, vt, n, f)
					want, mag := refDot(t, wt, vt, n, w, a)
					got := float64(dot(n, w, a))
					// f32 rounding of each block's scale product and of
					// the running sum: a few ulps of the magnitude.
					tol := 3e-6*mag + 1e-30
					if math.Abs(got-want) > tol || math.IsNaN(got) {
						t.Errorf("%v·%v n=%d %v #%d: got %g, want %g (|diff| %g > %g)", wt, vt, n, f, rep, got, want, math.Abs(got-want), tol)
					}
				}
			}
		}
	}
}

// TestKernelVariants runs every kernel of every dispatch level this CPU
// supports against its pure Go twin: bit-identical on the exact blocks (whose
// sums are exact in float32 in any order), within float rounding elsewhere.
func TestKernelVariants(t *testing.T) {
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		t.Run(level.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(level)))
			for _, wt := range dotTypes {
				vt, _ := VecDotType(wt)
				dot, err := ks.dot(wt)
				if err != nil {
					t.Fatal(err)
				}
				twin := genericDots[wt]
				for _, n := range append(testLengths(wt), 4*testLengths(wt)[len(testLengths(wt))-1]) {
					for _, f := range allFills {
						for rep := 0; rep < 3; rep++ {
							w := makeWeights(rng, wt, n, f)
							a := makeActs(t, rng, vt, n, f)
							got, want := dot(n, w, a), twin(n, w, a)
							if f == fillExact && wt.BlockSize() > 1 {
								if got != want {
									t.Errorf("%v n=%d %v #%d: got %g, Go twin %g: integer sums differ", wt, n, f, rep, got, want)
								}
								continue
							}
							_, mag := refDot(t, wt, vt, n, w, a)
							if d := math.Abs(float64(got) - float64(want)); d > 3e-6*mag || math.IsNaN(float64(got)) != math.IsNaN(float64(want)) {
								t.Errorf("%v n=%d %v #%d: got %g, Go twin %g (|diff| %g, magnitude %g)", wt, n, f, rep, got, want, d, mag)
							}
						}
					}
				}
			}
		})
	}
}

// TestMatVecMatMul checks the multi-row kernels against Dot, row by row.
func TestMatVecMatMul(t *testing.T) {
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		t.Run(level.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, uint64(level)))
			for _, wt := range dotTypes {
				vt, _ := VecDotType(wt)
				for _, n := range testLengths(wt)[1:3] {
					rb, _ := wt.RowBytes(n)
					ab, _ := vt.RowBytes(n)
					const nrows, ntok, ldo = 13, 5, 17
					w := makeWeights(rng, wt, n*nrows, fillRandom)
					a := make([]byte, 0, ab*ntok)
					for range ntok {
						a = append(a, makeActs(t, rng, vt, n, fillRandom)...)
					}
					dot, _ := ks.dot(wt)
					mv, _ := ks.matVec(wt)
					mm, _ := ks.matMul(wt)
					out := make([]float32, nrows)
					mv(n, w, a[:ab], out)
					// Kernels may sum in other orders: compare within float
					// rounding of the sum of |terms|.
					near := func(got, want float32, r, tok int) bool {
						_, mag := refDot(t, wt, vt, n, w[r*rb:(r+1)*rb], a[tok*ab:(tok+1)*ab])
						return math.Abs(float64(got)-float64(want)) <= 3e-6*mag+1e-30
					}
					for r := range out {
						if want := dot(n, w[r*rb:(r+1)*rb], a[:ab]); !near(out[r], want, r, 0) {
							t.Errorf("%v MatVec row %d: %g, Dot %g", wt, r, out[r], want)
						}
					}
					res := make([]float32, (ntok-1)*ldo+nrows)
					for i := range res {
						res[i] = float32(math.NaN())
					}
					mm(n, w, nrows, a, ntok, res, ldo)
					for tok := range ntok {
						for r := range nrows {
							want := dot(n, w[r*rb:(r+1)*rb], a[tok*ab:(tok+1)*ab])
							if got := res[tok*ldo+r]; !near(got, want, r, tok) {
								t.Errorf("%v MatMul tok %d row %d: %g, Dot %g", wt, tok, r, got, want)
							}
						}
					}
				}
			}
		})
	}
}

func TestVecDotType(t *testing.T) {
	tests := []struct {
		w, want gguf.Type
	}{
		{gguf.TypeQ2_K, gguf.TypeQ8_K}, {gguf.TypeQ3_K, gguf.TypeQ8_K}, {gguf.TypeQ4_K, gguf.TypeQ8_K},
		{gguf.TypeQ5_K, gguf.TypeQ8_K}, {gguf.TypeQ6_K, gguf.TypeQ8_K},
		{gguf.TypeQ4_0, gguf.TypeQ8_0}, {gguf.TypeQ5_0, gguf.TypeQ8_0}, {gguf.TypeQ8_0, gguf.TypeQ8_0},
		{gguf.TypeIQ4_NL, gguf.TypeQ8_0}, {gguf.TypeMXFP4, gguf.TypeQ8_0}, {gguf.TypeQ4_1, gguf.TypeQ8_1}, {gguf.TypeQ5_1, gguf.TypeQ8_1},
		{gguf.TypeF16, gguf.TypeF16}, {gguf.TypeBF16, gguf.TypeBF16}, {gguf.TypeF32, gguf.TypeF32},
	}
	for _, tt := range tests {
		got, err := VecDotType(tt.w)
		if err != nil || got != tt.want {
			t.Errorf("VecDotType(%v) = %v, %v; want %v", tt.w, got, err, tt.want)
		}
		if _, err := Dot(tt.w); err != nil {
			t.Errorf("Dot(%v): %v", tt.w, err)
		}
	}
	for _, w := range []gguf.Type{gguf.TypeQ8_K, gguf.TypeIQ2_XXS, gguf.TypeI32, gguf.Type(999)} {
		if _, err := VecDotType(w); err == nil {
			t.Errorf("VecDotType(%v): no error", w)
		}
		if _, err := Dot(w); err == nil {
			t.Errorf("Dot(%v): no error", w)
		}
	}
}

// TestNoAllocs: the kernels run in the decode loop, where nothing may
// allocate.
func TestNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		for _, wt := range dotTypes {
			vt, _ := VecDotType(wt)
			n := testLengths(wt)[1]
			const nrows, ntok = 6, 5
			w := makeWeights(rng, wt, n*nrows, fillRandom)
			x := make([]float32, n*ntok)
			ab, _ := vt.RowBytes(n)
			a := make([]byte, ab*ntok)
			out := make([]float32, nrows*ntok)
			dot, _ := ks.dot(wt)
			mv, _ := ks.matVec(wt)
			mm, _ := ks.matMul(wt)
			allocs := testing.AllocsPerRun(10, func() {
				for tok := range ntok {
					if err := QuantizeActivations(vt, x[tok*n:(tok+1)*n], a[tok*ab:(tok+1)*ab]); err != nil {
						t.Fatal(err)
					}
				}
				out[0] = dot(n, w, a)
				mv(n, w, a, out[:nrows])
				mm(n, w, nrows, a, ntok, out, nrows)
			})
			if allocs != 0 {
				t.Errorf("%v %v: %v allocations per run, want 0", level, wt, allocs)
			}
		}
	}
}
