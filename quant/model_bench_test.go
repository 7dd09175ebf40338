package quant

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

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
// the implied single-thread tokens per second (tok/s). The tok=4 runs use
// MatMul with four activation rows, the products of a batched decode step of
// four sequences (tok/s counts all four). Both report each weight type's
// time per block (ns/blk/<type>, one row and all tokens): with one token
// a streaming rate, with four the batched kernels' compute.
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
	const batch = 4
	batched := map[[2]int][]byte{} // batch copies of each activation row
	for k, a := range acts {
		batched[k] = bytes.Repeat(a, batch)
	}
	out := make([]float32, batch<<18)
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		for _, ntok := range []int{1, batch} {
			b.Run(fmt.Sprintf("%v/tok=%d", level, ntok), func(b *testing.B) {
				b.SetBytes(total)
				done := cpuRate(b, total)
				took := map[gguf.Type]time.Duration{}
				blocks := map[gguf.Type]int{}
				for b.Loop() {
					for _, m := range mats {
						vt, _ := VecDotType(m.t)
						k := [2]int{int(vt), m.n}
						start := time.Now()
						if ntok == 1 {
							mv, _ := ks.matVec(m.t)
							mv(m.n, m.w, acts[k], out[:m.rows])
						} else {
							mm, _ := ks.matMul(m.t)
							mm(m.n, m.w, m.rows, batched[k], ntok, out, m.rows)
						}
						took[m.t] += time.Since(start)
						blocks[m.t] += len(m.w) / m.t.BlockBytes()
					}
				}
				done()
				b.ReportMetric(float64(b.N*ntok)/b.Elapsed().Seconds(), "tok/s")
				for t, d := range took {
					b.ReportMetric(float64(d.Nanoseconds())/float64(blocks[t]), "ns/blk/"+t.String())
				}
			})
		}
	}
}
