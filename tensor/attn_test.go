package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
)

// kernelVariants lists the ways the attention kernels can run here: the Go
// twins always, the assembly where this CPU and build have it.
func kernelVariants() []bool {
	if haveAttnKernels {
		return []bool{false, true}
	}
	return []bool{false}
}

func variantName(asm bool) string {
	if asm {
		return "asm"
	}
	return "go"
}

func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

func TestPath(t *testing.T) {
	p := Path()
	if p != "avx2" && p != "generic" {
		t.Fatalf("Path() = %q", p)
	}
	if (p == "avx2") != haveAttnKernels {
		t.Errorf("Path() = %q with haveAttnKernels %v", p, haveAttnKernels)
	}
	t.Logf("tensor kernels: %s", p)
}

func TestRoundF16(t *testing.T) {
	check := func(x float32) {
		want := float16.Fromfloat32(x).Float32()
		if got := RoundF16(x); !sameBits(got, want) {
			t.Fatalf("RoundF16(%v = %#x) = %v, want %v", x, math.Float32bits(x), got, want)
		}
		if got := FromF16(ToF16(x)); !sameBits(got, want) {
			t.Fatalf("FromF16(ToF16(%v)) = %v, want %v", x, got, want)
		}
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519.99, 65520, -65520, 1e6,
		6.1035156e-05, 6.1e-05, 5.96e-08, 1e-10, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1.00048828125, 1.000732421875, 2049, 2051} {
		check(x)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		check(math.Float32frombits(r.Uint32()))
	}
	for range 200000 {
		check(float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20))))
	}
}

// ToF16s gives ToF16's bits (a NaN for a NaN) on random bit patterns,
// values near float16's range and rounding edges, for lengths that take
// the vector kernels, their tails and neither.
func TestToF16s(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	edges := []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.99, 65520, -65520, 6.1035156e-05, 5.96e-08,
		2.98e-08, 1e-10, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1.00048828125, 2049, 2051}
	for _, n := range []int{1, 7, 8, 15, 16, 17, 100, 1024} {
		src := make([]float32, n)
		for i := range src {
			switch i % 3 {
			case 0:
				src[i] = math.Float32frombits(r.Uint32())
			case 1:
				src[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(60)-30)))
			default:
				src[i] = edges[r.IntN(len(edges))]
			}
		}
		dst := make([]uint16, n+1)
		dst[n] = 0xabcd
		ToF16s(dst[:n], src)
		for i, x := range src {
			want := ToF16(x)
			got := dst[i]
			nan := func(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }
			if got != want && !(nan(got) && nan(want)) {
				t.Fatalf("n=%d: ToF16s(%v = %#x) = %#x, ToF16 %#x", n, x, math.Float32bits(x), got, want)
			}
		}
		if dst[n] != 0xabcd {
			t.Fatalf("n=%d: wrote past the end", n)
		}
	}
}

// DotF16 is the dot product, to float32 rounding.
func TestDotF16(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{16, 64, 128, 80} {
		k := make([]uint16, n)
		q := make([]float32, n)
		var want float64
		for i := range n {
			k[i] = ToF16(float32(r.NormFloat64()))
			q[i] = RoundF16(float32(r.NormFloat64()))
			want += float64(FromF16(k[i])) * float64(q[i])
		}
		if got := DotF16(k, q); math.Abs(float64(got)-want) > 1e-5*float64(n) {
			t.Errorf("n=%d: DotF16 = %v, want %v", n, got, want)
		}
	}
}

// randF16 returns n random float16 values of about the given size.
func randF16(r *rand.Rand, n int, scale float64) []uint16 {
	k := make([]uint16, n)
	for i := range k {
		k[i] = ToF16(float32(r.NormFloat64() * scale))
	}
	return k
}

func randF32(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

func randQ8(t *testing.T, r *rand.Rand, n int) []byte {
	t.Helper()
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3)))
	}
	blk := make([]byte, n/q8Block*q8Bytes)
	QuantizeQ8_0(blk, x)
	return blk
}

// randFactors returns np online-softmax factors: weights vs in (0, 1] and
// rescales ms that are 1 except at about a quarter of the positions (and
// always at the first, as a running maximum from -Inf gives).
func randFactors(r *rand.Rand, np int) (vs, ms []float32) {
	vs, ms = make([]float32, np), make([]float32, np)
	for p := range np {
		vs[p], ms[p] = 1, 1
		if p == 0 || r.IntN(4) == 0 {
			ms[p] = float32(r.Float64())
		} else {
			vs[p] = float32(r.Float64())
		}
	}
	return vs, ms
}

func checkSame(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if !sameBits(got[i], want[i]) {
			t.Fatalf("%s: [%d] = %v, Go twin %v", what, i, got[i], want[i])
		}
	}
}

// Every attention and KV kernel gives its Go twin's bits, with the assembly
// switched on (where this CPU and build have it) and off; the sequence
// kernels also give the bits of the loop their documentation quotes, run
// over the single-row twins. Shapes include lengths the assembly does not
// take (they fall back to the twin) and values that overflow float16.
func TestAttnKernelsMatchGo(t *testing.T) {
	for _, asm := range kernelVariants() {
		t.Run(variantName(asm), func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, 10))
			t.Run("DotF16", func(t *testing.T) {
				for _, n := range []int{16, 64, 80, 128, 256} {
					for trial := range 100 {
						scale := math.Pow(2, float64(r.IntN(30)-15))
						k := randF16(r, n, scale)
						q := make([]float32, n)
						for i := range q {
							q[i] = RoundF16(float32(r.NormFloat64()))
						}
						if got, want := dotF16(k, q, asm), dotF16Go(k, q); !sameBits(got, want) {
							t.Fatalf("n=%d trial %d: %v, Go twin %v", n, trial, got, want)
						}
					}
				}
			})
			t.Run("MadF16", func(t *testing.T) {
				for _, n := range []int{8, 12, 64, 128, 256} {
					for trial := range 100 {
						scale := math.Pow(2, float64(r.IntN(30)-15))
						v := randF16(r, n, scale)
						acc := make([]float32, n)
						for i := range acc {
							acc[i] = RoundF16(float32(r.NormFloat64() * scale))
						}
						// Overflow, subnormal and zero results.
						acc[0], v[1], acc[2], v[2] = 60000, ToF16(30000), 1e-7, ToF16(-1e-7)
						s := float32(r.Float64() * 2)
						if trial == 0 {
							s = 1
						}
						want := append([]float32(nil), acc...)
						madF16Go(want, v, s)
						madF16(acc, v, s, asm)
						checkSame(t, fmt.Sprintf("n=%d trial %d", n, trial), acc, want)
					}
				}
			})
			t.Run("DotsF16", func(t *testing.T) {
				for _, n := range []int{32, 64, 128} {
					for _, np := range []int{1, 3, 17} {
						const heads = 3
						stride, off := heads*n, n // the middle head of three
						k := randF16(r, stride*np, 1)
						q := make([]float32, n)
						for i := range q {
							q[i] = RoundF16(float32(r.NormFloat64()))
						}
						got, want := make([]float32, np), make([]float32, np)
						dotsF16(got, k[off:], stride, q, 0.088, asm)
						for p := range np {
							want[p] = dotF16Go(k[p*stride+off:p*stride+off+n], q) * 0.088
						}
						checkSame(t, fmt.Sprintf("n=%d np=%d", n, np), got, want)
					}
				}
			})
			t.Run("MadSeqF16", func(t *testing.T) {
				for _, hd := range []int{32, 64, 128, 256} {
					for _, np := range []int{1, 2, 9, 40} {
						for _, scale := range []float64{1, 3e4} { // 3e4: the accumulator overflows float16
							const heads = 3
							stride, off := heads*hd, 2*hd // the last head of three
							v := randF16(r, stride*np, scale)
							vs, ms := randFactors(r, np)
							acc := make([]float32, hd)
							for i := range acc {
								acc[i] = RoundF16(float32(r.NormFloat64()))
							}
							want := append([]float32(nil), acc...)
							for p := range np { // the loop MadSeqF16 documents
								if ms[p] != 1 {
									for i, a := range want {
										want[i] = RoundF16(a * ms[p])
									}
								}
								madF16Go(want, v[p*stride+off:], vs[p])
							}
							twin := append([]float32(nil), acc...)
							madSeqF16Go(twin, v[off:], stride, vs, ms)
							checkSame(t, fmt.Sprintf("hd=%d np=%d scale %g: twin vs loop", hd, np, scale), twin, want)
							madSeqF16(acc, v[off:], stride, vs, ms, asm)
							checkSame(t, fmt.Sprintf("hd=%d np=%d scale %g", hd, np, scale), acc, want)
						}
					}
				}
			})
			t.Run("DotF32/AxpyF32", func(t *testing.T) {
				for _, n := range []int{1, 7, 8, 16, 64, 100, 128} {
					a, b := randF32(r, n, 1), randF32(r, n, 1)
					var want float64
					for i := range n {
						want += float64(a[i]) * float64(b[i])
					}
					got := dotF32(a, b, asm)
					if ref := dotF32Go(a, b); !sameBits(got, ref) {
						t.Errorf("n=%d: DotF32 = %v, Go twin %v", n, got, ref)
					}
					if math.Abs(float64(got)-want) > 1e-5*float64(n) {
						t.Errorf("n=%d: DotF32 = %v, want %v", n, got, want)
					}
					y1 := append([]float32(nil), b...)
					y2 := append([]float32(nil), b...)
					axpyF32(y1, a, 0.37, asm)
					axpyF32Go(y2, a, 0.37)
					checkSame(t, fmt.Sprintf("n=%d: AxpyF32", n), y1, y2)
				}
			})
			t.Run("DotsF32x4/WeightedSumF32", func(t *testing.T) {
				const ostride = 70
				for _, hd := range []int{8, 20, 64, 72, 128, 256} {
					for _, np := range []int{1, 3, 4, 5, 7, 8, 13, 64} {
						k, q, v := randF32(r, np*hd, 1), randF32(r, 4*hd, 1), randF32(r, np*hd, 1)
						sc := make([]float32, 4*ostride)
						dotsF32x4(sc, ostride, k, q, asm)
						for i := range 4 {
							for p := range np {
								if want := dotF32Go(k[p*hd:(p+1)*hd], q[i*hd:(i+1)*hd]); !sameBits(sc[i*ostride+p], want) {
									t.Fatalf("hd %d np %d: score[%d][%d] = %v, Go twin %v", hd, np, i, p, sc[i*ostride+p], want)
								}
							}
						}
						w := sc[ostride : ostride+np]
						got := randF32(r, hd, 1)
						want := append([]float32(nil), got...)
						weightedSumF32(got, v, w, asm)
						for p, pv := range w {
							axpyF32Go(want, v[p*hd:(p+1)*hd], pv)
						}
						checkSame(t, fmt.Sprintf("hd %d np %d: weighted sum", hd, np), got, want)
					}
				}
			})
			t.Run("MadQ8_0", func(t *testing.T) {
				for _, hd := range []int{32, 64, 128, 256} {
					blk := randQ8(t, r, hd)
					a := randF32(r, hd, 1)
					b := append([]float32(nil), a...)
					s := float32(r.Float64())
					madQ8(a, blk, s, asm)
					madQ8Go(b, blk, s)
					checkSame(t, fmt.Sprintf("hd %d", hd), a, b)
				}
			})
			t.Run("MadSeqQ8_0", func(t *testing.T) {
				for _, hd := range []int{32, 64, 128, 256} {
					for _, np := range []int{1, 2, 9, 40} {
						const heads = 3
						hb := hd / q8Block * q8Bytes
						stride, off := heads*hb, hb // the middle head of three
						v := randQ8(t, r, heads*hd*np)
						vs, ms := randFactors(r, np)
						acc := randF32(r, hd, 100)
						want := append([]float32(nil), acc...)
						for p := range np { // the loop MadSeqQ8_0 documents
							if ms[p] != 1 {
								for i := range want {
									want[i] *= ms[p]
								}
							}
							madQ8Go(want, v[p*stride+off:], vs[p])
						}
						twin := append([]float32(nil), acc...)
						madSeqQ8Go(twin, v[off:], stride, vs, ms)
						checkSame(t, fmt.Sprintf("hd=%d np=%d: twin vs loop", hd, np), twin, want)
						madSeqQ8(acc, v[off:], stride, vs, ms, asm)
						checkSame(t, fmt.Sprintf("hd=%d np=%d", hd, np), acc, want)
					}
				}
			})
		})
	}
}

// The Q8_0 row functions are quant's: QuantizeQ8_0 writes
// QuantizeActivations' bytes, DequantizeQ8_0 gives Dequantize's floats, and
// DotQ8_0 is the dot product of the dequantized rows to float32 rounding.
func TestQ8_0Rows(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{32, 64, 128, 512} {
		x, y := randF32(r, n, 1), randF32(r, n, 3)
		qx, qy := make([]byte, n/q8Block*q8Bytes), make([]byte, n/q8Block*q8Bytes)
		QuantizeQ8_0(qx, x)
		QuantizeQ8_0(qy, y)
		ref := make([]byte, len(qx))
		if err := quant.QuantizeActivations(gguf.TypeQ8_0, x, ref); err != nil {
			t.Fatal(err)
		}
		if string(ref) != string(qx) {
			t.Fatalf("n=%d: QuantizeQ8_0 differs from quant.QuantizeActivations", n)
		}
		dx, dy, dref := make([]float32, n), make([]float32, n), make([]float32, n)
		DequantizeQ8_0(dx, qx)
		DequantizeQ8_0(dy, qy)
		if err := quant.Dequantize(gguf.TypeQ8_0, qx, dref); err != nil {
			t.Fatal(err)
		}
		checkSame(t, fmt.Sprintf("n=%d: DequantizeQ8_0 vs quant.Dequantize", n), dx, dref)
		var want, mag float64
		for i := range n {
			want += float64(dx[i]) * float64(dy[i])
			mag += math.Abs(float64(dx[i]) * float64(dy[i]))
		}
		if got := DotQ8_0(qx, qy); math.Abs(float64(got)-want) > 1e-6*mag {
			t.Errorf("n=%d: DotQ8_0 = %v, dequantized dot %v", n, got, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("QuantizeQ8_0 of 33 values did not panic")
		}
	}()
	QuantizeQ8_0(make([]byte, 68), make([]float32, 33))
}

// BenchmarkAttnKernels times the decode-attention kernels over one head of
// 128 and a block of 256 positions of a 4-head cache, assembly and Go twin
// (go test ./tensor -bench AttnKernels).
func BenchmarkAttnKernels(b *testing.B) {
	const hd, np, heads = 128, 256, 4
	r := rand.New(rand.NewPCG(1, 1))
	k, v := randF16(r, heads*hd*np, 1), randF16(r, heads*hd*np, 1)
	q := make([]float32, hd)
	for i := range q {
		q[i] = RoundF16(float32(r.NormFloat64()))
	}
	v8 := make([]byte, heads*hd*np/q8Block*q8Bytes)
	QuantizeQ8_0(v8, randF32(r, heads*hd*np, 1))
	// Factors as decoding meets them: weights up to 1, a new maximum
	// (a rescale) at a few positions. (randFactors' frequent deep rescales
	// drive a float16 accumulator into subnormals, which VCVTPS2PH handles
	// slowly.)
	vs, ms := make([]float32, np), make([]float32, np)
	for p := range np {
		vs[p], ms[p] = float32(r.Float64()), 1
		if p%32 == 0 {
			vs[p], ms[p] = 1, 0.9
		}
	}
	sc, acc := make([]float32, np), make([]float32, hd)
	for _, asm := range kernelVariants() {
		b.Run("DotsF16/"+variantName(asm), func(b *testing.B) {
			for b.Loop() {
				dotsF16(sc, k, heads*hd, q, 0.088, asm)
			}
		})
		b.Run("MadSeqF16/"+variantName(asm), func(b *testing.B) {
			for b.Loop() {
				clear(acc) // each pass from zero, as attention starts (no drift into subnormals)
				madSeqF16(acc, v, heads*hd, vs, ms, asm)
			}
		})
		b.Run("MadSeqQ8_0/"+variantName(asm), func(b *testing.B) {
			for b.Loop() {
				clear(acc) // each pass from zero, as attention starts (no drift into subnormals)
				madSeqQ8(acc, v8, heads*hd/q8Block*q8Bytes, vs, ms, asm)
			}
		})
	}
}
