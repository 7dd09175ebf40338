package llama

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/tensor"
)

// Weights are a llama-family model as a file holds it: the hyper-parameters,
// the architecture description, and every tensor the description needs,
// checked for shape and type. The matrices are views of the file's memory
// mapping (no copy); norm weights and biases are read into slices once.
//
// Weights say what a model is, not where it runs: NewCPU runs them on the
// CPU, a device registered with RegisterDevice (package cuda) uploads them.
// They are read-only and may be shared by several runners; the file must
// stay open while they are used.
type Weights struct {
	Config Config
	Arch   Arch

	File    *gguf.File
	Embd    *tensor.Matrix // token_embd.weight [Vocab rows × Embd]
	Output  *tensor.Matrix // output.weight, or Embd itself when tied
	OutNorm []float32      // output_norm.weight [Embd]
	Layers  []LayerWeights

	// ClsOut is a reranker's classification head (cls.output.weight: one
	// row per label, applied to the last token's hidden state; a
	// Qwen3-Reranker file holds the lm_head rows of "yes" and "no"), nil
	// without one; ClsOutBias is its optional bias.
	ClsOut     *tensor.Matrix
	ClsOutBias []float32
}

// LayerWeights are one block's tensors: the skeleton's norms and the
// weights of its mixer's and FFN's kinds (the field of each kind the
// layer's Layer names is set, the others are nil).
type LayerWeights struct {
	AttnNorm, FFNNorm         []float32 // the mixer's and the FFN's input RMSNorm weights [Embd]
	PostAttnNorm, PostFFNNorm []float32 // Layer.PostNorms: [Embd]

	Attention     *AttentionWeights     // Mixer *Attention
	ShortConv     *ShortConvWeights     // Mixer *ShortConv
	GatedDeltaNet *GatedDeltaNetWeights // Mixer *GatedDeltaNet
	GLU           *GLUWeights           // FFN *GLU
	MoE           *MoEWeights           // FFN *MoE
}

// matrices lists the layer's matrices, as pointers into its kinds' weights.
func (lw *LayerWeights) matrices() []**tensor.Matrix {
	var ms []**tensor.Matrix
	if lw.Attention != nil {
		ms = append(ms, lw.Attention.matrices()...)
	}
	if lw.ShortConv != nil {
		ms = append(ms, lw.ShortConv.matrices()...)
	}
	if lw.GatedDeltaNet != nil {
		ms = append(ms, lw.GatedDeltaNet.matrices()...)
	}
	if lw.GLU != nil {
		ms = append(ms, lw.GLU.matrices()...)
	}
	if lw.MoE != nil {
		ms = append(ms, lw.MoE.matrices()...)
	}
	return ms
}

// clone returns a copy of lw whose kinds' weights are its own structs (the
// matrices they point to are shared), so that a runner can replace a
// matrix with its own copy without changing the Weights.
func (lw LayerWeights) clone() LayerWeights {
	if lw.Attention != nil {
		a := *lw.Attention
		lw.Attention = &a
	}
	if lw.ShortConv != nil {
		s := *lw.ShortConv
		lw.ShortConv = &s
	}
	if lw.GatedDeltaNet != nil {
		g := *lw.GatedDeltaNet
		lw.GatedDeltaNet = &g
	}
	if lw.GLU != nil {
		g := *lw.GLU
		lw.GLU = &g
	}
	if lw.MoE != nil {
		lw.MoE = lw.MoE.clone()
	}
	return lw
}

// Tied reports whether the output projection is the token embedding.
func (w *Weights) Tied() bool { return w.Output == w.Embd }

// LoadWeights reads the tensors arch needs from f, whose hyper-parameters
// are cfg (ConfigFromGGUF): the skeleton's norms, and each layer's mixer
// and FFN kinds read their own tensors. Every tensor is checked against
// cfg's shapes; an error names the tensor. A tensor the description does
// not read is refused rather than left out. When the file has no
// output.weight the output projection is token_embd.weight (tied
// embeddings), as in llama.cpp.
func LoadWeights(f *gguf.File, cfg Config, arch Arch) (*Weights, error) {
	if err := arch.Validate(cfg); err != nil {
		return nil, err
	}
	w := &Weights{Config: cfg, Arch: arch, File: f}
	ld := loader{f: f, arch: arch.Name}
	w.Embd = ld.matrix("token_embd.weight", cfg.Embd, cfg.Vocab)
	if _, ok := f.Tensor("output.weight"); ok {
		w.Output = ld.matrix("output.weight", cfg.Embd, cfg.Vocab)
	} else {
		w.Output = w.Embd
	}
	outNorm := "output_norm"
	if arch.OutputNorm != "" {
		outNorm = arch.OutputNorm
	}
	w.OutNorm = ld.vector(outNorm+".weight", cfg.Embd)
	w.Layers = make([]LayerWeights, cfg.Layers)
	for i := 0; i < len(w.Layers) && ld.err == nil; i++ {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
		l := arch.Layers[i]
		lw := &w.Layers[i]
		lw.AttnNorm = ld.vector(n("attn_norm.weight"), cfg.Embd)
		l.Mixer.load(&ld, cfg, i, lw)
		lw.FFNNorm = ld.vector(n(l.ffnNorm()+".weight"), cfg.Embd)
		l.FFN.load(&ld, cfg, i, lw)
		if l.PostNorms {
			lw.PostAttnNorm = ld.vector(n("post_attention_norm.weight"), cfg.Embd)
			lw.PostFFNNorm = ld.vector(n("post_ffw_norm.weight"), cfg.Embd)
		} else {
			post := []string{n("post_ffw_norm.weight")}
			if l.ffnNorm() != "post_attention_norm" {
				post = append(post, n("post_attention_norm.weight"))
			}
			ld.unused(arch.Name, post...)
		}
	}
	if t, ok := f.Tensor("cls.output.weight"); ok && ld.err == nil {
		labels := 1
		if len(t.Dims) >= 2 {
			labels = int(min(t.Dims[1], 1<<20))
			w.ClsOut = ld.matrix("cls.output.weight", cfg.Embd, labels)
		} else { // one label: ggml drops the 1
			w.ClsOut = ld.rowMatrix("cls.output.weight", cfg.Embd)
		}
		if _, ok := f.Tensor("cls.output.bias"); ok {
			w.ClsOutBias = ld.vector("cls.output.bias", labels)
		}
	}
	if ld.err != nil {
		return nil, fmt.Errorf("llama: %w", ld.err)
	}
	return w, nil
}

// RopeFactors reads rope_freqs.weight, Llama 3's per-frequency RoPE
// factors (one per rotated pair of cfg.Rope), or returns nil when the file
// has none. A family puts them in its layers' rope.Config.Factors.
func RopeFactors(f *gguf.File, cfg Config) ([]float32, error) {
	if _, ok := f.Tensor("rope_freqs.weight"); !ok {
		return nil, nil
	}
	return RopeFactorsNamed(f, cfg, "rope_freqs.weight")
}

// RopeFactorsNamed reads the per-frequency RoPE factors of tensor name (one
// f32 per rotated pair of cfg.Rope, each above 0): rope_freqs.weight, or
// LongRoPE's rope_factors_short.weight and rope_factors_long.weight.
func RopeFactorsNamed(f *gguf.File, cfg Config, name string) ([]float32, error) {
	ld := loader{f: f}
	v := ld.vector(name, cfg.Rope.Dims/2)
	if ld.err != nil {
		return nil, fmt.Errorf("llama: %w", ld.err)
	}
	for i, x := range v {
		if !(x > 0) {
			return nil, fmt.Errorf("llama: tensor %s: factor %d is %v, want a number above 0", name, i, x)
		}
	}
	return v, nil
}

// loader collects the first error while wrapping tensors.
type loader struct {
	f    *gguf.File
	arch string // the architecture's name, for errors
	err  error
}

// unused fails when the file has one of the named tensors, which the
// architecture description says the block does not read: running without
// them would compute another model than the file's.
func (l *loader) unused(arch string, names ...string) {
	if l.err != nil {
		return
	}
	for _, name := range names {
		if _, ok := l.f.Tensor(name); ok {
			l.err = fmt.Errorf("tensor %s is in the file, but architecture %s does not use it", name, arch)
			return
		}
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
	ok = len(t.Dims) == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = t.Dims[i] == uint64(dims[i])
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
		l.err = err
	}
	return m
}

// split reads a 2-D tensor of cols columns whose rows are the given parts,
// one after another, as one matrix per part: views of the tensor's rows, no
// copy. The tensor must have exactly the parts' rows.
func (l *loader) split(name string, cols int, parts ...int) []*tensor.Matrix {
	rows := 0
	for _, p := range parts {
		rows += p
	}
	t := l.info(name, cols, rows)
	if t == nil {
		return nil
	}
	d := l.data(t)
	if d == nil {
		return nil
	}
	rowBytes := len(d) / rows
	ms := make([]*tensor.Matrix, len(parts))
	first := 0
	for i, p := range parts {
		m, err := tensor.NewMatrix(fmt.Sprintf("%s[rows %d:%d]", name, first, first+p), t.Type, p, cols, d[first*rowBytes:(first+p)*rowBytes])
		if err != nil {
			l.err = err
			return nil
		}
		ms[i] = m
		first += p
	}
	return ms
}

// vector reads a 1-D f32 tensor (a norm weight or a bias) into a new slice.
// A NaN or infinite weight is an error naming the tensor and the element:
// it would turn every activation after it into NaN, and the logits into
// garbage that sampling cannot tell from a real answer.
func (l *loader) vector(name string, n int) []float32 {
	t := l.info(name, n)
	if t == nil {
		return nil
	}
	return l.floats(t, n)
}

// floats reads the n f32 elements of tensor t into a new slice, refusing
// another type and a NaN or infinite element.
func (l *loader) floats(t *gguf.TensorInfo, n int) []float32 {
	if t.Type != gguf.TypeF32 {
		l.err = fmt.Errorf("tensor %s has type %v, want f32", t.Name, t.Type)
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
			l.err = fmt.Errorf("tensor %s: element %d is %v; the file is corrupt", t.Name, i, v[i])
			return nil
		}
	}
	return v
}

// experts reads a 3-D tensor [cols, rows, n] of n experts' matrices as one
// matrix of rows×cols per expert: views of the expert's rows in the file,
// no copy.
func (l *loader) experts(name string, cols, rows, n int) []*tensor.Matrix {
	t := l.info(name, cols, rows, n)
	if t == nil {
		return nil
	}
	d := l.data(t)
	if d == nil {
		return nil
	}
	per := len(d) / n
	ms := make([]*tensor.Matrix, n)
	for e := range ms {
		m, err := tensor.NewMatrix(fmt.Sprintf("%s[expert %d]", name, e), t.Type, rows, cols, d[e*per:(e+1)*per])
		if err != nil {
			l.err = err
			return nil
		}
		ms[e] = m
	}
	return ms
}

// vectors reads a 2-D f32 tensor [size, n] as n vectors of size (views of
// one slice), such as the experts' biases.
func (l *loader) vectors(name string, size, n int) [][]float32 {
	t := l.info(name, size, n)
	if t == nil {
		return nil
	}
	flat := l.floats(t, size*n)
	if flat == nil {
		return nil
	}
	vs := make([][]float32, n)
	for i := range vs {
		vs[i] = flat[i*size : (i+1)*size : (i+1)*size]
	}
	return vs
}

// rowMatrix reads a 1-D tensor of cols values as a matrix of one row (ggml
// drops a trailing dimension of 1).
func (l *loader) rowMatrix(name string, cols int) *tensor.Matrix {
	t := l.info(name, cols)
	if t == nil {
		return nil
	}
	d := l.data(t)
	if d == nil {
		return nil
	}
	m, err := tensor.NewMatrix(name, t.Type, 1, cols, d)
	if err != nil {
		l.err = err
	}
	return m
}

// vectorShaped reads a 2-D f32 tensor [cols, rows] (a convolution's
// kernels: rows channels of cols taps) into one slice, row after row.
func (l *loader) vectorShaped(name string, cols, rows int) []float32 {
	t := l.info(name, cols, rows)
	if t == nil {
		return nil
	}
	return l.floats(t, cols*rows)
}
