package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/smolgo/smolgo/backend"
)

// Pooling is how one vector is made from a sequence's hidden states
// (backend.Pooling).
type Pooling = backend.Pooling

// The poolings (see backend.Pooling).
const (
	PoolDefault = backend.PoolDefault // the model's own
	PoolMean    = backend.PoolMean
	PoolCLS     = backend.PoolCLS
	PoolLast    = backend.PoolLast
	PoolRank    = backend.PoolRank
)

// ParsePooling reads a pooling by name: "mean", "cls", "last" or "rank"
// ("" is PoolDefault).
func ParsePooling(s string) (Pooling, error) { return backend.ParsePooling(s) }

type (
	// Encoder computes embeddings of whole sequences: an encoder-only
	// model such as BERT (backend.Encoder).
	Encoder = backend.Encoder
	// EncodeSeq is one sequence's part of an Encode call.
	EncodeSeq = backend.EncodeSeq
)

// MatryoshkaKey, after a file's architecture and a dot
// (bert.embedding.matryoshka_dims, qwen3.embedding.matryoshka_dims), is the
// GGUF metadata key by which a model says that its embeddings may be
// truncated (EmbedOptions.Dimensions): an array of the widths it was trained
// for (Matryoshka representation learning). llama.cpp's converter writes no
// such key, so a file gets it from whoever publishes it; WithMatryoshka
// declares the widths at load for a file without it.
const MatryoshkaKey = "embedding.matryoshka_dims"

// Errors of Embed and Rerank, wrapped with the details. ErrBadInput marks
// what the caller sent (an empty input, an id outside the vocabulary, a
// width the model does not offer): an API answers them with 400. An input
// longer than the model takes wraps ErrContextFull instead.
var (
	ErrBadInput = errors.New("engine: bad input")
	// ErrNoEmbeddings is wrapped by Embed on a model that cannot pool
	// hidden states into embeddings (a backend without HiddenStates), and
	// by Rerank on a model without a classification head.
	ErrNoEmbeddings = errors.New("engine: the model does not compute embeddings")
	// ErrNotGenerative is returned by Generate on an encoder-only model
	// (BERT), which has no next-token predictions.
	ErrNotGenerative = errors.New("engine: the model is an encoder (embeddings only); it does not generate text")
)

// EmbedOptions configure Embed.
type EmbedOptions struct {
	// Pooling overrides the model's own pooling (its file's pooling_type):
	// PoolMean, PoolCLS or PoolLast. PoolDefault keeps the model's; a
	// model without one (a chat model used for embeddings) needs one here.
	// PoolRank gives a reranker's scores of each input as it is (Rerank
	// builds the query–document inputs).
	Pooling Pooling
	// Normalize divides each vector by its Euclidean (L2) norm, as
	// llama-server's /v1/embeddings does by default. Rank scores are never
	// normalized.
	Normalize bool
	// Dimensions, when positive and less than the model's width,
	// truncates each vector to its first Dimensions values and then
	// L2-normalizes it (Matryoshka embeddings). It is refused with an
	// error wrapping ErrBadInput unless the model was trained for it (see
	// MatryoshkaKey); Dimensions equal to the width is always accepted.
	Dimensions int
	// Truncate cuts inputs longer than the model takes (EmbedInfo.MaxTokens)
	// to that length, keeping their start, instead of failing with an error
	// wrapping ErrContextFull.
	Truncate bool
}

// Embeddings is what Embed returns.
type Embeddings struct {
	// Vectors holds one embedding per input, in order (or, with PoolRank,
	// the classification head's scores).
	Vectors [][]float32
	// Tokens counts the tokens computed, all inputs together (what an API
	// reports as usage.prompt_tokens).
	Tokens int
	// Truncated counts the inputs cut to the model's limit (Truncate).
	Truncated int
}

// RerankOptions configure Rerank.
type RerankOptions struct {
	// Truncate cuts a query–document input longer than the model takes to
	// that length instead of failing.
	Truncate bool
}

// Ranking is what Rerank returns.
type Ranking struct {
	// Scores holds each document's relevance to the query, in the
	// documents' order: the classification head's first output, as
	// llama.cpp reports it (a logit for a BERT cross-encoder, a
	// probability for Qwen3-Reranker, whose head ends in a softmax).
	Scores []float32
	// Tokens counts the tokens computed.
	Tokens int
}

// EmbedInfo says what a model offers for embeddings.
type EmbedInfo struct {
	// Embeds reports whether Embed works: an encoder, or a backend whose
	// steps return hidden states.
	Embeds bool
	// Ranks reports whether Rerank works: a classification head.
	Ranks bool
	// Generates reports whether sessions can generate text (not an
	// encoder-only model).
	Generates bool
	// Pooling is the model's own pooling; PoolDefault when it has none (a
	// chat model), and then a request must choose one.
	Pooling Pooling
	// Dim is the width of an embedding; Labels the number of rank scores.
	Dim, Labels int
	// MaxTokens is the longest input, in tokens.
	MaxTokens int
	// Matryoshka lists the widths the embeddings may be truncated to
	// besides Dim (nil: none).
	Matryoshka []int
}

// EmbedFormat is implemented by the formats of models that embed: it turns
// a text into an embedding input and a query with a document into a rerank
// input, with the special tokens the vocabulary puts around them (what
// llama-server does: [CLS] text [SEP] for BERT, BOS and EOS as the
// vocabulary's add_bos_token and add_eos_token say, a file's rerank
// template for Qwen3-Reranker). Without it a text is the tokenizer's
// Encode(text, true) as it is.
type EmbedFormat interface {
	EmbedTokens(text string) ([]int32, error)
	RerankTokens(query, doc string) ([]int32, error)
}

// A RerankFormat is an EmbedFormat that builds the rerank inputs of one
// query with many documents without tokenizing the query again for each
// (RerankInputs uses it): the function it returns gives RerankTokens(query,
// doc) for each doc.
type RerankFormat interface {
	RerankQuery(query string) (func(doc string) []int32, error)
}

// ErrTooManyTokens is wrapped by RerankInputs when the
// inputs would have more tokens together than the caller allows: they stop
// building there, so that a request cannot make them tokenize more than it
// may send to the model.
var ErrTooManyTokens = errors.New("engine: the inputs have too many tokens")

// EmbedInfo describes what the model offers for embeddings.
func (m *Model) EmbedInfo() EmbedInfo {
	in := EmbedInfo{Generates: m.b != nil, Matryoshka: slices.Clone(m.cfg.Matryoshka)}
	switch {
	case m.enc != nil:
		in.Embeds = true
		in.Pooling, in.Dim, in.Labels, in.MaxTokens = m.enc.Pooling(), m.enc.Dim(), m.enc.Labels(), m.enc.MaxTokens()
		if m.cfg.Pooling != PoolDefault {
			in.Pooling = m.cfg.Pooling
		}
	case m.hidden() != nil:
		in.Embeds = true
		in.Pooling, in.Dim, in.MaxTokens = m.cfg.Pooling, m.hidden().HiddenDim(), m.ContextLength()
		if c, ok := m.b.(backend.Classifier); ok {
			in.Labels = c.Labels()
		}
	}
	in.Ranks = in.Embeds && in.Labels > 0
	return in
}

// hidden is the backend's HiddenStates, or nil.
func (m *Model) hidden() backend.HiddenStates {
	h, _ := m.b.(backend.HiddenStates)
	return h
}

// Embed computes one embedding per text: each text is tokenized as the
// model's format says (EmbedInputs), then EmbedTokens runs them.
func (m *Model) Embed(ctx context.Context, texts []string, opts EmbedOptions) (Embeddings, error) {
	inputs, err := m.EmbedInputs(texts)
	if err != nil {
		return Embeddings{}, err
	}
	return m.EmbedTokens(ctx, inputs, opts)
}

// EmbedInputs tokenizes texts as embedding inputs, with the special tokens
// the model's format puts around them (EmbedFormat: [CLS] text [SEP] for
// BERT, BOS and EOS as the vocabulary says for a decoder).
func (m *Model) EmbedInputs(texts []string) ([][]int32, error) {
	inputs := make([][]int32, len(texts))
	for i, t := range texts {
		var err error
		if ef, ok := m.f.(EmbedFormat); ok {
			inputs[i], err = ef.EmbedTokens(t)
		} else {
			var tok Tokenizer
			if tok, err = m.f.Tokenizer(); err == nil {
				inputs[i] = tok.Encode(t, true)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("engine: input %d: %w", i, err)
		}
	}
	return inputs, nil
}

// RerankInputs builds one rerank input per document from the query and
// the document, as the model's format lays them out (EmbedFormat's
// RerankTokens: [CLS] query [SEP] document for BERT, the file's rerank
// template for Qwen3-Reranker), tokenizing the query once where the format
// can (RerankFormat). maxTokens, when positive, bounds the tokens of all
// inputs together: past it RerankInputs stops with an error wrapping
// ErrTooManyTokens.
func (m *Model) RerankInputs(query string, docs []string, maxTokens int) ([][]int32, error) {
	ef, ok := m.f.(EmbedFormat)
	if !ok {
		return nil, fmt.Errorf("%w: the model's format cannot build rerank inputs", ErrNoEmbeddings)
	}
	build := func(d string) ([]int32, error) { return ef.RerankTokens(query, d) }
	if rf, ok := m.f.(RerankFormat); ok {
		each, err := rf.RerankQuery(query)
		if err != nil {
			return nil, fmt.Errorf("engine: the query: %w", err)
		}
		build = func(d string) ([]int32, error) { return each(d), nil }
	}
	inputs := make([][]int32, len(docs))
	total := 0
	for i, d := range docs {
		ids, err := build(d)
		if err != nil {
			return nil, fmt.Errorf("engine: document %d: %w", i, err)
		}
		inputs[i] = ids
		if total += len(ids); maxTokens > 0 && total > maxTokens {
			return nil, fmt.Errorf("%w: more than %d after document %d of %d", ErrTooManyTokens, maxTokens, i, len(docs))
		}
	}
	return inputs, nil
}

// EmbedTokens computes one embedding per token sequence, used as given (no
// special tokens added). The sequences are batched into as few forward
// passes as the batch size allows and never see each other: on an encoder
// (BERT) whole sequences are packed into passes of Encoder.BatchSize
// tokens, shared with other callers' sequences; on a decoder (a Backend
// with HiddenStates) each sequence is a prompt prefilled by the
// continuous-batching scheduler, beside any running generations, holding
// one of Config.MaxSequences places while it runs.
//
// Cancelling ctx returns ctx.Err() at once; sequences already in a pass
// finish with it.
func (m *Model) EmbedTokens(ctx context.Context, inputs [][]int32, opts EmbedOptions) (Embeddings, error) {
	info := m.EmbedInfo()
	if !info.Embeds {
		return Embeddings{}, fmt.Errorf("%w: its backend returns no hidden states", ErrNoEmbeddings)
	}
	pool := opts.Pooling
	if pool == PoolDefault {
		pool = info.Pooling
	}
	dim := info.Dim
	switch pool {
	case PoolMean, PoolCLS, PoolLast:
	case PoolRank:
		if info.Labels == 0 {
			return Embeddings{}, fmt.Errorf("%w: rank pooling needs a classification head, which the model lacks", ErrNoEmbeddings)
		}
		dim = info.Labels
	case PoolDefault:
		return Embeddings{}, fmt.Errorf("%w: the model has no pooling of its own; choose mean, cls or last", ErrBadInput)
	default:
		return Embeddings{}, fmt.Errorf("%w: unknown pooling %v", ErrBadInput, pool)
	}
	if err := checkDimensions(opts.Dimensions, info, pool); err != nil {
		return Embeddings{}, err
	}
	if len(inputs) == 0 {
		return Embeddings{}, fmt.Errorf("%w: no inputs", ErrBadInput)
	}
	res := Embeddings{Vectors: make([][]float32, len(inputs))}
	vocab := m.vocabSize()
	seqs := make([][]int32, len(inputs))
	for i, in := range inputs {
		if len(in) == 0 {
			return Embeddings{}, fmt.Errorf("%w: input %d is empty", ErrBadInput, i)
		}
		if len(in) > info.MaxTokens {
			if !opts.Truncate {
				return Embeddings{}, fmt.Errorf("engine: input %d has %d tokens, more than the model's limit of %d: %w", i, len(in), info.MaxTokens, ErrContextFull)
			}
			in = in[:info.MaxTokens]
			res.Truncated++
		}
		for k, id := range in {
			if id < 0 || int(id) >= vocab {
				return Embeddings{}, fmt.Errorf("%w: input %d: token %d at index %d is outside the vocabulary [0, %d)", ErrBadInput, i, id, k, vocab)
			}
		}
		seqs[i] = in
		res.Tokens += len(in)
		res.Vectors[i] = make([]float32, dim)
	}
	if err := m.enter(); err != nil {
		return Embeddings{}, err
	}
	defer m.leave()
	var err error
	if m.enc != nil {
		err = m.eq.encode(ctx, seqs, pool, res.Vectors)
	} else {
		err = m.embedDecoder(ctx, seqs, pool, res.Vectors)
	}
	if err != nil {
		return Embeddings{}, err
	}
	for _, v := range res.Vectors {
		if err := finite(v); err != nil {
			return Embeddings{}, err
		}
	}
	if pool != PoolRank {
		for i, v := range res.Vectors {
			if d := opts.Dimensions; d > 0 && d < len(v) {
				res.Vectors[i] = l2Normalize(v[:d:d])
			} else if opts.Normalize {
				l2Normalize(v)
			}
		}
	}
	return res, nil
}

// checkDimensions accepts a truncation the model was trained for.
func checkDimensions(d int, info EmbedInfo, pool Pooling) error {
	switch {
	case d == 0:
		return nil
	case pool == PoolRank:
		return fmt.Errorf("%w: dimensions apply to embeddings, not to rank scores", ErrBadInput)
	case d < 0 || d > info.Dim:
		return fmt.Errorf("%w: dimensions %d is outside 1 to the model's width %d", ErrBadInput, d, info.Dim)
	case d == info.Dim || slices.Contains(info.Matryoshka, d):
		return nil
	case info.Matryoshka == nil:
		return fmt.Errorf("%w: dimensions %d: the model was not trained for truncated (Matryoshka) embeddings; its width is %d (a file says it was with %s)", ErrBadInput, d, info.Dim, MatryoshkaKey)
	}
	return fmt.Errorf("%w: dimensions %d: the model offers %v and its full width %d", ErrBadInput, d, info.Matryoshka, info.Dim)
}

// finite reports a NaN or infinite value (a broken model) as an error
// rather than handing it out as an embedding.
func finite(v []float32) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("engine: the model computed %v (element %d of an output); its weights are broken", x, i)
		}
	}
	return nil
}

// l2Normalize divides v by its Euclidean norm (summed in float64), as
// llama.cpp's common_embd_normalize does, and returns it; a zero vector
// stays zero.
func l2Normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := 1 / math.Sqrt(s)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return v
}

func (m *Model) vocabSize() int {
	if m.enc != nil {
		return m.enc.Vocab()
	}
	return m.b.Vocab()
}

// Rerank scores each document against the query with the model's
// classification head: each pair becomes one input (EmbedFormat's
// RerankTokens: [CLS] query [SEP] document for BERT, the file's rerank
// template for Qwen3-Reranker), and the inputs run as EmbedTokens runs
// them with PoolRank.
func (m *Model) Rerank(ctx context.Context, query string, docs []string, opts RerankOptions) (Ranking, error) {
	if !m.EmbedInfo().Ranks {
		return Ranking{}, fmt.Errorf("%w: reranking needs a classification head (pooling_type rank), which the model lacks", ErrNoEmbeddings)
	}
	if len(docs) == 0 {
		return Ranking{}, fmt.Errorf("%w: no documents", ErrBadInput)
	}
	inputs, err := m.RerankInputs(query, docs, 0)
	if err != nil {
		return Ranking{}, err
	}
	e, err := m.EmbedTokens(ctx, inputs, EmbedOptions{Pooling: PoolRank, Truncate: opts.Truncate})
	if err != nil {
		return Ranking{}, err
	}
	r := Ranking{Scores: make([]float32, len(docs)), Tokens: e.Tokens}
	for i, v := range e.Vectors {
		r.Scores[i] = v[0]
	}
	return r, nil
}

// embedDecoder runs the sequences on a decoder backend through the
// scheduler: up to MaxSequences workers, each holding a place and a cache,
// prefill every sequence it takes with hidden states asked for, and pool
// them.
func (m *Model) embedDecoder(ctx context.Context, seqs [][]int32, pool Pooling, outs [][]float32) error {
	E := m.hidden().HiddenDim()
	var cls backend.Classifier
	if pool == PoolRank {
		c, ok := m.b.(backend.Classifier)
		if !ok {
			return fmt.Errorf("%w: rank pooling needs a classification head, which the backend lacks", ErrNoEmbeddings)
		}
		cls = c
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	workers := min(len(seqs), m.cfg.MaxSequences)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leave, err := m.sched.admit(ctx)
			if err != nil {
				fail(err)
				return
			}
			defer leave()
			c, err := m.b.NewCache()
			if err != nil {
				fail(fmt.Errorf("engine: creating a cache: %w", err))
				return
			}
			defer c.Close()
			all := pool == PoolMean || pool == PoolCLS
			hidden := make([]float32, E)
			if all {
				hidden = make([]float32, min(m.sched.budget, m.ContextLength())*E)
			}
			sum := make([]float64, E)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(seqs) || ctx.Err() != nil {
					return
				}
				if err := c.Truncate(0); err != nil {
					fail(err)
					return
				}
				clear(sum)
				toks, out := seqs[i], outs[i]
				for done := 0; done < len(toks); {
					took, err := m.sched.prefillHidden(ctx, c, toks[done:], hidden, E, all)
					if err != nil {
						fail(err)
						return
					}
					if all {
						for t := range took {
							row := hidden[t*E : (t+1)*E]
							if pool == PoolCLS && done+t == 0 {
								copy(out, row)
							}
							for j, x := range row {
								sum[j] += float64(x)
							}
						}
					}
					done += took
				}
				switch pool {
				case PoolMean:
					inv := 1 / float32(len(toks))
					for j := range out {
						out[j] = float32(sum[j]) * inv
					}
				case PoolLast:
					copy(out, hidden[:E])
				case PoolRank:
					if err := cls.Classify(hidden[:E], out); err != nil {
						fail(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
