package bert

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/gguf"
)

// Arch is the general.architecture of the files this package reads.
const Arch = "bert"

// maxWidth bounds every width read from a file before anything is
// allocated for it (llama's limit too).
const maxWidth = 1 << 24

// Config holds a BERT encoder's hyper-parameters, read from the bert.*
// keys of a GGUF file by ConfigFromGGUF.
type Config struct {
	Layers     int     // block_count
	Embd       int     // embedding_length
	FFN        int     // feed_forward_length
	Heads      int     // attention.head_count (every head has its own keys and values)
	HeadDim    int     // Embd / Heads
	Vocab      int     // vocab_size, or the rows of token_embd.weight
	Positions  int     // context_length: the rows of position_embd.weight, the longest input
	TokenTypes int     // rows of token_types.weight (0: the file has none)
	Eps        float32 // attention.layer_norm_epsilon
	// Pooling is the file's pooling_type: PoolMean, PoolCLS, PoolLast or
	// PoolRank; PoolDefault when the file does not say (such a file is
	// refused by Load: an encoder without pooling has no embedding).
	Pooling backend.Pooling
	// Labels is the number of scores of the classification head (the
	// length of classifier.output_labels, 1 when absent); used only when
	// the file has the head (cls.output.weight).
	Labels int
	// Matryoshka lists the embedding widths the model was trained to be
	// truncated to (key bert.embedding.matryoshka_dims, see the package
	// documentation); nil when the file does not say.
	Matryoshka []int
}

// ConfigFromGGUF reads the hyper-parameters of a BERT file. A missing
// required key, a value out of range or a key that contradicts a tensor's
// shape is an error naming it; so is a causal file (attention.causal true),
// which would be another model.
func ConfigFromGGUF(f *gguf.File) (Config, error) {
	arch, err := f.Architecture()
	if err != nil {
		return Config{}, fmt.Errorf("bert: %w", err)
	}
	if arch != Arch {
		return Config{}, fmt.Errorf("bert: general.architecture is %q, not %q", arch, Arch)
	}
	var c Config
	k := func(name string) string { return Arch + "." + name }
	u32 := func(key string, dst *int, def int, required bool) {
		if err != nil {
			return
		}
		if _, ok := f.Get(key); !ok {
			if required {
				err = fmt.Errorf("bert: key %s is missing", key)
			}
			*dst = def
			return
		}
		var v uint32
		if v, err = f.Uint32(key); err != nil {
			err = fmt.Errorf("bert: %w", err)
			return
		}
		if v == 0 || v > maxWidth {
			err = fmt.Errorf("bert: %s = %d is out of range (1 to %d)", key, v, maxWidth)
			return
		}
		*dst = int(v)
	}
	u32(k("block_count"), &c.Layers, 0, true)
	u32(k("embedding_length"), &c.Embd, 0, true)
	u32(k("feed_forward_length"), &c.FFN, 0, true)
	u32(k("attention.head_count"), &c.Heads, 0, true)
	var kvHeads int
	u32(k("attention.head_count_kv"), &kvHeads, c.Heads, false)
	u32(k("context_length"), &c.Positions, 512, false)
	if err != nil {
		return Config{}, err
	}
	const tensorsPerLayer = 10 // q, k, v, output, their norm and the FFN's two and its norm: weights only
	switch last := lastBlock(f); {
	case c.Layers > len(f.Tensors)/tensorsPerLayer:
		return Config{}, fmt.Errorf("bert: %s = %d, but the file has %d tensors, room for at most %d blocks",
			k("block_count"), c.Layers, len(f.Tensors), len(f.Tensors)/tensorsPerLayer)
	case last >= c.Layers:
		// Fewer blocks than the file holds would run a truncated encoder
		// silently, as the llama families refuse too.
		return Config{}, fmt.Errorf("bert: %s = %d, but the file has the tensors of block %d (blk.%d.*): the header does not describe the weights",
			k("block_count"), c.Layers, last, last)
	case c.Embd%c.Heads != 0:
		return Config{}, fmt.Errorf("bert: %s %d is not a multiple of %s %d", k("embedding_length"), c.Embd, k("attention.head_count"), c.Heads)
	case kvHeads != c.Heads:
		return Config{}, fmt.Errorf("bert: %s %d differs from %s %d (BERT has one key and value per query head)",
			k("attention.head_count_kv"), kvHeads, k("attention.head_count"), c.Heads)
	}
	c.HeadDim = c.Embd / c.Heads
	for _, key := range []string{"attention.key_length", "attention.value_length"} {
		var d int
		u32(k(key), &d, c.HeadDim, false)
		if err == nil && d != c.HeadDim {
			err = fmt.Errorf("bert: %s %d differs from the head size %d (unsupported)", k(key), d, c.HeadDim)
		}
	}
	if err != nil {
		return Config{}, err
	}
	c.Eps = 1e-12
	if _, ok := f.Get(k("attention.layer_norm_epsilon")); ok {
		if c.Eps, err = f.Float32(k("attention.layer_norm_epsilon")); err != nil {
			return Config{}, fmt.Errorf("bert: %w", err)
		}
		if !(c.Eps >= 0 && c.Eps < 1) {
			return Config{}, fmt.Errorf("bert: %s = %v is out of range [0, 1)", k("attention.layer_norm_epsilon"), c.Eps)
		}
	}
	if causal, e := f.Bool(k("attention.causal")); e == nil && causal {
		return Config{}, fmt.Errorf("bert: %s is true; a causal BERT is not supported", k("attention.causal"))
	} else if e != nil && !errors.Is(e, gguf.ErrKeyNotFound) {
		return Config{}, fmt.Errorf("bert: %w", e)
	}
	if v, e := f.Uint32(k("pooling_type")); e == nil {
		if c.Pooling, _, err = backend.PoolingFromGGUF(v); err != nil {
			return Config{}, fmt.Errorf("bert: %s: %w", k("pooling_type"), err)
		}
	} else if !errors.Is(e, gguf.ErrKeyNotFound) {
		return Config{}, fmt.Errorf("bert: %w", e)
	}
	c.Labels = 1
	if labels, e := f.Strings(k("classifier.output_labels")); e == nil {
		if len(labels) == 0 || len(labels) > maxWidth {
			return Config{}, fmt.Errorf("bert: %s has %d labels", k("classifier.output_labels"), len(labels))
		}
		c.Labels = len(labels)
	} else if !errors.Is(e, gguf.ErrKeyNotFound) {
		return Config{}, fmt.Errorf("bert: %w", e)
	}
	if dims, e := f.Int32s(k(MatryoshkaKey)); e == nil {
		for _, d := range dims {
			if d <= 0 || int(d) > c.Embd {
				return Config{}, fmt.Errorf("bert: %s lists %d, outside 1 to the embedding width %d", k(MatryoshkaKey), d, c.Embd)
			}
			c.Matryoshka = append(c.Matryoshka, int(d))
		}
	} else if !errors.Is(e, gguf.ErrKeyNotFound) {
		return Config{}, fmt.Errorf("bert: %w", e)
	}
	// The vocabulary and the table sizes: the tensors are the authority,
	// the keys must agree with them.
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return Config{}, errors.New("bert: tensor token_embd.weight is missing or not 2-D")
	}
	if emb.Dims[0] != uint64(c.Embd) || emb.Dims[1] == 0 || emb.Dims[1] > maxWidth {
		return Config{}, fmt.Errorf("bert: token_embd.weight has shape %v, want [%d, vocabulary]", emb.Dims, c.Embd)
	}
	c.Vocab = int(emb.Dims[1])
	if _, ok := f.Get(k("vocab_size")); ok {
		var v int
		u32(k("vocab_size"), &v, 0, true)
		if err == nil && v != c.Vocab {
			err = fmt.Errorf("bert: %s = %d, but token_embd.weight has %d rows", k("vocab_size"), v, c.Vocab)
		}
		if err != nil {
			return Config{}, err
		}
	}
	if t, ok := f.Tensor("token_types.weight"); ok {
		if len(t.Dims) != 2 || t.Dims[0] != uint64(c.Embd) || t.Dims[1] == 0 || t.Dims[1] > maxWidth {
			return Config{}, fmt.Errorf("bert: token_types.weight has shape %v, want [%d, types]", t.Dims, c.Embd)
		}
		c.TokenTypes = int(t.Dims[1])
	}
	return c, nil
}

// MatryoshkaKey, under the architecture's prefix (bert.embedding.
// matryoshka_dims), is the metadata key by which a file says that its
// embeddings may be truncated: an array of the widths the model was trained
// for (Matryoshka representation learning). llama.cpp's converter writes no
// such key; add it with a GGUF editor, or declare the widths when loading
// (engine.WithMatryoshka).
const MatryoshkaKey = "embedding.matryoshka_dims"

// lastBlock returns the highest block index among the file's blk.N.*
// tensors, or -1.
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
