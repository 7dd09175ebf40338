package quant

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// formatBenchTypes are the formats of real GGUF weights, plus IQ4 and the
// activation formats.
var formatBenchTypes = append(append([]gguf.Type{}, quantTypes...), gguf.TypeIQ4_NL, gguf.TypeIQ4_XS)

const formatBenchN = 64 * 1024 // elements per call: 256 KB of float32 output

// BenchmarkDequantize measures dequantization throughput per type. MB/s
// counts float32 output bytes (4 per element), so the types compare by
// elements per second; cpu-MB/s is the same per second of the benchmark
// thread's CPU time (robust on a busy machine).
//
//	go test ./quant/ -run '^$' -bench Dequantize
func BenchmarkDequantize(b *testing.B) {
	x := gaussian(rand.New(rand.NewPCG(7, 8)), formatBenchN, 1)
	for _, typ := range formatBenchTypes {
		n, _ := typ.RowBytes(formatBenchN)
		src := make([]byte, n)
		if CanQuantize(typ) {
			if err := Quantize(typ, x, src); err != nil {
				b.Fatal(err)
			}
		} else {
			r := rand.New(rand.NewPCG(9, 10))
			for i := range src {
				src[i] = byte(r.Uint32())
			}
		}
		dst := make([]float32, formatBenchN)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(4 * formatBenchN)
			defer cpuThroughput(b, 4*formatBenchN)()
			for b.Loop() {
				if err := Dequantize(typ, src, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkQuantize measures the reference quantizers. MB/s counts float32
// input bytes.
//
//	go test ./quant/ -run '^$' -bench Quantize
func BenchmarkQuantize(b *testing.B) {
	x := gaussian(rand.New(rand.NewPCG(7, 8)), formatBenchN, 1)
	for _, typ := range quantTypes {
		n, _ := typ.RowBytes(formatBenchN)
		dst := make([]byte, n)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(4 * formatBenchN)
			defer cpuThroughput(b, 4*formatBenchN)()
			for b.Loop() {
				if err := Quantize(typ, x, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuThroughput locks the benchmark to its OS thread and returns a function
// that reports "cpu-MB/s": bytes per op × ops over the thread's CPU time.
// Use it as defer cpuThroughput(b, bytes)().
func cpuThroughput(b *testing.B, bytes int) func() {
	runtime.LockOSThread()
	start := threadCPU()
	return func() {
		if cpu := threadCPU() - start; cpu > 0 && start > 0 {
			b.ReportMetric(float64(bytes)*float64(b.N)/cpu/1e6, "cpu-MB/s")
		}
		runtime.UnlockOSThread()
	}
}
