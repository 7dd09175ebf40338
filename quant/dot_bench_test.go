package quant

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// Kernel benchmarks report GB/s of weights streamed (b.SetBytes is the weight
// bytes per op), for every dispatch level this CPU runs:
//
//	go test -run '^$' -bench 'MatVec' ./quant/
//	go test -run '^$' -bench 'MatVec/q4_K' -benchtime 2s ./quant/
//
// MatVec/<type>/<level> multiplies a 2048-wide matrix of about 8 MB (in the
// L3 cache on most desktop CPUs) by one activation row; MatVecDRAM uses a
// q4_K matrix of 64 MB, bigger than the caches, like a 3B model's decode;
// MatVecL2 256 KB that stay in the L2 cache (the kernels' own speed);
// MatMul/<type>/<level>/tok=N multiplies 64 rows by N tokens (a few
// streams or a draft for N up to 4, prefill beyond).
// cpu-GB/s is the same rate per second of the benchmark thread's CPU time,
// steadier than MB/s on a busy machine.

const benchN = 2048

func benchMatrix(b *testing.B, wt gguf.Type, bytes int) (w, a []byte, rows int) {
	rb, _ := wt.RowBytes(benchN)
	rows = max(1, bytes/rb)
	rng := rand.New(rand.NewPCG(11, 12))
	w = makeWeights(rng, wt, benchN*rows, fillRandom)
	vt, _ := VecDotType(wt)
	a = makeActs(b, rng, vt, benchN, fillRandom)
	return w, a, rows
}

var benchTypes = []gguf.Type{
	gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ8_0, gguf.TypeQ5_K, gguf.TypeQ4_0,
	gguf.TypeF16, gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeBF16, gguf.TypeF32,
	gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ4_1, gguf.TypeMXFP4,
}

// legacyBenchTypes are the 32-quant types K-quant mixes fall back to, and
// mxfp4, gpt-oss's experts.
var legacyBenchTypes = []gguf.Type{gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ4_1, gguf.TypeMXFP4}

func BenchmarkMatVec(b *testing.B) { benchMatVec(b, benchTypes, 8<<20) }

// BenchmarkMatVecL2 measures the kernels' own speed on 256 KB of weights
// that stay in the L2 cache.
func BenchmarkMatVecL2(b *testing.B) {
	benchMatVec(b, append(benchTypes[:5:5], legacyBenchTypes...), 256<<10)
}

// benchMatVec runs MatVec over a matrix of about size bytes of each type,
// at every dispatch level.
func benchMatVec(b *testing.B, types []gguf.Type, size int) {
	for _, wt := range types {
		w, a, rows := benchMatrix(b, wt, size)
		for _, level := range supportedLevels() {
			mv, _ := newKernelSet(level).matVec(wt)
			out := make([]float32, rows)
			b.Run(fmt.Sprintf("%v/%v", wt, level), func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				done := cpuRate(b, int64(len(w)))
				for b.Loop() {
					mv(benchN, w, a, out)
				}
				done()
			})
		}
	}
}

// BenchmarkMatVecDRAM is MatVec over 64 MB of weights, read from memory
// as a decode step reads a model's.
func BenchmarkMatVecDRAM(b *testing.B) { benchMatVec(b, benchTypes, 64<<20) }

func BenchmarkMatMul(b *testing.B) {
	for _, wt := range append([]gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ8_0, gguf.TypeQ5_K, gguf.TypeQ4_0}, legacyBenchTypes...) {
		rb, _ := wt.RowBytes(benchN)
		const rows = 64
		rng := rand.New(rand.NewPCG(13, 14))
		w := makeWeights(rng, wt, benchN*rows, fillRandom)
		vt, _ := VecDotType(wt)
		ab, _ := vt.RowBytes(benchN)
		for _, ntok := range []int{1, 2, 3, 4, 16, 64} {
			a := make([]byte, 0, ntok*ab)
			for range ntok {
				a = append(a, makeActs(b, rng, vt, benchN, fillRandom)...)
			}
			out := make([]float32, rows*ntok)
			for _, level := range supportedLevels() {
				mm, _ := newKernelSet(level).matMul(wt)
				b.Run(fmt.Sprintf("%v/%v/tok=%d", wt, level, ntok), func(b *testing.B) {
					b.SetBytes(int64(rows * rb * ntok)) // weight bytes as if streamed once per token
					done := cpuRate(b, int64(rows*rb*ntok))
					for b.Loop() {
						mm(benchN, w, rows, a, ntok, out, rows)
					}
					done()
				})
			}
		}
	}
}

// BenchmarkMemoryRead is the yardstick for MatVecDRAM: one core scanning
// 64 MB with bytes.IndexByte (AVX2), about as fast as this core reads memory.
func BenchmarkMemoryRead(b *testing.B) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i%251) | 1
	}
	b.SetBytes(int64(len(buf)))
	done := cpuRate(b, int64(len(buf)))
	defer done()
	for b.Loop() {
		if bytes.IndexByte(buf, 0) >= 0 {
			b.Fatal("found a zero")
		}
	}
}

// cpuRate reports "cpu-GB/s": bytes per op per second of this thread's CPU
// time (threadCPU), steadier than wall-clock MB/s on a busy machine. Call
// the returned function after the loop.
func cpuRate(b *testing.B, bytes int64) func() {
	runtime.LockOSThread()
	start := threadCPU()
	return func() {
		d := threadCPU() - start
		runtime.UnlockOSThread()
		if d > 0 {
			b.ReportMetric(float64(bytes)*float64(b.N)/d/1e9, "cpu-GB/s")
		}
	}
}
