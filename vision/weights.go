package vision

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/bigmem"
	"github.com/smolgo/smolgo/tensor"
)

// norm is a LayerNorm's or RMSNorm's weight and bias (nil: none).
type norm struct{ w, b []float32 }

// block is one encoder layer's tensors.
type block struct {
	ln1, ln2       norm
	q, k, v, o     *linear
	up, gate, down *linear // gate: nil without (Qwen2.5's SwiGLU has one)
	qkv            *linear // q, k and v stacked, when packed together
	qb, kb, vb     []float32
}

// weights are a projector's tensors.
type weights struct {
	patch, patch1 *linear   // v.patch_embd.weight (and Qwen's .1) as [embd × 3·P·P]
	pos           []float32 // v.position_embd.weight: [patches × embd], nil without
	blocks        []block
	post          norm // v.post_ln

	// gemma3
	softNorm []float32 // mm.soft_emb_norm.weight
	inProj   *linear   // mm.input_projection.weight, transposed: [projDim × embd]
	// idefics3
	fc *linear // mm.model.fc.weight: [projDim × embd·merge²]
	// Qwen
	mm0, mm2 *linear // merger MLP: [4·embd × 4·embd], [projDim × 4·embd]
	// Qwen3-VL
	patchBias []float32   // v.patch_embd.bias, added to the two kernels' sum
	posSide   int         // the learned positions' grid side (pos holds posSide² rows)
	deep      []deepMerge // the deepstack mergers, in block order
}

// deepMerge is a Qwen3-VL deepstack merger: block's output, each 2 × 2
// group's rows read as one row of 4·embd, LayerNorm (norm, 4·embd wide),
// fc1, GELU, fc2 to the text width.
type deepMerge struct {
	block    int
	norm     norm
	fc1, fc2 *linear
}

// loader reads tensors by name, the first error kept.
type loader struct {
	f   *gguf.File
	pk  *packer
	err error
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
	n := len(t.Dims)
	for n > len(dims) && t.Dims[n-1] == 1 {
		n--
	}
	ok = n == len(dims)
	for i := 0; ok && i < n; i++ {
		ok = t.Dims[i] == uint64(dims[i])
	}
	if !ok {
		l.err = fmt.Errorf("tensor %s has shape %v, want %v", name, t.Dims, dims)
		return nil
	}
	return t
}

func (l *loader) has(name string) bool {
	_, ok := l.f.Tensor(name)
	return ok
}

// floats reads an F32 tensor's values (refusing NaN and infinities).
func (l *loader) floats(name string, dims ...int) []float32 {
	t := l.info(name, dims...)
	if t == nil {
		return nil
	}
	if t.Type != gguf.TypeF32 && t.Type != gguf.TypeF16 {
		l.err = fmt.Errorf("tensor %s has type %v, want f32 or f16", name, t.Type)
		return nil
	}
	d := l.f.TensorData(t)
	n := int(t.NumElements())
	v := make([]float32, n)
	for i := range v {
		if t.Type == gguf.TypeF32 {
			v[i] = math.Float32frombits(uint32(d[4*i]) | uint32(d[4*i+1])<<8 | uint32(d[4*i+2])<<16 | uint32(d[4*i+3])<<24)
		} else {
			v[i] = tensor.FromF16(uint16(d[2*i]) | uint16(d[2*i+1])<<8)
		}
		if math.IsNaN(float64(v[i])) || math.IsInf(float64(v[i]), 0) {
			l.err = fmt.Errorf("tensor %s holds %v at %d", name, v[i], i)
			return nil
		}
	}
	return v
}

// optFloats is floats for a tensor that may be absent (nil then).
func (l *loader) optFloats(name string, dims ...int) []float32 {
	if !l.has(name) {
		return nil
	}
	return l.floats(name, dims...)
}

// matrix reads a 2-D tensor of rows × cols (ggml's [cols, rows]).
func (l *loader) matrix(name string, rows, cols int, dims ...int) *tensor.Matrix {
	if dims == nil {
		dims = []int{cols, rows}
	}
	t := l.info(name, dims...)
	if t == nil {
		return nil
	}
	m, err := tensor.NewMatrix(name, t.Type, rows, cols, l.f.TensorData(t))
	if err != nil {
		l.err = err
	}
	return m
}

// lin makes a linear of a matrix and an optional bias tensor.
func (l *loader) lin(name string, rows, cols int, bias bool) *linear {
	m := l.matrix(name+".weight", rows, cols)
	var b []float32
	if bias {
		b = l.optFloats(name+".bias", rows)
	}
	if m == nil {
		return nil
	}
	return l.pk.linear(m, b)
}

func (w *weights) load(f *gguf.File, p *params, pk *packer) error {
	l := &loader{f: f, pk: pk}
	E, F, P := p.embd, p.ff, p.patch
	qwen := p.qwen()
	// The patch embedding is a convolution of stride P: a product with
	// each patch's 3·P·P values, channel-major ([c][y][x], ggml's im2col).
	// ggml's conv_2d multiplies in float16 (its im2col is F16): the
	// kernel is rounded to float16 here, the patches before each product.
	w.patch = l.pk.linear(roundF16(l, l.matrix("v.patch_embd.weight", E, 3*P*P, P, P, 3, E)), nil)
	if qwen {
		w.patch1 = l.pk.linear(roundF16(l, l.matrix("v.patch_embd.weight.1", E, 3*P*P, P, P, 3, E)), nil)
		if p.typ == Qwen3VL {
			w.patchBias = l.floats("v.patch_embd.bias", E)
			w.pos, w.posSide = l.squarePositions(E)
		} else if l.has("v.patch_embd.bias") {
			return fmt.Errorf("%s: v.patch_embd.bias is not expected", p.typ)
		}
	} else if w.patch != nil {
		w.patch.bias = l.floats("v.patch_embd.bias", E)
		side := p.imageSize / P
		w.pos = l.floats("v.position_embd.weight", E, side*side)
	}
	for i := range p.layers {
		n := func(s string) string { return fmt.Sprintf("v.blk.%d.%s", i, s) }
		var b block
		b.ln1 = norm{l.floats(n("ln1.weight"), E), l.optFloats(n("ln1.bias"), E)}
		b.ln2 = norm{l.floats(n("ln2.weight"), E), l.optFloats(n("ln2.bias"), E)}
		if p.typ == Qwen3VL {
			// q, k and v stored stacked (attn_qkv), as mtmd's graph reads them.
			b.q, b.k, b.v = l.stackedQKV(n("attn_qkv"), E)
		} else {
			b.q = l.lin(n("attn_q"), E, E, true)
			b.k = l.lin(n("attn_k"), E, E, true)
			b.v = l.lin(n("attn_v"), E, E, true)
		}
		b.o = l.lin(n("attn_out"), E, E, true)
		b.up = l.lin(n("ffn_up"), F, E, true)
		if l.has(n("ffn_gate.weight")) {
			b.gate = l.lin(n("ffn_gate"), F, E, true)
		}
		b.down = l.lin(n("ffn_down"), E, F, true)
		if l.err == nil {
			b.qkv, b.qb, b.kb, b.vb = pk.fuse(b.q, b.k, b.v)
		}
		w.blocks = append(w.blocks, b)
	}
	w.post = norm{l.optFloats("v.post_ln.weight", E), l.optFloats("v.post_ln.bias", E)}
	switch p.typ {
	case Gemma3:
		w.softNorm = l.floats("mm.soft_emb_norm.weight", E)
		// Stored [projDim, E] (ggml order), applied transposed: copy it into
		// a [projDim × E] matrix.
		if t := l.info("mm.input_projection.weight", p.projDim, E); t != nil {
			w.inProj = l.pk.linear(transposed(l, t, E, p.projDim), nil)
		}
	case Idefics3:
		w.fc = l.lin("mm.model.fc", p.projDim, E*p.merge*p.merge, false)
	default:
		M := E * p.merge * p.merge
		w.mm0 = l.lin("mm.0", M, M, true)
		w.mm2 = l.lin("mm.2", p.projDim, M, true)
		if p.typ == Qwen3VL {
			w.loadDeepstack(l, f, p, M)
		}
	}
	if l.err == nil && (p.typ == Gemma3 || p.typ == Idefics3) && (w.post.w == nil) {
		l.err = fmt.Errorf("%s: v.post_ln.weight is missing", p.typ)
	}
	if l.err == nil && p.typ == Qwen25VL {
		for i, b := range w.blocks {
			if b.gate == nil {
				l.err = fmt.Errorf("%s: v.blk.%d.ffn_gate.weight is missing (SwiGLU)", p.typ, i)
				break
			}
		}
	}
	return l.err
}

// loadDeepstack reads the deepstack mergers (v.deepstack.N.*): a block
// has one when its fc1 is in the file, as clip.cpp decides. The file's
// clip.vision.is_deepstack_layers, where present, must say the same.
func (w *weights) loadDeepstack(l *loader, f *gguf.File, p *params, M int) {
	var flags []bool
	if v, ok := f.Get("clip.vision.is_deepstack_layers"); ok {
		if flags, ok = v.([]bool); !ok || len(flags) != p.layers {
			l.err = fmt.Errorf("clip.vision.is_deepstack_layers is %v, want %d booleans", v, p.layers)
			return
		}
	}
	p.deepstack = nil
	for i := range p.layers {
		n := func(s string) string { return fmt.Sprintf("v.deepstack.%d.%s", i, s) }
		has := l.has(n("fc1.weight"))
		if flags != nil && flags[i] != has {
			l.err = fmt.Errorf("clip.vision.is_deepstack_layers[%d] is %v, but tensor %s is %s", i, flags[i], n("fc1.weight"), map[bool]string{true: "present", false: "absent"}[has])
			return
		}
		if !has {
			continue
		}
		d := deepMerge{block: i}
		d.norm = norm{l.floats(n("norm.weight"), M), l.floats(n("norm.bias"), M)}
		d.fc1 = l.lin(n("fc1"), M, M, true)
		d.fc2 = l.lin(n("fc2"), p.projDim, M, true)
		w.deep = append(w.deep, d)
		p.deepstack = append(p.deepstack, i)
	}
}

// squarePositions reads v.position_embd.weight, E × side² (side² rows of
// E), the learned positions of a side × side patch grid (clip.cpp takes
// the side as the square root of the row count).
func (l *loader) squarePositions(E int) ([]float32, int) {
	const name = "v.position_embd.weight"
	if l.err != nil {
		return nil, 0
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("tensor %s is missing", name)
		return nil, 0
	}
	if len(t.Dims) < 2 || t.Dims[1] == 0 || t.Dims[1] > maxPatches {
		l.err = fmt.Errorf("tensor %s has shape %v, want [%d, side²]", name, t.Dims, E)
		return nil, 0
	}
	rows := int(t.Dims[1])
	side := int(math.Sqrt(float64(rows)))
	for side*side > rows {
		side--
	}
	for (side+1)*(side+1) <= rows {
		side++
	}
	if side*side != rows {
		l.err = fmt.Errorf("tensor %s has %d rows, not a square grid of positions", name, rows)
		return nil, 0
	}
	return l.floats(name, E, rows), side
}

// stackedQKV reads name.weight, [E, 3E] (q's, k's and v's rows one after
// the other), and name.bias, as three linears over thirds of the file's
// data.
func (l *loader) stackedQKV(name string, E int) (q, k, v *linear) {
	t := l.info(name+".weight", E, 3*E)
	bias := l.floats(name+".bias", 3*E)
	if t == nil || bias == nil {
		return nil, nil, nil
	}
	d := l.f.TensorData(t)
	part := len(d) / 3
	var out [3]*linear
	for i := range out {
		m, err := tensor.NewMatrix(fmt.Sprintf("%s.weight[%d]", name, i), t.Type, E, E, d[i*part:(i+1)*part])
		if err != nil {
			l.err = err
			return nil, nil, nil
		}
		out[i] = l.pk.linear(m, bias[i*E:(i+1)*E])
	}
	return out[0], out[1], out[2]
}

// transposed copies tensor t (cols × rows in ggml order: rows of cols
// values) as its transpose, a matrix of cols rows by rows columns (what
// ggml_cont(ggml_transpose(t)) makes). F32 and F16 only.
func transposed(l *loader, t *gguf.TensorInfo, rows, cols int) *tensor.Matrix {
	es := 4
	switch t.Type {
	case gguf.TypeF32:
	case gguf.TypeF16:
		es = 2
	default:
		l.err = fmt.Errorf("tensor %s has type %v; it is used transposed, which needs f32 or f16", t.Name, t.Type)
		return nil
	}
	src := l.f.TensorData(t)
	dst := make([]byte, len(src))
	// src element (r, c) is at r*cols + c; dst (c, r) at c*rows + r.
	for r := range rows {
		for c := range cols {
			copy(dst[(c*rows+r)*es:(c*rows+r+1)*es], src[(r*cols+c)*es:(r*cols+c+1)*es])
		}
	}
	m, err := tensor.NewMatrix(t.Name, t.Type, cols, rows, dst)
	if err != nil {
		l.err = err
	}
	return m
}

// roundF16 returns an F32 matrix as a copy with its values rounded to
// float16 (other types as they are: F16 already is, and a quantized
// kernel is multiplied as stored).
func roundF16(l *loader, m *tensor.Matrix) *tensor.Matrix {
	if m == nil || m.Type != gguf.TypeF32 {
		return m
	}
	d := make([]byte, len(m.Data))
	for i := 0; i < len(d); i += 4 {
		v := math.Float32frombits(binary.LittleEndian.Uint32(m.Data[i:]))
		binary.LittleEndian.PutUint32(d[i:], math.Float32bits(tensor.RoundF16(v)))
	}
	r, err := tensor.NewMatrix(m.Name, m.Type, m.Rows, m.Cols, d)
	if err != nil {
		l.err = err
	}
	return r
}

// linear is x·Wᵀ + bias: through the packed float GEMM where the weights
// are F32 or F16 and the CPU has its kernels, else Matrix.Mul (quantized
// weights).
type linear struct {
	m    *tensor.Matrix
	p    *tensor.Packed // nil: Matrix.Mul
	bias []float32
}

// scratch holds the products' buffers.
type scratch struct {
	mat  tensor.Scratch
	pack tensor.PackScratch
}

// mul computes dst = x·Wᵀ + bias for n rows, then GELU (ggml's table) if
// gelu.
func (l *linear) mul(pool *tensor.Pool, s *scratch, dst, x []float32, n int, gelu bool) error {
	if l.p != nil {
		return l.p.MulInto(pool, &s.pack, x, n, tensor.PackedOut{Dst: dst, Bias: l.bias, GELU: gelu})
	}
	if err := l.m.Mul(pool, &s.mat, dst, x, n); err != nil {
		return err
	}
	R := l.m.Rows
	if l.bias != nil {
		for t := range n {
			tensor.Add(dst[t*R:(t+1)*R], l.bias)
		}
	}
	if gelu {
		tensor.GELUs(dst[:n*R], dst[:n*R])
	}
	return nil
}

// packer makes linears, packing F32 and F16 matrices into one allocation
// outside the Go heap (finish).
type packer struct {
	on   bool
	todo []packTodo
	mem  []byte
}

type packTodo struct {
	dst *tensor.Packed
	ms  []*tensor.Matrix
}

func (p *packer) linear(m *tensor.Matrix, bias []float32) *linear {
	if m == nil {
		return nil
	}
	l := &linear{m: m, bias: bias}
	if p.on && tensor.CanPack(m.Type) {
		l.p = p.later(m)
	}
	return l
}

// fuse stacks q, k and v into one packed product when they can be; it
// returns nil when not (the three are then multiplied one by one).
func (p *packer) fuse(q, k, v *linear) (*linear, []float32, []float32, []float32) {
	if q.p == nil || k.p == nil || v.p == nil || k.m.Type != q.m.Type || v.m.Type != q.m.Type {
		return nil, nil, nil, nil
	}
	// Drop the three separate packs: the fused one replaces them.
	keep := p.todo[:0]
	for _, t := range p.todo {
		if t.dst != q.p && t.dst != k.p && t.dst != v.p {
			keep = append(keep, t)
		}
	}
	p.todo = keep
	q.p, k.p, v.p = nil, nil, nil
	return &linear{m: q.m, p: p.later(q.m, k.m, v.m)}, q.bias, k.bias, v.bias
}

func (p *packer) later(ms ...*tensor.Matrix) *tensor.Packed {
	dst := new(tensor.Packed)
	p.todo = append(p.todo, packTodo{dst: dst, ms: ms})
	return dst
}

// finish allocates the packed copies and writes them, then lets the
// file's pages of those matrices go.
func (p *packer) finish(f *gguf.File) error {
	total := 0
	sizes := make([]int, len(p.todo))
	for i, t := range p.todo {
		n, err := tensor.PackedBytes(t.ms...)
		if err != nil {
			return err
		}
		sizes[i] = n
		total += n
	}
	if total == 0 {
		return nil
	}
	mem, err := bigmem.Alloc(total)
	if err != nil {
		return fmt.Errorf("packing the float matrices (%d bytes): %w", total, err)
	}
	off := 0
	for i, t := range p.todo {
		pk, err := tensor.Pack(mem[off:off+sizes[i]], t.ms...)
		if err != nil {
			bigmem.Free(mem)
			return err
		}
		*t.dst = *pk
		off += sizes[i]
	}
	for _, t := range p.todo {
		for _, m := range t.ms {
			if inFile(f, m.Data) {
				f.DropPages(m.Data)
			}
		}
	}
	p.mem = mem
	return nil
}

// inFile reports whether b is memory of f's mapping (not a copy made at
// load, such as a transposed matrix).
func inFile(f *gguf.File, b []byte) bool {
	for i := range f.Tensors {
		if d := f.TensorData(&f.Tensors[i]); len(d) > 0 && len(b) > 0 && &d[0] == &b[0] {
			return true
		}
	}
	return false
}
