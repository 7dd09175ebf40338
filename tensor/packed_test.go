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
				if err := p.MulInto(pool, &s, x, n, dsts...); err != nil {
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
