package synth

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
)

// Options control Write.
type Options struct {
	Mix Mix // tensor types; default F32
	// Workers quantize chunks of a tensor in parallel; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is called after each chunk of about a million
	// weights and after each tensor, with the tensors and bytes written
	// so far and in all.
	Progress func(p Progress)
}

// Progress reports how far Write has come.
type Progress struct {
	Tensor            string // the tensor being written
	Tensors, NTensors int    // tensors completed, and in all
	Bytes, NBytes     uint64 // tensor data bytes
	Elapsed           time.Duration
}

// chunkElements is about how many weights are generated and quantized at
// once (4 MB of float32), per worker.
const chunkElements = 1 << 20

// Write streams the model m in mix opts.Mix to w as a GGUF file. It stops
// with ctx's error when ctx is cancelled.
func Write(ctx context.Context, w io.Writer, m Model, opts Options) error {
	mix := opts.Mix
	if mix == "" {
		mix = MixF32
	}
	kv, err := m.Metadata(mix)
	if err != nil {
		return err
	}
	tensors, err := m.Tensors(ctx, mix, opts)
	if err != nil {
		return err
	}
	return gguf.Write(w, kv, tensors)
}

// Tensors returns the model's tensors for gguf.Write, each generating and
// quantizing its data when written. Write uses it; it is exported for
// callers that add their own metadata.
func (m Model) Tensors(ctx context.Context, mix Mix, opts Options) ([]gguf.WriterTensor, error) {
	if err := m.Shape.Validate(); err != nil {
		return nil, err
	}
	nVocab, err := m.vocabSize()
	if err != nil {
		return nil, err
	}
	specs := m.specs(uint64(nVocab))
	if mix != MixF32 {
		quantizeOrder(specs)
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([]gguf.WriterTensor, len(specs))
	var total uint64
	for i, sp := range specs {
		typ := mix.TensorType(sp.name, sp.layer, sp.dims, m.Shape)
		if !quant.CanQuantize(typ) {
			return nil, fmt.Errorf("synth: tensor %s: cannot write type %s", sp.name, typ)
		}
		out[i] = gguf.WriterTensor{Name: sp.name, Dims: sp.dims, Type: typ}
		total += out[i].Size()
	}
	start := time.Now()
	var done uint64
	for i, sp := range specs {
		t := &out[i]
		round := m.RoundBF16 && sp.kind == kindGauss // as llamaref --round: the drawn weights, not norms
		report := func(n uint64, finished bool) {
			done += n
			if opts.Progress != nil {
				completed := i
				if finished {
					completed++
				}
				opts.Progress(Progress{Tensor: sp.name, Tensors: completed, NTensors: len(out), Bytes: done, NBytes: total, Elapsed: time.Since(start)})
			}
		}
		gen := &generator{spec: sp, typ: t.Type, seed: m.Seed, round: round, workers: workers, progress: report}
		t.Write = func(w io.Writer) error { return gen.write(ctx, w) }
	}
	return out, nil
}

// generator produces one tensor's bytes: rows of weights from the
// tensor's own random stream, quantized in chunks of whole rows.
type generator struct {
	spec     tensorSpec
	typ      gguf.Type
	seed     uint64
	round    bool
	workers  int
	progress func(bytes uint64, finished bool)
	pos      int // values written so far, for kindFixed
}

func (g *generator) write(ctx context.Context, w io.Writer) error {
	rowLen := int(g.spec.dims[0])
	rows := 1
	for _, d := range g.spec.dims[1:] {
		rows *= int(d)
	}
	rowBytes, err := g.typ.RowBytes(rowLen)
	if err != nil {
		return err
	}
	chunkRows := min(rows, max(1, chunkElements/rowLen))
	nChunks := (rows + chunkRows - 1) / chunkRows
	workers := min(g.workers, nChunks)
	src := make([][]float32, workers)
	dst := make([][]byte, workers)
	for k := range workers {
		src[k] = make([]float32, chunkRows*rowLen)
		dst[k] = make([]byte, chunkRows*rowBytes)
	}
	r := newRNG(g.seed, g.spec.name)
	g.pos = 0 // a second write starts over, as the random stream does
	errs := make([]error, workers)
	for c := 0; c < nChunks; c += workers {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch := min(workers, nChunks-c)
		// The random stream is sequential: generate the batch's chunks in
		// order, then quantize them in parallel.
		for k := range batch {
			n := min(chunkRows, rows-(c+k)*chunkRows) * rowLen
			src[k] = src[k][:n]
			g.fill(r, src[k])
		}
		var wg sync.WaitGroup
		for k := range batch {
			wg.Go(func() {
				n := len(src[k]) / rowLen * rowBytes
				dst[k] = dst[k][:n]
				errs[k] = quant.Quantize(g.typ, src[k], dst[k])
			})
		}
		wg.Wait()
		for k := range batch {
			if errs[k] != nil {
				return fmt.Errorf("synth: tensor %s: %w", g.spec.name, errs[k])
			}
			if _, err := w.Write(dst[k]); err != nil {
				return err
			}
			g.progress(uint64(len(dst[k])), c+k == nChunks-1)
		}
	}
	return nil
}

// fill draws the next len(x) weights of the tensor.
//
// Each value is computed in float64 exactly as llamaref writes it in C and
// rounded to float32 once. The float64(...) conversions are not redundant:
// Go may fuse x*y+z into one multiply-add with a single rounding (it does
// on arm64), which would change the last bit of some weights; an explicit
// conversion forces the product to be rounded first.
func (g *generator) fill(r *rng, x []float32) {
	sp := &g.spec
	if sp.kind == kindFixed {
		g.pos += copy(x, sp.values[g.pos:])
		return
	}
	for i := range x {
		z := r.gauss()
		var v float32
		switch sp.kind {
		case kindGauss:
			v = float32(sp.scale * z)
		case kindNorm, kindSignedNorm:
			v = float32(1.0 + float64(sp.scale*z))
		case kindRopeFactor:
			v = float32(1.0 + float64(3.0*math.Abs(z)))
		case kindAroundScale:
			v = float32(sp.scale * (1.0 + float64(0.05*z)))
		}
		if sp.kind == kindSignedNorm && r.next()>>63 != 0 {
			v = -v
		}
		if g.round {
			v = roundBF16(v)
		}
		x[i] = v
	}
}
