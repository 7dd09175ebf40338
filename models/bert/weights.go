package bert

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/tensor"
)

// Weights are a BERT model as a file holds it: the hyper-parameters and
// every tensor, checked for shape and type. Matrices are views of the file's
// memory mapping; norm weights, biases and the small embedding tables
// (positions, token types) are read into slices once. The file must stay
// open while the weights are used.
type Weights struct {
	Config Config
	File   *gguf.File

	Embd      *tensor.Matrix // token_embd.weight [Vocab rows × Embd]
	Types     []float32      // token_types.weight row 0 [Embd] (nil: none); llama.cpp gives every token type 0
	Positions *tensor.Matrix // position_embd.weight [Positions rows × Embd]
	EmbdNorm  Norm           // token_embd_norm
	Layers    []LayerWeights

	// The classification head of a reranker (pooling rank): nil without
	// one. Cls is optional even then (some heads are one projection).
	Cls, ClsOut         *tensor.Matrix // cls.weight [Embd × Embd], cls.output.weight [Labels × Embd]
	ClsBias, ClsOutBias []float32      // optional
}

// Norm is a LayerNorm's weight and bias.
type Norm struct{ W, B []float32 }

// LayerWeights are one encoder block's tensors. Biases the file lacks are
// nil (llama.cpp treats every bias but the norms' as optional).
type LayerWeights struct {
	Q, K, V, O          *tensor.Matrix
	QBias, KBias, VBias []float32
	OBias               []float32
	AttnNorm            Norm // attn_output_norm
	Up, Down            *tensor.Matrix
	UpBias, DownBias    []float32
	OutNorm             Norm // layer_output_norm
}

// LoadWeights reads and checks every tensor of a BERT file whose
// hyper-parameters are cfg (ConfigFromGGUF). Errors name the tensor.
func LoadWeights(f *gguf.File, cfg Config) (*Weights, error) {
	w := &Weights{Config: cfg, File: f}
	E := cfg.Embd
	ld := loader{f: f}
	w.Embd = ld.matrix("token_embd.weight", E, cfg.Vocab)
	w.Positions = ld.matrix("position_embd.weight", E, cfg.Positions)
	if cfg.TokenTypes > 0 {
		types := ld.matrix("token_types.weight", E, cfg.TokenTypes)
		if types != nil {
			w.Types = make([]float32, E)
			if err := types.Row(0, w.Types); err != nil {
				ld.fail(err)
			}
		}
	}
	w.EmbdNorm = ld.norm("token_embd_norm")
	if _, ok := f.Tensor("blk.0.attn_qkv.weight"); ok {
		return nil, fmt.Errorf("bert: tensor blk.0.attn_qkv.weight: fused Q/K/V projections are not supported")
	}
	w.Layers = make([]LayerWeights, cfg.Layers)
	for i := 0; i < cfg.Layers && ld.err == nil; i++ {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
		w.Layers[i] = LayerWeights{
			Q: ld.matrix(n("attn_q.weight"), E, E), QBias: ld.optVector(n("attn_q.bias"), E),
			K: ld.matrix(n("attn_k.weight"), E, E), KBias: ld.optVector(n("attn_k.bias"), E),
			V: ld.matrix(n("attn_v.weight"), E, E), VBias: ld.optVector(n("attn_v.bias"), E),
			O: ld.matrix(n("attn_output.weight"), E, E), OBias: ld.optVector(n("attn_output.bias"), E),
			AttnNorm: ld.norm(n("attn_output_norm")),
			Up:       ld.matrix(n("ffn_up.weight"), E, cfg.FFN), UpBias: ld.optVector(n("ffn_up.bias"), cfg.FFN),
			Down: ld.matrix(n("ffn_down.weight"), cfg.FFN, E), DownBias: ld.optVector(n("ffn_down.bias"), E),
			OutNorm: ld.norm(n("layer_output_norm")),
		}
	}
	if _, ok := f.Tensor("cls.output.weight"); ok {
		w.ClsOut = ld.matrix("cls.output.weight", E, cfg.Labels)
		w.ClsOutBias = ld.optVector("cls.output.bias", cfg.Labels)
		if _, ok := f.Tensor("cls.weight"); ok {
			w.Cls = ld.matrix("cls.weight", E, E)
			w.ClsBias = ld.optVector("cls.bias", E)
		}
	} else if _, ok := f.Tensor("cls.weight"); ok && ld.err == nil {
		ld.fail(fmt.Errorf("tensor cls.weight is in the file without cls.output.weight"))
	}
	if ld.err != nil {
		return nil, fmt.Errorf("bert: %w", ld.err)
	}
	return w, nil
}

// Ranks reports whether the model has a classification head.
func (w *Weights) Ranks() bool { return w.ClsOut != nil }

// loader collects the first error while wrapping tensors.
type loader struct {
	f   *gguf.File
	err error
}

func (l *loader) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

func (l *loader) info(name string, dims ...int) *gguf.TensorInfo {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("tensor %s is missing", name)
		return nil
	}
	// ggml drops trailing dimensions of 1 (a head of one label is 1-D).
	for i := range max(len(t.Dims), len(dims)) {
		have, want := uint64(1), uint64(1)
		if i < len(t.Dims) {
			have = t.Dims[i]
		}
		if i < len(dims) {
			want = uint64(dims[i])
		}
		ok = ok && have == want
	}
	if !ok {
		l.err = fmt.Errorf("tensor %s has shape %v, the config needs %v", name, t.Dims, dims)
		return nil
	}
	return t
}

func (l *loader) data(t *gguf.TensorInfo) []byte {
	d := l.f.TensorData(t)
	if uint64(len(d)) != t.Size() {
		l.err = fmt.Errorf("tensor %s: data lies outside the file", t.Name)
		return nil
	}
	return d
}

func (l *loader) matrix(name string, cols, rows int) *tensor.Matrix {
	t := l.info(name, cols, rows)
	if t == nil {
		return nil
	}
	d := l.data(t)
	if d == nil {
		return nil
	}
	m, err := tensor.NewMatrix(name, t.Type, rows, cols, d)
	if err != nil {
		l.fail(err)
	}
	return m
}

// optVector is vector for a tensor the file may lack (nil then).
func (l *loader) optVector(name string, n int) []float32 {
	if _, ok := l.f.Tensor(name); !ok {
		return nil
	}
	return l.vector(name, n)
}

func (l *loader) norm(prefix string) Norm {
	return Norm{W: l.vector(prefix+".weight", l.embd()), B: l.vector(prefix+".bias", l.embd())}
}

// embd is the width of token_embd (norms are as wide).
func (l *loader) embd() int {
	if t, ok := l.f.Tensor("token_embd.weight"); ok && len(t.Dims) == 2 {
		return int(t.Dims[0])
	}
	return 0
}

// vector reads a 1-D f32 tensor into a new slice; a NaN or infinite
// element is an error naming it.
func (l *loader) vector(name string, n int) []float32 {
	t := l.info(name, n)
	if t == nil {
		return nil
	}
	if t.Type != gguf.TypeF32 {
		l.err = fmt.Errorf("tensor %s has type %v, want f32", name, t.Type)
		return nil
	}
	d := l.data(t)
	if d == nil {
		return nil
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		if x := float64(v[i]); math.IsNaN(x) || math.IsInf(x, 0) {
			l.err = fmt.Errorf("tensor %s: element %d is %v; the file is corrupt", name, i, v[i])
			return nil
		}
	}
	return v
}
