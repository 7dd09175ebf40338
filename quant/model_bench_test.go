package quant

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// BenchmarkModelSweep multiplies every matrix of a real GGUF model by one
// activation row on one thread, per dispatch level: the weight streaming of
// one decode step (without attention), the number that bounds decode speed.
// It needs a model file:
//
//	SMOLGO_BENCH_MODEL=/path/model.gguf go test -run '^$' -bench ModelSweep -benchtime 5x ./quant/
//
// and reports GB/s of weights (cpu-GB/s per second of thread CPU time) and
// the implied single-thread tokens per second (tok/s).
func BenchmarkModelSweep(b *testing.B) {
	path := os.Getenv("SMOLGO_BENCH_MODEL")
	if path == "" {
		b.Skip("set SMOLGO_BENCH_MODEL to a GGUF file")
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	type mat struct {
		t    gguf.Type
		n    int
		rows int
		w    []byte
	}
	var mats []mat
	var total int64
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if len(ti.Dims) != 2 {
			continue
		}
		if _, err := VecDotType(ti.Type); err != nil {
			continue
		}
		mats = append(mats, mat{ti.Type, int(ti.Dims[0]), int(ti.Dims[1]), f.TensorData(ti)})
		total += int64(len(f.TensorData(ti)))
	}
	rng := rand.New(rand.NewPCG(19, 20))
	acts := map[[2]int][]byte{}
	for _, m := range mats {
		vt, _ := VecDotType(m.t)
		k := [2]int{int(vt), m.n}
		if acts[k] == nil {
			acts[k] = makeActs(b, rng, vt, m.n, fillRandom)
		}
	}
	out := make([]float32, 1<<18)
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		b.Run(fmt.Sprint(level), func(b *testing.B) {
			b.SetBytes(total)
			done := cpuRate(b, total)
			for b.Loop() {
				for _, m := range mats {
					vt, _ := VecDotType(m.t)
					mv, _ := ks.matVec(m.t)
					mv(m.n, m.w, acts[[2]int{int(vt), m.n}], out[:m.rows])
				}
			}
			done()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
