package tensor

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
)

func TestRMSNorm(t *testing.T) {
	x := []float32{1, -2, 3, -4, 0.5}
	w := []float32{1, 2, 0.5, 1, -1}
	dst := make([]float32, len(x))
	RMSNorm(dst, x, w, 1e-6)
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := 1 / math.Sqrt(ss/float64(len(x))+1e-6)
	for i := range x {
		want := float64(x[i]) * scale * float64(w[i])
		if math.Abs(float64(dst[i])-want) > 1e-6*math.Abs(want)+1e-7 {
			t.Errorf("dst[%d] = %v, want %v", i, dst[i], want)
		}
	}
	// In place.
	RMSNorm(x, x, w, 1e-6)
	for i := range x {
		if x[i] != dst[i] {
			t.Fatalf("in-place RMSNorm differs at %d: %v vs %v", i, x[i], dst[i])
		}
	}
}

func TestExpf(t *testing.T) {
	for _, x := range []float32{0, 1, -1, 0.5, -0.5, 10, -10, 80, -80, 88, 1e-8, 3.14159} {
		got := float64(Expf(x))
		want := math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > 3e-7 {
			t.Errorf("Expf(%v) = %v, want %v (rel err %g)", x, got, want, rel)
		}
	}
	if Expf(0) != 1 {
		t.Errorf("Expf(0) = %v", Expf(0))
	}
	if e := Expf(float32(math.Inf(-1))); e != 0 {
		t.Errorf("Expf(-Inf) = %v, want 0", e)
	}
	if e := Expf(float32(math.Inf(1))); !math.IsInf(float64(e), 1) {
		t.Errorf("Expf(+Inf) = %v, want +Inf", e)
	}
	if !math.IsInf(float64(Expf(200)), 1) || Expf(-200) != 0 {
		t.Errorf("Expf overflow/underflow: %v %v", Expf(200), Expf(-200))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		x := float32(r.Float64()*40 - 20)
		got, want := float64(Expf(x)), math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > 3e-7 {
			t.Fatalf("Expf(%v) = %v, want %v", x, got, want)
		}
	}
}

func TestSwiGLU(t *testing.T) {
	g := []float32{-3, -0.5, 0, 0.5, 3}
	u := []float32{1, 2, 3, 4, 5}
	dst := make([]float32, 5)
	SwiGLU(dst, g, u)
	for i := range g {
		want := float64(g[i]) / (1 + math.Exp(-float64(g[i]))) * float64(u[i])
		if math.Abs(float64(dst[i])-want) > 1e-6 {
			t.Errorf("SwiGLU[%d] = %v, want %v", i, dst[i], want)
		}
	}
}

func TestSoftmax(t *testing.T) {
	x := []float32{1, 2, 3, float32(math.Inf(-1))}
	if err := Softmax(x); err != nil {
		t.Fatal(err)
	}
	e := []float64{math.Exp(-2), math.Exp(-1), 1, 0}
	sum := e[0] + e[1] + e[2]
	for i := range x {
		if math.Abs(float64(x[i])-e[i]/sum) > 1e-6 {
			t.Errorf("softmax[%d] = %v, want %v", i, x[i], e[i]/sum)
		}
	}
	if err := Softmax(nil); err == nil {
		t.Error("empty softmax: no error")
	}
}

type countJob struct{ hits []atomic.Int32 }

func (c *countJob) Do(lo, hi int) {
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
}

func TestPoolCoversEveryIndexOnce(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	var wg sync.WaitGroup
	for g := range 4 { // concurrent callers share one pool
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range []int{1, 2, 3, 17, 100, 1000 + g} {
				for _, grain := range []int{0, 1, 16} {
					j := &countJob{hits: make([]atomic.Int32, n)}
					p.Run(n, grain, j)
					for i := range n {
						if h := j.hits[i].Load(); h != 1 {
							t.Errorf("n=%d grain=%d: index %d done %d times", n, grain, i, h)
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
}

func f32bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func TestMatrixMul(t *testing.T) {
	const rows, cols, n = 1100, 64, 5 // enough rows to be split among threads
	r := rand.New(rand.NewPCG(3, 4))
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	m, err := NewMatrix("w", gguf.TypeF32, rows, cols, f32bytes(w))
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 2, 4} {
		p := NewPool(threads)
		var s Scratch
		dst := make([]float32, n*rows)
		if err := m.Mul(p, &s, dst, x, n); err != nil {
			t.Fatal(err)
		}
		one := make([]float32, rows)
		for tk := range n {
			if err := m.Mul(p, &s, one, x[tk*cols:], 1); err != nil {
				t.Fatal(err)
			}
			for rr := range rows {
				var want float64
				for c := range cols {
					want += float64(w[rr*cols+c]) * float64(x[tk*cols+c])
				}
				got := dst[tk*rows+rr]
				if math.Abs(float64(got)-want) > 1e-4 {
					t.Errorf("threads %d: out[%d][%d] = %v, want %v", threads, tk, rr, got, want)
				}
				if one[rr] != got {
					t.Errorf("threads %d: single-row product differs from batch at [%d][%d]", threads, tk, rr)
				}
			}
		}
		p.Close()
	}
	row := make([]float32, cols)
	if err := m.Row(3, row); err != nil {
		t.Fatal(err)
	}
	for c := range cols {
		if row[c] != w[3*cols+c] {
			t.Fatalf("Row(3)[%d] = %v, want %v", c, row[c], w[3*cols+c])
		}
	}
	if err := m.Row(rows, row); err == nil {
		t.Error("Row out of range: no error")
	}
}

func TestNewMatrixErrors(t *testing.T) {
	cases := []struct {
		name       string
		typ        gguf.Type
		rows, cols int
		bytes      int
	}{
		{"short data", gguf.TypeF32, 2, 4, 31},
		{"zero rows", gguf.TypeF32, 0, 4, 0},
		{"partial block", gguf.TypeQ4_K, 1, 100, 144},
		{"partial mxfp4 block", gguf.TypeMXFP4, 1, 48, 34},
		{"short mxfp4 data", gguf.TypeMXFP4, 2, 64, 67},
		{"unknown type", gguf.Type(99), 1, 4, 16},
	}
	for _, c := range cases {
		if _, err := NewMatrix(c.name, c.typ, c.rows, c.cols, make([]byte, c.bytes)); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestExpfScalePath checks Expf's float32 scaling fast path against the
// float64 Ldexp scaling over every 389th float32 in the range where the
// result is finite and not flushed, subnormal results included.
func TestExpfScalePath(t *testing.T) {
	ref := func(x float32) float32 {
		const r = 0x1.8p23
		z := fma32(x, 0x1.715476p+0, r)
		n := z - r
		b := fnma32(n, 0x1.7f7d1cp-20, fnma32(n, 0x1.62e4p-1, x))
		u := b * b
		j := fma32(
			fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)),
			u,
			fma32(0x1.ffffecp-1, b, 1))
		return float32(math.Ldexp(float64(j), int(n)))
	}
	checked := 0
	// Bit patterns of [-110, -0] and [0, 90].
	for _, span := range [][2]uint32{{1 << 31, math.Float32bits(-110)}, {0, math.Float32bits(90)}} {
		lo, hi := span[0], span[1]
		for b := lo; b <= hi; b += 389 {
			x := math.Float32frombits(b)
			if got, want := Expf(x), ref(x); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("Expf(%v) = %v (%#x), float64 scaling gives %v (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
			}
			checked++
		}
	}
	if checked < 2e5 {
		t.Fatalf("only %d inputs checked", checked)
	}
}

func quantRows(t *testing.T, typ gguf.Type, rows, cols int, r *rand.Rand) (*Matrix, []float32) {
	t.Helper()
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	rb, err := typ.RowBytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, rows*rb)
	if typ == gguf.TypeF32 {
		data = f32bytes(w)
	} else if err := quant.Quantize(typ, w, data); err != nil {
		t.Fatal(err)
	}
	m, err := NewMatrix(typ.String(), typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m, w
}

// TestMulInto checks that fused products (shared and separate activation
// conversions) and the fused SwiGLU give exactly what separate products
// give, for one and several tokens and several thread counts.
func TestMulInto(t *testing.T) {
	const cols = 512
	r := rand.New(rand.NewPCG(5, 6))
	a, _ := quantRows(t, gguf.TypeQ4_K, 700, cols, r)
	b, _ := quantRows(t, gguf.TypeQ6_K, 300, cols, r)
	c, _ := quantRows(t, gguf.TypeQ8_0, 200, cols, r)
	up, _ := quantRows(t, gguf.TypeQ4_K, 700, cols, r)
	for _, threads := range []int{1, 2, 3} {
		p := NewPool(threads)
		for _, n := range []int{1, 5} {
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			var s Scratch
			want := func(m *Matrix) []float32 {
				d := make([]float32, n*m.Rows)
				if err := m.Mul(p, &s, d, x, n); err != nil {
					t.Fatal(err)
				}
				return d
			}
			wa, wb, wc, wu := want(a), want(b), want(c), want(up)
			da, db, dc := make([]float32, n*a.Rows), make([]float32, n*b.Rows), make([]float32, n*c.Rows)
			if err := MulInto(p, &s, x, n, Out{a, da}, Out{b, db}, Out{c, dc}); err != nil {
				t.Fatal(err)
			}
			for _, pr := range []struct {
				name      string
				got, want []float32
			}{{"q4_K", da, wa}, {"q6_K", db, wb}, {"q8_0", dc, wc}} {
				for i := range pr.want {
					if pr.got[i] != pr.want[i] {
						t.Fatalf("threads %d n %d: fused %s out[%d] = %v, alone %v", threads, n, pr.name, i, pr.got[i], pr.want[i])
					}
				}
			}
			g, u, dst := make([]float32, n*a.Rows), make([]float32, n*a.Rows), make([]float32, n*a.Rows)
			if err := MulSwiGLU(p, &s, dst, g, u, a, up, x, n); err != nil {
				t.Fatal(err)
			}
			ref := make([]float32, len(wa))
			SwiGLU(ref, wa, wu)
			for i := range ref {
				if dst[i] != ref[i] {
					t.Fatalf("threads %d n %d: MulSwiGLU out[%d] = %v, want %v", threads, n, i, dst[i], ref[i])
				}
			}
		}
		p.Close()
	}
	var s Scratch
	p := NewPool(1)
	defer p.Close()
	small, _ := quantRows(t, gguf.TypeQ8_0, 4, 256, r)
	if err := MulInto(p, &s, make([]float32, cols), 1, Out{a, make([]float32, a.Rows)}, Out{small, make([]float32, 4)}); err == nil {
		t.Error("products with different column counts: no error")
	}
	if err := MulInto(p, &s, make([]float32, cols), 1); err == nil {
		t.Error("no products: no error")
	}
	if err := MulSwiGLU(p, &s, make([]float32, 700), make([]float32, 700), make([]float32, 300), a, b, make([]float32, cols), 1); err == nil {
		t.Error("SwiGLU of matrices with different row counts: no error")
	}
}

// TestPoolRunAllocates nothing: a Run reuses the pool's task.
func TestPoolRunAllocatesNothing(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	j := &countJob{hits: make([]atomic.Int32, 4096)}
	if a := testing.AllocsPerRun(100, func() { p.Run(4096, 16, j) }); a != 0 {
		t.Errorf("Run allocates %v times", a)
	}
}

// TestFMA32 checks the round-to-odd float32 FMA against exact rational
// arithmetic, on random values and on sums built to land on float32
// halfway points, where a plain float64 FMA followed by a float32
// conversion can round twice.
func TestFMA32(t *testing.T) {
	exact := func(a, b, c float32) float32 {
		r := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		r.Mul(r, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		r.Add(r, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		f, _ := r.Float32()
		return f
	}
	r := rand.New(rand.NewPCG(9, 10))
	check := func(a, b, c float32) {
		if got, want := fma32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	for range 20000 {
		check(float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()))
	}
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range [][4]float32{{inf, 2, 1, inf}, {-inf, 2, 1, -inf}, {2, 1, -inf, -inf}, {0, 5, 0, 0}, {nan, 1, 1, nan}, {inf, 0, 1, nan}} {
		got := fma32(c[0], c[1], c[2])
		if c[3] != c[3] {
			if got == got {
				t.Errorf("fma32(%g, %g, %g) = %g, want NaN", c[0], c[1], c[2], got)
			}
		} else if got != c[3] {
			t.Errorf("fma32(%g, %g, %g) = %g, want %g", c[0], c[1], c[2], got, c[3])
		}
	}
	// a·b = 2^-24·(1 - 2^-46) and c = 1 + 2^-23: the exact sum lies just
	// below the float32 halfway point 1 + 2^-23 + 2^-24, but rounds to it
	// in float64, from where ties-to-even would go up to 1 + 2^-22.
	for k := -20; k <= 20; k += 5 {
		s := float32(math.Ldexp(1, k))
		a, b, c := float32(1+0x1p-23), float32(0x1p-24*(1-0x1p-23))*s, float32(1+0x1p-23)*s
		if fma32(a, b, c) != c {
			t.Errorf("fma32 at scale 2^%d rounds twice: %g, want %g", k, fma32(a, b, c), c)
		}
		check(a, b, c)
		check(-a, b, -c)
	}
}

// TestVectorExp checks the vectorized SwiGLU and ExpShift against their
// one-at-a-time Go loops bit for bit, including lengths that are not a
// multiple of eight and values whose exponentials leave the normal range.
func TestVectorExp(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 7, 8, 9, 64, 1000, 4099} {
		g, u := make([]float32, n), make([]float32, n)
		for i := range g {
			g[i] = float32(r.NormFloat64() * 8)
			u[i] = float32(r.NormFloat64())
			if i%97 == 5 {
				g[i] = []float32{100, -100, 88, -88, 90, float32(math.NaN()), float32(math.Inf(-1))}[i%7]
			}
		}
		got, want := make([]float32, n), make([]float32, n)
		SwiGLU(got, g, u)
		swigluGo(want, g, u)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: SwiGLU[%d] (g=%g) = %g, Go loop %g", n, i, g[i], got[i], want[i])
			}
		}
		copy(got, g)
		copy(want, g)
		ExpShift(got, 3.5)
		expShiftGo(want, 3.5)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: ExpShift[%d] (x=%g) = %g, Go loop %g", n, i, g[i], got[i], want[i])
			}
		}
	}
}

// BenchmarkSwiGLU is the feed-forward activation over one 3B-model row
// (11008 values).
func BenchmarkSwiGLU(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	g, u, d := make([]float32, 11008), make([]float32, 11008), make([]float32, 11008)
	for i := range g {
		g[i], u[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			SwiGLU(d, g, u)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			swigluGo(d, g, u)
		}
	})
}

// GEGLU follows ggml: GELU looked up at the float16 rounding of the input
// and rounded to float16, 0 below -10 and the identity above 10.
func TestGEGLU(t *testing.T) {
	gate := []float32{-20, -10, -3, -0.5, 0, 0.001, 0.5, 1, 3, 9.99, 10, 25}
	up := make([]float32, len(gate))
	for i := range up {
		up[i] = 1.5
	}
	dst := make([]float32, len(gate))
	GEGLU(dst, gate, up)
	for i, x := range gate {
		var want float32
		switch {
		case x <= -10:
			want = 0
		case x >= 10:
			want = x * 1.5
		default:
			want = FromF16(ToF16(GELU(FromF16(ToF16(x))))) * 1.5
		}
		if dst[i] != want {
			t.Errorf("GEGLU(%v) = %v, want %v", x, dst[i], want)
		}
		// The tanh approximation is within float16 rounding of the exact
		// formula in float64.
		x64 := float64(FromF16(ToF16(x)))
		exact := 0.5 * x64 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x64+0.044715*x64*x64*x64)))
		if x > -10 && x < 10 && math.Abs(float64(dst[i])/1.5-exact) > 1e-3*(1+math.Abs(exact)) {
			t.Errorf("GEGLU(%v)/1.5 = %v, formula %v", x, dst[i]/1.5, exact)
		}
	}
}

// TestRMSNormRows gives every row RMSNorm's bits, in place or not, for row
// counts around the groups of four.
func TestRMSNormRows(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	for _, d := range []int{1, 32, 128, 1000} {
		w := make([]float32, d)
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		for _, rows := range []int{1, 3, 4, 5, 9} {
			x := make([]float32, rows*d)
			for i := range x {
				x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(20)-10)))
			}
			got := make([]float32, len(x))
			RMSNormRows(got, x, w, 1e-6)
			in := append([]float32(nil), x...)
			RMSNormRows(in, in, w, 1e-6)
			for k := range rows {
				want := make([]float32, d)
				RMSNorm(want, x[k*d:(k+1)*d], w, 1e-6)
				for i := range want {
					if math.Float32bits(got[k*d+i]) != math.Float32bits(want[i]) || math.Float32bits(in[k*d+i]) != math.Float32bits(want[i]) {
						t.Fatalf("d=%d rows=%d: row %d element %d: %g (in place %g), RMSNorm %g", d, rows, k, i, got[k*d+i], in[k*d+i], want[i])
					}
				}
			}
		}
	}
}

// TestQuantizedMatrix checks the 32-quant matrices the MoE models bring
// beside Q4_0 (MXFP4, gpt-oss's experts) through every product: Row is
// quant's dequantization, Mul of 1 to 40 tokens (MatVec, the small-batch
// kernels, and the prefill GEMM from two tokens and a panel's rows on)
// gives each token exactly the bits of that token alone and is within float
// rounding of the float64 product of the dequantized weights and
// activations, for several thread counts and row counts below, at and past
// the GEMM's panel; and MulInto fuses the type with Q8_0 (the same
// activation type) without changing a bit.
func TestQuantizedMatrix(t *testing.T) {
	const cols = 256
	for _, typ := range []gguf.Type{gguf.TypeQ4_0, gguf.TypeMXFP4} {
		for _, rows := range []int{5, 16, 1100} {
			r := rand.New(rand.NewPCG(uint64(typ), uint64(rows)))
			m, _ := quantRows(t, typ, rows, cols, r)
			deq := make([]float32, rows*cols)
			for i := range rows {
				if err := m.Row(i, deq[i*cols:(i+1)*cols]); err != nil {
					t.Fatal(err)
				}
			}
			want := make([]float32, rows*cols)
			if err := quant.Dequantize(typ, m.Data, want); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Float32bits(deq[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v: Row gives %g at %d, Dequantize %g", typ, deq[i], i, want[i])
				}
			}
			const maxTok = 40
			x := make([]float32, maxTok*cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			act := make([]float32, len(x)) // the activations as the kernels see them (q8_0)
			ab, _ := m.ActivationType().RowBytes(cols)
			q := make([]byte, ab)
			for tok := range maxTok {
				if err := quant.QuantizeActivations(m.ActivationType(), x[tok*cols:(tok+1)*cols], q); err != nil {
					t.Fatal(err)
				}
				if err := quant.Dequantize(m.ActivationType(), q, act[tok*cols:(tok+1)*cols]); err != nil {
					t.Fatal(err)
				}
			}
			for _, threads := range []int{1, 3} {
				p := NewPool(threads)
				var s Scratch
				alone := make([]float32, maxTok*rows)
				for tok := range maxTok {
					if err := m.Mul(p, &s, alone[tok*rows:(tok+1)*rows], x[tok*cols:], 1); err != nil {
						t.Fatal(err)
					}
				}
				for tok := range maxTok {
					for rr := range rows {
						var dot, mag float64
						for c := range cols {
							v := float64(deq[rr*cols+c]) * float64(act[tok*cols+c])
							dot += v
							mag += math.Abs(v)
						}
						if got := float64(alone[tok*rows+rr]); math.Abs(got-dot) > 3e-6*mag {
							t.Fatalf("%v rows=%d: token %d row %d: %g, float64 product %g", typ, rows, tok, rr, got, dot)
						}
					}
				}
				for _, n := range []int{2, 3, 5, 8, 23, 24, maxTok} {
					got := make([]float32, n*rows)
					if err := m.Mul(p, &s, got, x, n); err != nil {
						t.Fatal(err)
					}
					for i, g := range got {
						if math.Float32bits(g) != math.Float32bits(alone[i]) {
							t.Fatalf("%v rows=%d threads=%d: %d tokens: token %d row %d: %g, alone %g", typ, rows, threads, n, i/rows, i%rows, g, alone[i])
						}
					}
				}
				c, _ := quantRows(t, gguf.TypeQ8_0, 7, cols, r)
				wc := make([]float32, 3*c.Rows)
				if err := c.Mul(p, &s, wc, x, 3); err != nil {
					t.Fatal(err)
				}
				dm, dc := make([]float32, 3*rows), make([]float32, 3*c.Rows)
				if err := MulInto(p, &s, x, 3, Out{m, dm}, Out{c, dc}); err != nil {
					t.Fatal(err)
				}
				for i := range dm {
					if math.Float32bits(dm[i]) != math.Float32bits(alone[i]) {
						t.Fatalf("%v rows=%d: fused with q8_0, out[%d] = %g, alone %g", typ, rows, i, dm[i], alone[i])
					}
				}
				for i := range dc {
					if dc[i] != wc[i] {
						t.Fatalf("%v rows=%d: the fused q8_0 out[%d] = %g, alone %g", typ, rows, i, dc[i], wc[i])
					}
				}
				p.Close()
			}
		}
	}
}
