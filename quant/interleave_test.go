package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// interleaveTypes are the types with an interleaved layout, with the
// function that writes it (groups of g rows).
var interleaveTypes = []struct {
	t          gguf.Type
	interleave func(dst, src []byte, rows, nb, g int)
}{{gguf.TypeQ4_K, interleaveQ4K}, {gguf.TypeQ6_K, interleaveQ6K}}

// ilvGroups are the group sizes of the interleaved layouts (AVX2, AVX-512).
var ilvGroups = []int{8, 16}

// TestInterleavedTwin checks the Go twins of the interleaved kernels, for
// both group sizes, against the dot products on the file's layout: the
// same integers, scaled per row and block, so within a few float32
// roundings per block.
func TestInterleavedTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, g := range ilvGroups {
		for _, it := range interleaveTypes {
			for _, f := range []blockFill{fillRandom, fillMax, fillExact, fillNegScale, fillZero} {
				for _, n := range []int{256, 2048} {
					rows := 2 * g
					w := makeWeights(rng, it.t, rows*n, f)
					a := makeActs(t, rng, gguf.TypeQ8_K, n, f)
					iw := make([]byte, len(w))
					it.interleave(iw, w, rows, n/256, g)
					got := make([]float32, rows)
					interleavedMatMulGo(it.t, g)(n, iw, rows, a, 1, got, rows)
					rb := len(w) / rows
					for r := range rows {
						// Blocks that cancel (fillMax) leave the file layout's
						// FMA-fused sums (GOAMD64=v3) a residue of a few ulps
						// of the terms: the bound grows with their magnitude.
						want := genericDots[it.t](n, w[r*rb:(r+1)*rb], a)
						_, mag := refDot(t, it.t, gguf.TypeQ8_K, n, w[r*rb:(r+1)*rb], a)
						if d := math.Abs(float64(got[r] - want)); d > 1e-5*math.Max(1, math.Abs(float64(want))) && d > 3e-6*mag {
							t.Errorf("g=%d %v %v n=%d row %d: interleaved %g, file layout %g", g, it.t, f, n, r, got[r], want)
						}
					}
				}
			}
		}
	}
}

// TestInterleaveGroups checks that the two group sizes hold the same bytes:
// a 16-row group's pieces are those of its two 8-row groups side by side.
func TestInterleaveGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	for _, it := range interleaveTypes {
		const rows, nb = 32, 3
		w := makeWeights(rng, it.t, rows*nb*256, fillRandom)
		i8, i16 := make([]byte, len(w)), make([]byte, len(w))
		it.interleave(i8, w, rows, nb, 8)
		it.interleave(i16, w, rows, nb, 16)
		bb := it.t.BlockBytes()
		for grp := range rows / 16 {
			for b := range nb {
				x := i16[(grp*nb+b)*16*bb:][:16*bb]
				lo := i8[(2*grp*nb+b)*8*bb:][:8*bb]
				hi := i8[((2*grp+1)*nb+b)*8*bb:][:8*bb]
				// Every field is a run of 2 or 4 bytes per row: 16-row field
				// k is the 8-row field k of the first group, then the second's.
				for off := 0; off < 8*bb; {
					size := 4 * 8
					if it.t == gguf.TypeQ4_K && off < 32 || it.t == gguf.TypeQ6_K && off < 16 {
						size = 2 * 8
					}
					if string(x[2*off:2*off+size]) != string(lo[off:off+size]) || string(x[2*off+size:2*off+2*size]) != string(hi[off:off+size]) {
						t.Fatalf("%v group %d block %d: 16-row field at %d is not the 8-row fields at %d", it.t, grp, b, 2*off, off)
					}
					off += size
				}
			}
		}
	}
}

// TestInterleavedKernels checks each CPU kernel over interleaved weights
// against the Go twin, to the bit, for 1 to 9 tokens (each token through
// the 4-, 2- or 1-token kernel), so a token's result does not depend on how
// many share its call.
func TestInterleavedKernels(t *testing.T) {
	for _, level := range supportedLevels() {
		for _, it := range interleaveTypes {
			ks := newKernelSet(level)
			mm, g := ks.interleaved[it.t], ks.ilvRows
			if mm == nil {
				continue
			}
			t.Run(fmt.Sprintf("%v/%v", level, it.t), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(43, 44))
				for _, f := range []blockFill{fillRandom, fillMax, fillExact, fillNegScale} {
					for _, n := range []int{256, 2048, 11008 / 256 * 256} {
						rows := 3 * g
						w := makeWeights(rng, it.t, rows*n, f)
						iw := make([]byte, len(w))
						it.interleave(iw, w, rows, n/256, g)
						for _, ntok := range []int{1, 2, 3, 4, 5, 7, 9} {
							var a []byte
							for range ntok {
								a = append(a, makeActs(t, rng, gguf.TypeQ8_K, n, f)...)
							}
							ldo := rows + 3
							got := make([]float32, ntok*ldo)
							want := make([]float32, ntok*ldo)
							mm(n, iw, rows, a, ntok, got, ldo)
							interleavedMatMulGo(it.t, g)(n, iw, rows, a, ntok, want, ldo)
							for i := range got {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%v n=%d ntok=%d: out[%d] = %g, Go twin %g", f, n, ntok, i, got[i], want[i])
								}
							}
						}
					}
				}
			})
		}
	}
}

// ilvBench is a MatMulFunc over interleaved weights (groups of rows rows)
// to benchmark.
type ilvBench struct {
	name string
	rows int
	mm   MatMulFunc
}

// BenchmarkInterleaved compares the interleaved kernels (each kernel
// family the CPU runs: ilvBenchKernels) with the file-layout ones on the
// same weights (cache-resident, one thread), in ns per block of one row
// for 1, 2, 4 and 8 tokens: wall clock, and the thread's CPU time, which a
// busy neighbour on a shared host inflates less.
//
//	go test ./quant -run '^$' -bench 'Interleaved$'
func BenchmarkInterleaved(b *testing.B) {
	for _, it := range interleaveTypes {
		b.Run(it.t.String(), func(b *testing.B) { benchInterleaved(b, it.t, it.interleave) })
	}
}

func benchInterleaved(b *testing.B, t gguf.Type, interleave func(dst, src []byte, rows, nb, g int)) {
	const n, rows = 2048, 32
	rng := rand.New(rand.NewPCG(45, 46))
	w := makeWeights(rng, t, rows*n, fillRandom)
	var a []byte
	for range 8 {
		a = append(a, makeActs(b, rng, gguf.TypeQ8_K, n, fillRandom)...)
	}
	out := make([]float32, 8*rows)
	ks := ilvBenchKernels(t)
	if len(ks) == 0 {
		b.Skipf("no interleaved %v kernels on this CPU", t)
	}
	type variant struct {
		name string
		mm   MatMulFunc
		w    []byte
	}
	vs := []variant{{"file", best.matMuls[t], w}}
	for _, k := range ks {
		iw := make([]byte, len(w))
		interleave(iw, w, rows, n/256, k.rows)
		vs = append(vs, variant{"interleaved/" + k.name, k.mm, iw})
	}
	for _, ntok := range []int{1, 2, 4, 8} {
		for _, k := range vs {
			b.Run(fmt.Sprintf("tok=%d/%s", ntok, k.name), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu := threadCPU()
				for b.Loop() {
					k.mm(n, k.w, rows, a, ntok, out, rows)
				}
				blocks := float64(b.N) * float64(rows*n/256)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/blocks, "ns/blk")
				if cpu > 0 {
					b.ReportMetric((threadCPU()-cpu)*1e9/blocks, "cpu-ns/blk")
				}
			})
		}
	}
}

// BenchmarkInterleavedDRAM is BenchmarkInterleaved with weights far larger
// than the caches (256 MiB, read once per pass as a decode step reads a
// model) shared out among 1 or 2 threads: ns per block of one row, and the
// rate the weights stream at.
func BenchmarkInterleavedDRAM(b *testing.B) {
	for _, it := range interleaveTypes {
		b.Run(it.t.String(), func(b *testing.B) {
			const n = 2048
			rng := rand.New(rand.NewPCG(45, 46))
			small := makeWeights(rng, it.t, 64*n, fillRandom)
			w := make([]byte, 256<<20/len(small)*len(small))
			rows := len(w) / len(small) * 64
			var a []byte
			for range 8 {
				a = append(a, makeActs(b, rng, gguf.TypeQ8_K, n, fillRandom)...)
			}
			ks := ilvBenchKernels(it.t)
			if len(ks) == 0 {
				b.Skipf("no interleaved %v kernels on this CPU", it.t)
			}
			rb := len(w) / rows
			for _, threads := range []int{1, 2} {
				for _, ntok := range []int{1, 4, 8} {
					for _, k := range ks {
						// The 64 rows interleaved for k, copied over the whole.
						iw := make([]byte, len(small))
						it.interleave(iw, small, 64, n/256, k.rows)
						for i := 0; i < len(w); i += len(iw) {
							copy(w[i:], iw)
						}
						b.Run(fmt.Sprintf("threads=%d/tok=%d/%s", threads, ntok, k.name), func(b *testing.B) {
							outs := make([][]float32, threads)
							for i := range outs {
								outs[i] = make([]float32, 8*rows)
							}
							// Each thread makes b.N passes over its share on its own
							// (no barrier between passes), as a steady stream of
							// products would.
							per := rows / threads
							b.ResetTimer()
							var wg sync.WaitGroup
							for th := range threads {
								wg.Go(func() {
									for range b.N {
										k.mm(n, w[th*per*rb:(th+1)*per*rb], per, a, ntok, outs[th], per)
									}
								})
							}
							wg.Wait()
							b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*n/256)*float64(threads), "ns/blk")
							b.ReportMetric(float64(len(w))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
						})
					}
				}
			}
		})
	}
}

// BenchmarkInterleave is the cost of rearranging weights (MB/s of
// weights) into groups of 8 and 16 rows, which a model pays once at load.
func BenchmarkInterleave(b *testing.B) {
	for _, it := range interleaveTypes {
		for _, g := range ilvGroups {
			b.Run(fmt.Sprintf("%v/g=%d", it.t, g), func(b *testing.B) {
				const n, rows = 2048, 512
				rng := rand.New(rand.NewPCG(47, 48))
				w := makeWeights(rng, it.t, rows*n, fillRandom)
				iw := make([]byte, len(w))
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					it.interleave(iw, w, rows, n/256, g)
				}
			})
		}
	}
}

// TestInterleaveRejects checks that Interleave refuses what it cannot
// rearrange with an error that names the problem, and writes nothing.
func TestInterleaveRejects(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 50))
	g := max(InterleaveRows(gguf.TypeQ4_K), 8)
	w := makeWeights(rng, gguf.TypeQ4_K, g*256, fillRandom)
	if InterleaveRows(gguf.TypeQ4_K) == 0 {
		if _, _, err := Interleave(gguf.TypeQ4_K, 8, 256, w, make([]byte, len(w))); err == nil {
			t.Fatal("Interleave succeeded on a CPU without interleaved kernels")
		}
		return
	}
	for _, c := range []struct {
		name       string
		t          gguf.Type
		rows, cols int
		data, dst  []byte
		want       string
	}{
		{"rows not a multiple of the group", gguf.TypeQ4_K, g / 2, 512, w, make([]byte, len(w)), fmt.Sprintf("multiple of %d", g)},
		{"no rows", gguf.TypeQ4_K, 0, 256, nil, nil, "cannot interleave"},
		{"columns not whole blocks", gguf.TypeQ4_K, g, 200, w, make([]byte, len(w)), "columns"},
		{"short data", gguf.TypeQ4_K, g, 256, w[:len(w)-1], make([]byte, len(w)-1), "bytes"},
		{"short dst", gguf.TypeQ4_K, g, 256, w, make([]byte, len(w)-144), "bytes"},
		{"a type without a layout", gguf.TypeQ8_0, g, 256, make([]byte, g*8*34), make([]byte, g*8*34), "no interleaved layout"},
	} {
		_, _, err := Interleave(c.t, c.rows, c.cols, c.data, c.dst)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
		for _, b := range c.dst {
			if b != 0 {
				t.Errorf("%s: dst written before the error", c.name)
				break
			}
		}
	}
}
