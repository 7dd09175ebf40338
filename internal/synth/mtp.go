package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/smolgo/smolgo/gguf"
)

// WriteMTP writes src, an F32 Qwen3.5 file (architecture qwen35 or
// qwen35moe) without a multi-token-prediction block, to w with one added
// after the model's own blocks, laid out as llama.cpp's converter lays out
// Qwen3.5's MTP block: block_count one more, nextn_predict_layers 1, and
// blk.N (N the old block count) holding a full-attention Qwen3.5 block
// (the tensors of the model's last full-attention block, with new random
// values of the same scale) plus nextn.eh_proj, nextn.enorm, nextn.hnorm
// and nextn.shared_head_norm. The block reads the model's token embedding
// and output projection, as Qwen3.5's files do. The values depend only on
// seed and the tensors' names and shapes.
func WriteMTP(w io.Writer, src *gguf.File, seed uint64) error {
	kv, ts, err := withMTP(src, seed)
	if err != nil {
		return err
	}
	return gguf.Write(w, kv, ts)
}

func withMTP(src *gguf.File, seed uint64) ([]gguf.KV, []gguf.WriterTensor, error) {
	arch, err := src.Architecture()
	if err != nil {
		return nil, nil, err
	}
	if arch != "qwen35" && arch != "qwen35moe" {
		return nil, nil, fmt.Errorf("synth: an MTP block is Qwen3.5's (qwen35, qwen35moe), not %s's", arch)
	}
	if _, ok := src.Get(arch + ".nextn_predict_layers"); ok {
		return nil, nil, fmt.Errorf("synth: the file already has %s.nextn_predict_layers", arch)
	}
	n, err := src.Uint32(arch + ".block_count")
	if err != nil {
		return nil, nil, err
	}
	embd, err := src.Uint32(arch + ".embedding_length")
	if err != nil {
		return nil, nil, err
	}
	// The last full-attention block (one with attn_q) is the pattern.
	pattern := -1
	for i := int(n) - 1; i >= 0 && pattern < 0; i-- {
		if _, ok := src.Tensor("blk." + strconv.Itoa(i) + ".attn_q.weight"); ok {
			pattern = i
		}
	}
	if pattern < 0 {
		return nil, nil, fmt.Errorf("synth: no full-attention block (blk.*.attn_q.weight) to pattern the MTP block on")
	}
	kv := make([]gguf.KV, 0, len(src.KV)+1)
	for _, e := range src.KV {
		if e.Key == arch+".block_count" {
			e.Value = n + 1
		}
		kv = append(kv, e)
	}
	kv = append(kv, gguf.KV{Key: arch + ".nextn_predict_layers", Value: uint32(1)})

	var ts []gguf.WriterTensor
	from := "blk." + strconv.Itoa(pattern) + "."
	to := "blk." + strconv.Itoa(int(n)) + "."
	var block []gguf.WriterTensor
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		if ti.Type != gguf.TypeF32 {
			return nil, nil, fmt.Errorf("synth: %s is %v: WriteMTP wants an F32 file (quantize afterwards)", ti.Name, ti.Type)
		}
		data := src.TensorData(ti)
		ts = append(ts, gguf.WriterTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: data})
		rest, ok := strings.CutPrefix(ti.Name, from)
		if !ok {
			continue
		}
		name := to + rest
		var vals []float32
		if len(ti.Dims) == 1 || ti.Dims[1] == 1 && len(ti.Dims) == 2 {
			vals = jitter(seed, name, floats(data), 0.1) // a norm: the pattern's, a little moved
		} else {
			vals = gaussLike(seed, name, floats(data))
		}
		block = append(block, f32Tensor(name, ti.Dims, vals))
	}
	outNorm, ok := src.Tensor("output_norm.weight")
	if !ok {
		return nil, nil, fmt.Errorf("synth: no output_norm.weight")
	}
	e := uint64(embd)
	ones := make([]float32, e)
	for i := range ones {
		ones[i] = 1
	}
	eh := make([]float32, 2*e*e)
	r := newRNG(seed, to+"nextn.eh_proj.weight")
	for i := range eh {
		eh[i] = float32(r.gauss() / math.Sqrt(float64(2*e)))
	}
	block = append(block,
		f32Tensor(to+"nextn.eh_proj.weight", []uint64{2 * e, e}, eh),
		f32Tensor(to+"nextn.enorm.weight", []uint64{e}, jitter(seed, to+"nextn.enorm.weight", ones, 0.2)),
		f32Tensor(to+"nextn.hnorm.weight", []uint64{e}, jitter(seed, to+"nextn.hnorm.weight", ones, 0.2)),
		f32Tensor(to+"nextn.shared_head_norm.weight", []uint64{e},
			jitter(seed, to+"nextn.shared_head_norm.weight", floats(src.TensorData(outNorm)), 0.1)))
	return kv, append(ts, block...), nil
}

// floats reads little-endian float32s.
func floats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// gaussLike returns len(like) seeded normal values with like's RMS.
func gaussLike(seed uint64, name string, like []float32) []float32 {
	var ss float64
	for _, x := range like {
		ss += float64(x) * float64(x)
	}
	rms := math.Sqrt(ss / float64(max(len(like), 1)))
	r := newRNG(seed, name)
	v := make([]float32, len(like))
	for i := range v {
		v[i] = float32(r.gauss() * rms)
	}
	return v
}

// jitter returns base with each value multiplied by 1 + amount·N(0, 1).
func jitter(seed uint64, name string, base []float32, amount float64) []float32 {
	r := newRNG(seed, name)
	v := make([]float32, len(base))
	for i, x := range base {
		v[i] = float32(float64(x) * (1 + amount*r.gauss()))
	}
	return v
}

func f32Tensor(name string, dims []uint64, v []float32) gguf.WriterTensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return gguf.WriterTensor{Name: name, Dims: append([]uint64(nil), dims...), Type: gguf.TypeF32, Data: b}
}
