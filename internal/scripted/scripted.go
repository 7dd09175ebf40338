// Package scripted is for tests of model formats: a vocabulary-only GGUF
// of the 256 byte-level BPE tokens with a family's added tokens at their
// ids, and an engine.Backend that writes a fixed answer (or random
// logits), so that a family's real format runs through the engine's
// generate loop without a model.
package scripted

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strconv"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
)

// Vocab writes a vocabulary-only GGUF: byte-level BPE (tokenizer.ggml.model
// "gpt2", no merges) with the 256 bytes as tokens 0 to 255, the tokens of
// control and userDefined (id → text) as tokens of those types, unused
// [PADn] tokens in between, pre-tokenizer pre, and the further keys kv
// (bos, eos, a chat template).
func Vocab(control, userDefined map[int]string, pre string, kv ...gguf.KV) ([]byte, error) {
	n := 256
	for _, m := range []map[int]string{control, userDefined} {
		for id := range m {
			n = max(n, id+1)
		}
	}
	tokens := make([]string, n)
	types := make([]int32, n)
	for i := range tokens {
		tokens[i], types[i] = "[PAD"+strconv.Itoa(i)+"]", 5 // unused
	}
	for b := range 256 {
		tokens[b], types[b] = string(byteRune(byte(b))), 1 // normal
	}
	for id, s := range control {
		tokens[id], types[id] = s, 3
	}
	for id, s := range userDefined {
		tokens[id], types[id] = s, 4
	}
	all := append([]gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Value: pre},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.merges", Value: []string{}},
	}, kv...)
	var buf bytes.Buffer
	if err := gguf.Write(&buf, all, nil); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// byteRune is GPT-2's byte-level alphabet: the character byte b is
// written as in a vocabulary.
func byteRune(b byte) rune {
	switch {
	case b >= 0x21 && b <= 0x7E, b >= 0xA1 && b <= 0xAC, b >= 0xAE:
		return rune(b)
	case b <= 0x20:
		return 0x100 + rune(b)
	case b <= 0xA0:
		return 0x100 + 33 + rune(b-0x7F)
	}
	return 0x143
}

// Backend is an engine.Backend over a vocabulary of Size tokens. After a
// prompt of PromptLen tokens each row predicts the next token of Answer,
// then End; with Rand set, every row is random logits instead (a model
// that only a constraint keeps in line). Set the fields between
// generations, not during one.
type Backend struct {
	Size, PromptLen int
	Answer          []int32
	End             int32
	Rand            *rand.Rand
}

type cache struct{ n int }

func (c *cache) Len() int             { return c.n }
func (c *cache) MaxLen() int          { return 4096 }
func (c *cache) Truncate(n int) error { c.n = min(c.n, n); return nil }
func (c *cache) Bytes() int64         { return 0 }
func (c *cache) Close() error         { return nil }

// Vocab implements engine.Backend.
func (b *Backend) Vocab() int { return b.Size }

// BatchSize implements engine.Backend.
func (b *Backend) BatchSize() int { return 512 }

// NewCache implements engine.Backend.
func (b *Backend) NewCache() (engine.Cache, error) { return &cache{}, nil }

// Step implements engine.Backend.
func (b *Backend) Step(_ context.Context, batch []engine.Seq) error {
	for _, s := range batch {
		c := s.Cache.(*cache)
		rows := len(s.Logits) / b.Size
		for r := range rows {
			row := s.Logits[r*b.Size : (r+1)*b.Size]
			if b.Rand != nil {
				for i := range row {
					row[i] = float32(b.Rand.NormFloat64())
				}
				continue
			}
			p := c.n + len(s.Tokens) - rows + r // the row of position p predicts p+1
			next := b.End
			if i := p + 1 - b.PromptLen; i >= 0 && i < len(b.Answer) {
				next = b.Answer[i]
			}
			clear(row)
			row[next] = 1
		}
		c.n += len(s.Tokens)
	}
	return nil
}
