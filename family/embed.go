package family

import (
	"errors"
	"fmt"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/embedtok"
)

// A family model embeds as well as it chats: the CPU backend returns the
// final hidden states of the rows asked for (backend.HiddenStates), and the
// engine pools them (engine.Model.Embed) in steps shared with generation.
// Qwen3-Embedding is a qwen3 file whose pooling_type is last; any other
// model embeds with a pooling chosen per request or at load
// (engine.WithPooling).

// EmbedTokens tokenizes an embedding input with the special tokens
// llama-server adds (engine.EmbedFormat): BOS when the vocabulary's
// add_bos_token says so, EOS when add_eos_token does (Qwen3-Embedding ends
// its inputs with one, the token whose hidden state last pooling takes).
func (f *Format) EmbedTokens(text string) ([]int32, error) {
	tok, sp, err := f.embedSpecial()
	if err != nil {
		return nil, err
	}
	return sp.Embed(tok, text), nil
}

// RerankTokens builds a rerank input of a query and a document
// (engine.EmbedFormat): the file's rerank template
// (tokenizer.chat_template.rerank, as Qwen3-Reranker files carry) or
// llama-server's default layout.
func (f *Format) RerankTokens(query, doc string) ([]int32, error) {
	tok, sp, err := f.embedSpecial()
	if err != nil {
		return nil, err
	}
	return sp.RerankInput(tok, query, doc), nil
}

// RerankQuery returns the builder of the rerank inputs of one query
// (engine.RerankFormat), which tokenizes the query once where the layout
// allows.
func (f *Format) RerankQuery(query string) (func(doc string) []int32, error) {
	tok, sp, err := f.embedSpecial()
	if err != nil {
		return nil, err
	}
	return sp.Reranker(tok, query), nil
}

func (f *Format) embedSpecial() (embedtok.Encoder, embedtok.Special, error) {
	tok, err := f.tokenizer()
	if err != nil {
		return nil, embedtok.Special{}, err
	}
	f.embOnce.Do(func() { f.emb, f.embErr = embedtok.Read(f.file) })
	if f.embErr != nil {
		return nil, embedtok.Special{}, f.embErr
	}
	return tok, f.emb, nil
}

// embedKeys reads a file's embedding keys: <arch>.pooling_type (PoolDefault
// when absent or none) and <arch>.embedding.matryoshka_dims.
func embedKeys(f *gguf.File) (engine.Pooling, []int, error) {
	arch, err := f.Architecture()
	if err != nil {
		return 0, nil, err
	}
	var pool engine.Pooling
	if v, err := f.Uint32(arch + ".pooling_type"); err == nil {
		if pool, _, err = backend.PoolingFromGGUF(v); err != nil {
			return 0, nil, fmt.Errorf("%s.pooling_type: %w", arch, err)
		}
	} else if !errors.Is(err, gguf.ErrKeyNotFound) {
		return 0, nil, err
	}
	var dims []int
	if ds, err := f.Int32s(arch + "." + engine.MatryoshkaKey); err == nil {
		for _, d := range ds {
			if d <= 0 {
				return 0, nil, fmt.Errorf("%s.%s lists %d", arch, engine.MatryoshkaKey, d)
			}
			dims = append(dims, int(d))
		}
	} else if !errors.Is(err, gguf.ErrKeyNotFound) {
		return 0, nil, err
	}
	return pool, dims, nil
}
