package llama

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/rope"
)

// tensorsPerLayer is the fewest tensors a block can be stored in: two
// norms, the attention projections fused into attn_qkv plus attn_output,
// and the feed-forward's gate and up fused into ffn_up plus ffn_down (Phi-3;
// most files have 9).
const tensorsPerLayer = 6

// Config holds a model's hyper-parameters, read from the `<arch>.*` keys of
// a GGUF file by ConfigFromGGUF.
type Config struct {
	Arch   string // general.architecture
	Layers int    // block_count, less the NextN blocks
	// NextN is the number of multi-token-prediction blocks the file holds
	// after the model's own (nextn_predict_layers: Qwen3.5's MTP block,
	// blk.<Layers>.*), which the main pass does not run and the weights
	// leave unread, as llama.cpp leaves them unless asked to draft with
	// them.
	NextN   int
	Embd    int // embedding_length
	FFN     int // feed_forward_length (0 in a mixture-of-experts file without it)
	Heads   int // attention.head_count
	KVHeads int // attention.head_count_kv (defaults to Heads)
	// LayerKVHeads is attention.head_count_kv per layer where the file
	// gives it as an array with zeros, the layers without attention of a
	// hybrid model (LFM2, Granite 4.0-H); the others all have KVHeads. Nil
	// when every layer is attention.
	LayerKVHeads []int
	HeadDim      int // attention.key_length (defaults to Embd/Heads)
	Vocab        int // vocab_size, or the rows of token_embd.weight
	Context      int // context_length: the longest sequence the model was trained for
	RMSEps       float32
	Rope         rope.Config
}

// ConfigFromGGUF reads the hyper-parameters of a llama-family model from the
// keys named after the file's general.architecture (`llama.block_count`,
// `smollm3.block_count`, ...): any architecture name is accepted, and which
// ones a program runs is the business of its registry (package engine). A
// missing required key or an inconsistent value is an error naming the key.
//
// Counts are checked against what the file holds before anyone allocates
// for them: the block count against the file's tensors (each block has
// tensorsPerLayer of them), the embedding width and vocabulary against
// token_embd.weight, the other widths against the 2^24 limit and against
// each other, so that a hostile header fails here, at once.
func ConfigFromGGUF(f *gguf.File) (Config, error) {
	arch, err := f.Architecture()
	if err != nil {
		return Config{}, fmt.Errorf("llama: %w", err)
	}
	if arch == "" {
		return Config{}, errors.New("llama: general.architecture is empty")
	}
	c := Config{Arch: arch}
	k := func(name string) string { return arch + "." + name }
	req := func(name string, dst *int) {
		if err != nil {
			return
		}
		var v uint32
		v, err = uint32OrUniform(f, k(name), c.Layers)
		if err == nil && (v == 0 || v > 1<<24) {
			err = fmt.Errorf("%s = %d is out of range", k(name), v)
		}
		*dst = int(v)
	}
	opt := func(name string, dst *int, def int) {
		if err != nil {
			return
		}
		if _, ok := f.Get(k(name)); !ok {
			*dst = def
			return
		}
		req(name, dst)
	}
	optF := func(name string, dst *float32, def float32) {
		if err != nil {
			return
		}
		if _, ok := f.Get(k(name)); !ok {
			*dst = def
			return
		}
		*dst, err = f.Float32(k(name))
	}
	req("block_count", &c.Layers)
	if err == nil && c.Layers > len(f.Tensors)/tensorsPerLayer {
		err = fmt.Errorf("%s = %d, but the file has %d tensors, room for at most %d blocks of %d tensors",
			k("block_count"), c.Layers, len(f.Tensors), len(f.Tensors)/tensorsPerLayer, tensorsPerLayer)
	}
	if err == nil {
		// Fewer blocks than the file holds would load and run a truncated
		// model silently: refuse it.
		// More blocks than it holds fail here too, naming the key, rather
		// than later at the first missing tensor.
		switch last := lastBlock(f); {
		case last >= c.Layers:
			err = fmt.Errorf("%s = %d, but the file has the tensors of block %d (blk.%d.*): the header does not describe the weights",
				k("block_count"), c.Layers, last, last)
		case last < c.Layers-1:
			err = fmt.Errorf("%s = %d, but the file's last block is %d (blk.%d.*): the header does not describe the weights",
				k("block_count"), c.Layers, last, last)
		}
	}
	if err == nil {
		if _, ok := f.Get(k("nextn_predict_layers")); ok {
			var v uint32
			if v, err = f.Uint32(k("nextn_predict_layers")); err == nil && int64(v) >= int64(c.Layers) {
				err = fmt.Errorf("%s = %d, but %s is %d: no block of the model would be left", k("nextn_predict_layers"), v, k("block_count"), c.Layers)
			}
			c.NextN = int(v)
		}
	}
	all := c.Layers // the blocks in the file, the NextN ones included
	c.Layers -= c.NextN
	req("embedding_length", &c.Embd)
	if _, moe := f.Get(k("expert_count")); moe {
		opt("feed_forward_length", &c.FFN, 0) // the experts' width is expert_feed_forward_length
	} else {
		req("feed_forward_length", &c.FFN)
	}
	req("attention.head_count", &c.Heads)
	if err == nil {
		c.KVHeads, c.LayerKVHeads, err = kvHeads(f, k("attention.head_count_kv"), all, c.Heads)
		if c.LayerKVHeads != nil {
			c.LayerKVHeads = c.LayerKVHeads[:c.Layers]
		}
	}
	opt("context_length", &c.Context, 2048)
	if err == nil && c.Embd%c.Heads != 0 {
		err = fmt.Errorf("%s %d is not a multiple of %s %d", k("embedding_length"), c.Embd, k("attention.head_count"), c.Heads)
	}
	if err != nil {
		return Config{}, fmt.Errorf("llama: %w", err)
	}
	opt("attention.key_length", &c.HeadDim, c.Embd/c.Heads)
	var vlen int
	opt("attention.value_length", &vlen, c.HeadDim)
	optF("attention.layer_norm_rms_epsilon", &c.RMSEps, 1e-5)
	if err == nil && vlen != c.HeadDim {
		err = fmt.Errorf("%s %d differs from the key length %d (unsupported)", k("attention.value_length"), vlen, c.HeadDim)
	}
	if err == nil && c.Heads%c.KVHeads != 0 {
		err = fmt.Errorf("%s %d is not a multiple of %s %d", k("attention.head_count"), c.Heads, k("attention.head_count_kv"), c.KVHeads)
	}
	// Vocabulary: the key if present, else the embedding's rows. Where both
	// are there they must agree, as must the embedding's width.
	embd, hasEmbd := f.Tensor("token_embd.weight")
	hasEmbd = hasEmbd && len(embd.Dims) == 2
	if err == nil {
		if _, ok := f.Get(k("vocab_size")); ok {
			req("vocab_size", &c.Vocab)
		} else if hasEmbd {
			c.Vocab = int(embd.Dims[1])
		} else {
			err = fmt.Errorf("no %s key and no 2-D token_embd.weight to infer it from", k("vocab_size"))
		}
	}
	if err == nil && hasEmbd {
		switch {
		case embd.Dims[0] != uint64(c.Embd):
			err = fmt.Errorf("%s = %d, but token_embd.weight has rows of %d", k("embedding_length"), c.Embd, embd.Dims[0])
		case embd.Dims[1] != uint64(c.Vocab):
			err = fmt.Errorf("%s = %d, but token_embd.weight has %d rows", k("vocab_size"), c.Vocab, embd.Dims[1])
		}
	}
	// RoPE.
	r := rope.Config{Layout: rope.Norm}
	opt("rope.dimension_count", &r.Dims, c.HeadDim)
	optF("rope.freq_base", &r.Base, 10000)
	optF("rope.scaling.attn_factor", &r.AttnFactor, 1)
	if err == nil {
		if s, e := f.String(k("rope.scaling.type")); e == nil {
			r.Scaling, err = rope.ParseScaling(s)
		} else if !errors.Is(e, gguf.ErrKeyNotFound) {
			err = e
		}
	}
	if err == nil && r.Scaling == rope.None {
		// Older files: rope.scale_linear.
		var lin float32
		optF("rope.scale_linear", &lin, 0)
		if lin != 0 && lin != 1 {
			r.Scaling, r.Factor = rope.Linear, lin
		}
	}
	if err == nil && r.Scaling != rope.None {
		optF("rope.scaling.factor", &r.Factor, r.Factor)
		if r.Scaling == rope.YaRN {
			opt("rope.scaling.original_context_length", &r.OrigContext, c.Context)
		}
	}
	if err == nil && (r.Dims > c.HeadDim) {
		err = fmt.Errorf("%s %d exceeds the head size %d", k("rope.dimension_count"), r.Dims, c.HeadDim)
	}
	if err == nil {
		err = r.Validate()
	}
	if err == nil && !(c.RMSEps > 0) {
		err = fmt.Errorf("%s = %v must be positive", k("attention.layer_norm_rms_epsilon"), c.RMSEps)
	}
	if err != nil {
		return Config{}, fmt.Errorf("llama: %w", err)
	}
	c.Rope = r
	return c, nil
}

// QDim is the width of the query projection (Heads × HeadDim).
func (c Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is the width of the key and value projections (KVHeads × HeadDim).
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim }

// lastBlock returns the highest block index among the file's blk.N.*
// tensors, or -1.
// uint32OrUniform reads an integer key that a file may also store as one
// value per layer (llama.cpp reads head counts that way, and Granite 4.0's
// converter writes attention.head_count_kv as an array): an array whose
// entries are all equal is that value; one that varies by layer is refused,
// since the block has one shape for every layer, and so is one whose length
// is not the number of layers (when layers > 0), as llama.cpp refuses it.
func uint32OrUniform(f *gguf.File, key string, layers int) (uint32, error) {
	v, ok := f.Get(key)
	if !ok {
		return f.Uint32(key) // the missing-key error
	}
	switch v.(type) {
	case []int32, []uint32, []int64, []uint64, []int16, []uint16, []int8, []uint8:
	default:
		return f.Uint32(key)
	}
	vals, err := f.Int32s(key)
	if err != nil {
		return 0, err
	}
	if len(vals) == 0 {
		return 0, fmt.Errorf("%s is an empty array", key)
	}
	if layers > 0 && len(vals) != layers {
		return 0, fmt.Errorf("%s has %d entries for %d layers", key, len(vals), layers)
	}
	for i, x := range vals {
		if x != vals[0] {
			return 0, fmt.Errorf("%s varies by layer (%d in layer 0, %d in layer %d): not supported", key, vals[0], x, i)
		}
	}
	if vals[0] < 0 {
		return 0, fmt.Errorf("%s = %d is out of range", key, vals[0])
	}
	return uint32(vals[0]), nil
}

func lastBlock(f *gguf.File) int {
	last := -1
	for _, t := range f.Tensors {
		rest, ok := strings.CutPrefix(t.Name, "blk.")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(num); err == nil && n > last {
			last = n
		}
	}
	return last
}

// kvHeads reads attention.head_count_kv: absent (def), one count, one
// count per layer all equal, or one per layer with zeros for the layers
// without attention (hybrid models), whose other entries are all equal.
func kvHeads(f *gguf.File, key string, layers, def int) (int, []int, error) {
	v, ok := f.Get(key)
	if !ok {
		return def, nil, nil
	}
	if _, arr := v.([]int32); !arr {
		switch v.(type) {
		case []uint32, []int64, []uint64, []int16, []uint16, []int8, []uint8:
		default:
			n, err := uint32OrUniform(f, key, 0)
			if err == nil && (n == 0 || n > 1<<24) {
				err = fmt.Errorf("%s = %d is out of range", key, n)
			}
			return int(n), nil, err
		}
	}
	vals, err := f.Int32s(key)
	if err != nil {
		return 0, nil, err
	}
	if len(vals) != layers {
		return 0, nil, fmt.Errorf("%s has %d entries for %d layers", key, len(vals), layers)
	}
	kv, zeros := 0, false
	per := make([]int, layers)
	for i, x := range vals {
		switch {
		case x < 0 || x > 1<<24:
			return 0, nil, fmt.Errorf("%s[%d] = %d is out of range", key, i, x)
		case x == 0:
			zeros = true
		case kv == 0:
			kv = int(x)
		case int(x) != kv:
			return 0, nil, fmt.Errorf("%s varies by layer (%d in one layer, %d in layer %d): not supported", key, kv, x, i)
		}
		per[i] = int(x)
	}
	if kv == 0 {
		return 0, nil, fmt.Errorf("%s is 0 in every layer: no attention layer", key)
	}
	if !zeros {
		per = nil
	}
	return kv, per, nil
}
