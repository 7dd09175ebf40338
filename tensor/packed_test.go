package tensor

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// randFloatMatrix makes a rows×cols matrix of type t (F32 or F16) with
// N(0,1) weights.
func randFloatMatrix(t *testing.T, r *rand.Rand, name string, typ gguf.Type, rows, cols int) *Matrix {
	t.Helper()
	es := elemBytes(typ)
	data := make([]byte, rows*cols*es)
	for i := range rows * cols {
		v := float32(r.NormFloat64())
		if typ == gguf.TypeF16 {
			binary.LittleEndian.PutUint16(data[2*i:], ToF16(v))
		} else {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
	}
	m, err := NewMatrix(name, typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPackedMatchesTwin holds the packed product (the assembly where the
// CPU has it) to its Go twin bit for bit, over shapes with partial slabs,
// partial tiles and several stacked matrices, and to Matrix.Mul within
// float32 rounding.
func TestPackedMatchesTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pool := NewPool(3)
	defer pool.Close()
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16} {
		for _, c := range []struct {
			rows []int
			cols int
			n    []int
		}{
			{[]int{32}, 1, []int{1, 12}},
			{[]int{40, 8}, 7, []int{1, 5, 12, 13}},
			{[]int{64, 64, 64}, 96, []int{11, 24, 25, 100}},
			{[]int{100}, 33, []int{3, 36, 37}},
		} {
			var ms []*Matrix
			for i, rows := range c.rows {
				ms = append(ms, randFloatMatrix(t, r, "m"+string(rune('a'+i)), typ, rows, c.cols))
			}
			size, err := PackedBytes(ms...)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Pack(make([]byte, size), ms...)
			if err != nil {
				t.Fatal(err)
			}
			var s PackScratch
			var ms2 Scratch
			for _, n := range c.n {
				x := make([]float32, n*c.cols)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				dsts := make([][]float32, len(ms))
				for i, m := range ms {
					dsts[i] = make([]float32, n*m.Rows)
				}
				outs := make([]PackedOut, len(ms))
				for i := range outs {
					outs[i].Dst = dsts[i]
				}
				if err := p.MulInto(pool, &s, x, n, outs...); err != nil {
					t.Fatal(err)
				}
				xr := x
				if typ == gguf.TypeF16 {
					xr = make([]float32, len(x))
					for i, v := range x {
						xr[i] = RoundF16(v)
					}
				}
				for i, m := range ms {
					want := packedReference(m, xr, n)
					for k := range want {
						if math.Float32bits(dsts[i][k]) != math.Float32bits(want[k]) {
							t.Fatalf("%v rows %v cols %d n %d: matrix %d output %d = %v, the Go twin's %v",
								typ, c.rows, c.cols, n, i, k, dsts[i][k], want[k])
						}
					}
					mul := make([]float32, n*m.Rows)
					if err := m.Mul(pool, &ms2, mul, x, n); err != nil {
						t.Fatal(err)
					}
					for k := range mul {
						if d := math.Abs(float64(mul[k] - want[k])); d > 1e-4*math.Sqrt(float64(c.cols)) {
							t.Fatalf("%v rows %v cols %d n %d: output %d = %v, Matrix.Mul %v", typ, c.rows, c.cols, n, k, want[k], mul[k])
						}
					}
				}
			}
		}
	}
}

// packedReference is the packed product of one matrix by the twin's
// definition: per output an FMA chain over the columns in order.
func packedReference(m *Matrix, x []float32, n int) []float32 {
	out := make([]float32, n*m.Rows)
	row := make([]float32, m.Cols)
	for r := range m.Rows {
		m.Row(r, row)
		for t := range n {
			var acc float32
			for c, w := range row {
				acc = fma32(w, x[t*m.Cols+c], acc)
			}
			out[t*m.Rows+r] = acc
		}
	}
	return out
}

func TestPackedErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := randFloatMatrix(t, r, "a", gguf.TypeF32, 8, 16)
	b := randFloatMatrix(t, r, "b", gguf.TypeF16, 8, 16)
	c := randFloatMatrix(t, r, "c", gguf.TypeF32, 8, 8)
	for _, ms := range [][]*Matrix{{}, {a, b}, {a, c}} {
		if _, err := PackedBytes(ms...); err == nil {
			t.Errorf("PackedBytes of %d mismatched matrices: no error", len(ms))
		}
	}
	p, err := Pack(make([]byte, 32*16*4), a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Pack(make([]byte, 10), a); err == nil {
		t.Error("Pack into a short buffer: no error")
	}
	pool := NewPool(1)
	defer pool.Close()
	var s PackScratch
	if err := p.MulInto(pool, &s, make([]float32, 16), 1); err == nil {
		t.Error("no destination: no error")
	}
	if err := p.Mul(pool, &s, make([]float32, 4), make([]float32, 16), 1); err == nil {
		t.Error("short destination: no error")
	}
	if err := p.Mul(pool, &s, make([]float32, 8), make([]float32, 15), 1); err == nil {
		t.Error("short input: no error")
	}
}

func BenchmarkPacked(b *testing.B) {
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeF32} {
		for _, c := range []struct{ rows, cols, n int }{{384, 384, 512}, {1536, 384, 512}, {384, 1536, 512}} {
			b.Run(typ.String()+"/"+itoa(c.rows)+"x"+itoa(c.cols)+"x"+itoa(c.n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(5, 6))
				m := randFloatMatrix(&testing.T{}, r, "w", typ, c.rows, c.cols)
				size, _ := PackedBytes(m)
				p, err := Pack(make([]byte, size), m)
				if err != nil {
					b.Fatal(err)
				}
				pool := NewPool(1)
				defer pool.Close()
				x := make([]float32, c.n*c.cols)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				dst := make([]float32, c.n*c.rows)
				var s PackScratch
				b.ResetTimer()
				for b.Loop() {
					p.Mul(pool, &s, dst, x, c.n)
				}
				b.ReportMetric(float64(2*c.rows*c.cols*c.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestLayerNorm checks LayerNorm against its definition in float64 and its
// in-place and nil-weight forms.
func TestLayerNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 5, 384} {
		x := make([]float32, n)
		w := make([]float32, n)
		b := make([]float32, n)
		for i := range x {
			x[i], w[i], b[i] = float32(3+2*r.NormFloat64()), float32(1+0.1*r.NormFloat64()), float32(0.1*r.NormFloat64())
		}
		var mean, v float64
		for _, e := range x {
			mean += float64(e)
		}
		mean /= float64(n)
		for _, e := range x {
			v += (float64(e) - mean) * (float64(e) - mean)
		}
		v /= float64(n)
		got := make([]float32, n)
		LayerNorm(got, x, w, b, 1e-12)
		for i := range x {
			want := (float64(x[i])-mean)/math.Sqrt(v+1e-12)*float64(w[i]) + float64(b[i])
			if n == 1 {
				want = float64(b[i])
			}
			if math.Abs(float64(got[i])-want) > 1e-5 {
				t.Fatalf("n %d: LayerNorm[%d] = %v, want %v", n, i, got[i], want)
			}
		}
		plain := make([]float32, n)
		LayerNorm(plain, x, nil, nil, 1e-12)
		LayerNorm(x, x, w, b, 1e-12)
		for i := range x {
			if x[i] != got[i] {
				t.Fatalf("in place differs at %d", i)
			}
			if n > 1 && math.Abs(float64(plain[i]*w[i]+b[i]-got[i])) > 1e-6 {
				t.Fatalf("nil weights differ at %d", i)
			}
		}
	}
}

func TestGELUs(t *testing.T) {
	x := []float32{-20, -10, -3, -0.5, 0, 0.25, 1, 3, 9.99, 10, 50}
	got := make([]float32, len(x))
	GELUs(got, x)
	for i, v := range x {
		want := GELU(v)
		switch {
		case v <= -10:
			want = 0
		case v >= 10:
			want = v
		}
		if d := math.Abs(float64(got[i] - want)); d > 2e-3*math.Max(1, math.Abs(float64(want))) {
			t.Errorf("GELUs(%v) = %v, GELU %v", v, got[i], want)
		}
	}
}

// TestFullAttention checks FullAttention against softmax attention in
// float64 over shapes with partial key slabs, partial query tiles, heads
// not a multiple of 32 wide and strided rows, with the kernels and with
// their Go twin (the same bits).
func TestFullAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct{ n, nq, hd int }{
		{1, 1, 32}, {5, 5, 8}, {33, 33, 32}, {100, 100, 64}, {100, 1, 64}, {40, 13, 40}, {13, 13, 96},
	} {
		stride := c.hd*3 + 5 // rows of a wider buffer, as a layer's q, k and v are
		mk := func(rows int) []float32 {
			x := make([]float32, rows*stride)
			for i := range x {
				x[i] = RoundF16(float32(r.NormFloat64()))
			}
			return x
		}
		q, k, v := mk(c.nq), mk(c.n), mk(c.n)
		scale := float32(1 / math.Sqrt(float64(c.hd)))
		var outs [3][]float32
		for pass, kernels := range []bool{true, false, false} {
			saved := havePackedKernels
			havePackedKernels = havePackedKernels && kernels
			out := make([]float32, c.nq*stride)
			mode := attnSlabs
			if pass == 2 {
				mode = attnDots
			}
			err := fullAttention(out, stride, q, stride, c.nq, k, v, stride, c.n, c.hd, scale, make([]float32, FullAttentionScratch(c.n, c.hd)), mode)
			havePackedKernels = saved
			if err != nil {
				t.Fatal(err)
			}
			outs[pass] = out
		}
		for i := range outs[0] {
			if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
				t.Fatalf("%+v: kernels and Go twin differ at %d: %v, %v", c, i, outs[0][i], outs[1][i])
			}
		}
		for _, out := range [][]float32{outs[0], outs[2]} {
			if out[c.hd] != 0 && c.nq == 1 {
				t.Fatalf("%+v: wrote past the head", c)
			}
		}
		for i := range c.nq {
			for d := range c.hd {
				if math.Abs(float64(outs[2][i*stride+d]-outs[0][i*stride+d])) > 1e-5 {
					t.Fatalf("%+v: the row-by-row path differs at [%d][%d]: %v, %v", c, i, d, outs[2][i*stride+d], outs[0][i*stride+d])
				}
			}
		}
		for i := range c.nq {
			s := make([]float64, c.n)
			mx := math.Inf(-1)
			for j := range c.n {
				for d := range c.hd {
					s[j] += float64(q[i*stride+d]) * float64(k[j*stride+d])
				}
				s[j] *= float64(scale)
				mx = math.Max(mx, s[j])
			}
			var sum float64
			for j := range s {
				s[j] = math.Exp(s[j] - mx)
				sum += s[j]
			}
			for d := range c.hd {
				var want float64
				for j := range c.n {
					want += s[j] / sum * float64(v[j*stride+d])
				}
				if got := float64(outs[0][i*stride+d]); math.Abs(got-want) > 1e-5 {
					t.Fatalf("%+v: out[%d][%d] = %v, want %v", c, i, d, got, want)
				}
			}
			if outs[0][i*stride+c.hd] != 0 {
				t.Fatalf("%+v: wrote past the head at row %d", c, i)
			}
		}
	}
}

// TestGELUsMatchesTable checks the vectorized float16 rounding of GELUs
// against ToF16 on values around every boundary.
func TestGELUsMatchesTable(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	x := make([]float32, 1000)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(8)-5)))
	}
	x[0], x[1], x[2] = 65520, -1e-8, 6e-8 // overflow and subnormal float16
	got := make([]float32, len(x))
	GELUs(got, x)
	tab := geluTable()
	for i, v := range x {
		want := v
		switch {
		case v <= -10:
			want = 0
		case v >= 10:
		default:
			want = FromF16(tab[ToF16(v)])
		}
		if math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("GELUs(%v) = %v, want %v", v, got[i], want)
		}
	}
}

// TestPackedEpilogue: bias, GELU and an added residual applied inside
// MulInto equal the same steps run after a plain product.
func TestPackedEpilogue(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	pool := NewPool(2)
	defer pool.Close()
	for _, rows := range []int{64, 50} {
		m := randFloatMatrix(t, r, "w", gguf.TypeF16, rows, 40)
		size, _ := PackedBytes(m)
		p, err := Pack(make([]byte, size), m)
		if err != nil {
			t.Fatal(err)
		}
		n := 29
		x := make([]float32, n*40)
		bias := make([]float32, rows)
		add := make([]float32, n*rows)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for i := range bias {
			bias[i] = float32(r.NormFloat64())
		}
		for i := range add {
			add[i] = float32(r.NormFloat64())
		}
		var s PackScratch
		want := make([]float32, n*rows)
		if err := p.Mul(pool, &s, want, x, n); err != nil {
			t.Fatal(err)
		}
		for tk := range n {
			row := want[tk*rows : (tk+1)*rows]
			Add(row, bias)
			GELUs(row, row)
			Add(row, add[tk*rows:])
		}
		got := make([]float32, n*rows)
		if err := p.MulInto(pool, &s, x, n, PackedOut{Dst: got, Bias: bias, GELU: true, Add: add}); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("rows %d: output %d = %v, separate steps %v", rows, i, got[i], want[i])
			}
		}
		if err := p.MulInto(pool, &s, x, n, PackedOut{Dst: got, Bias: bias[:3]}); err == nil {
			t.Error("short bias: no error")
		}
		if err := p.MulInto(pool, &s, x, n, PackedOut{Dst: got, Add: add[:5]}); err == nil {
			t.Error("short residual: no error")
		}
	}
}

// BenchmarkMatrixMulFloat is BenchmarkPacked's products through
// Matrix.Mul (quant's F16/F32 dot products, one token at a time), for
// comparison.
func BenchmarkMatrixMulFloat(b *testing.B) {
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeF32} {
		b.Run(typ.String(), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			m := randFloatMatrix(&testing.T{}, r, "w", typ, 384, 384)
			pool := NewPool(1)
			defer pool.Close()
			n := 512
			x := make([]float32, n*384)
			dst := make([]float32, n*384)
			var s Scratch
			for b.Loop() {
				m.Mul(pool, &s, dst, x, n)
			}
			b.ReportMetric(float64(2*384*384*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestPackedAVX2 runs the packed tests again with the AVX2 kernels on a
// CPU that has AVX-512 (GODEBUG=cpu.avx512f=off does the same for a whole
// run): both forms must give the Go twin's bits.
func TestPackedAVX2(t *testing.T) {
	if !packedAVX512 {
		t.Skip("the AVX2 kernels are the ones the other tests ran")
	}
	packedAVX512 = false
	defer func() { packedAVX512 = true }()
	t.Run("products", TestPackedMatchesTwin)
	t.Run("attention", TestFullAttention)
	t.Run("epilogue", TestPackedEpilogue)
	t.Run("gelu", TestGELUsMatchesTable)
}
