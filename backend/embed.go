package backend

import (
	"context"
	"fmt"
)

// Embedding models come in two kinds, and the seam has a place for each.
//
// An encoder (BERT: general.architecture "bert", as in bge, all-MiniLM and
// the bge-reranker-style cross-encoders) attends in both directions, so a
// sequence is computed whole, in one pass, and nothing of it is kept
// afterwards: no cache, no logits. It implements Encoder instead of
// Backend.
//
// A decoder (Qwen3-Embedding is a qwen3 file whose pooling_type is last)
// is a Backend whose Step can also return the final hidden states of the
// rows it computes (Seq.Hidden); it says so by implementing HiddenStates.
// Its embeddings are then pooled from those rows by the caller, and its
// embedding work is ordinary prompt prefill that shares steps with
// generation (package engine's scheduler does that).

// Pooling is how one vector is made from the hidden states of a sequence's
// tokens (llama.cpp's pooling_type).
type Pooling int

const (
	// PoolDefault, in options, means the model's own pooling (the file's
	// <arch>.pooling_type). It is never passed to an Encoder.
	PoolDefault Pooling = iota
	// PoolMean averages the hidden states of every token.
	PoolMean
	// PoolCLS takes the first token's hidden state (BERT's [CLS]).
	PoolCLS
	// PoolLast takes the last token's hidden state (decoder embedding
	// models such as Qwen3-Embedding, whose input ends with an end token).
	PoolLast
	// PoolRank runs a reranker's classification head on the first token
	// (BERT) or the last one (decoders) and gives its scores instead of a
	// vector: a cross-encoder's relevance of a query and a document fed
	// together.
	PoolRank
)

var poolingNames = [...]string{"default", "mean", "cls", "last", "rank"}

func (p Pooling) String() string {
	if p >= 0 && int(p) < len(poolingNames) {
		return poolingNames[p]
	}
	return fmt.Sprintf("Pooling(%d)", int(p))
}

// ParsePooling reads a pooling by its name as llama.cpp's --pooling flag
// spells it: "mean", "cls", "last" or "rank" ("" is PoolDefault).
func ParsePooling(s string) (Pooling, error) {
	if s == "" {
		return PoolDefault, nil
	}
	for i, n := range poolingNames {
		if n == s && i != 0 {
			return Pooling(i), nil
		}
	}
	return 0, fmt.Errorf("unknown pooling %q (want mean, cls, last or rank)", s)
}

// PoolingFromGGUF maps the value of a GGUF file's <arch>.pooling_type key
// (llama.cpp's enum llama_pooling_type: 0 none, 1 mean, 2 cls, 3 last,
// 4 rank) to a Pooling. None is PoolDefault with ok false: the model has no
// pooling of its own (a chat model), so a caller must choose one.
func PoolingFromGGUF(v uint32) (p Pooling, ok bool, err error) {
	switch v {
	case 0:
		return PoolDefault, false, nil
	case 1, 2, 3, 4:
		return Pooling(v), true, nil
	}
	return 0, false, fmt.Errorf("pooling_type %d is not one of llama.cpp's (0 none, 1 mean, 2 cls, 3 last, 4 rank)", v)
}

// An Encoder computes one embedding per sequence from whole sequences, each
// attending to all of its own tokens and to nothing else: an encoder-only
// model such as BERT. Encode is called from one goroutine at a time; the
// other methods from any.
type Encoder interface {
	// Vocab is the number of token ids the model knows.
	Vocab() int
	// Dim is the width of a pooled embedding (the hidden size).
	Dim() int
	// Labels is the number of scores PoolRank gives (the classification
	// head's outputs); 0 when the model has no head.
	Labels() int
	// Pooling is the model's own pooling (its file's pooling_type).
	Pooling() Pooling
	// BatchSize is the most tokens one Encode call takes, all sequences
	// together; it is at least MaxTokens.
	BatchSize() int
	// MaxTokens is the most tokens one sequence may have (an encoder's
	// table of learned positions).
	MaxTokens() int
	// Encode runs one forward pass over the batch and writes each
	// sequence's pooled embedding, or its rank scores, to its Out. On
	// error (ctx cancelled included) the Outs hold nothing meaningful.
	Encode(ctx context.Context, batch []EncodeSeq) error
}

// EncodeSeq is one sequence's part of an Encode call.
type EncodeSeq struct {
	// Tokens is the whole sequence: 1 to MaxTokens tokens.
	Tokens []int32
	// Pooling is PoolMean, PoolCLS, PoolLast or PoolRank (not
	// PoolDefault).
	Pooling Pooling
	// Out receives Dim values, or Labels scores for PoolRank.
	Out []float32
}

// HiddenStates is implemented by Backends whose Step fills Seq.Hidden.
type HiddenStates interface {
	// HiddenDim is the width of one hidden state (the embedding width).
	HiddenDim() int
}

// A Classifier is a decoder reranker's head (Qwen3-Reranker): it turns
// the hidden state of a sequence's last token into rank scores. Backends
// of models that have one implement it beside HiddenStates.
type Classifier interface {
	// Labels is the number of scores.
	Labels() int
	// Classify writes the scores of one hidden state (HiddenDim values) to
	// out (Labels values).
	Classify(hidden, out []float32) error
}
