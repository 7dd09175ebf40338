package smollm3

import (
	"context"
	"time"

	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/smollm3/chat"
	"github.com/smolgo/smolgo/tokenizer"
)

// NewSession starts a conversation with the model. The session gets its own
// KV cache (allocated as it fills, up to the context chosen at Load) and the
// model's tokenizer and chat template; see Session.Generate.
func (m *Model) NewSession() *Session {
	return newSession(&modelBackend{m: m})
}

// modelBackend connects a Session to a loaded Model.
type modelBackend struct {
	m   *Model
	tok *tokenizer.Tokenizer
	now func() time.Time // the template's date; nil means time.Now (tests set it)
}

func (b *modelBackend) newCache() (kvCache, error) {
	tok, err := b.m.Tokenizer()
	if err != nil {
		return nil, err
	}
	b.tok = tok
	c, err := b.m.NewCache()
	if err != nil {
		return nil, err
	}
	return &modelCache{m: b.m, c: c}, nil
}

func (b *modelBackend) render(msgs []Message, opts *GenerateOptions) (string, error) {
	return chat.Render(msgs, chat.Options{EnableThinking: opts.Thinking, Tools: opts.Tools, AddGenerationPrompt: true, Now: b.now})
}

func (b *modelBackend) encode(text string) ([]int32, error) {
	ids := b.tok.Encode(text, true)
	if bos, ok := b.tok.BOS(); ok && b.tok.AddBOS() && (len(ids) == 0 || ids[0] != bos) {
		ids = append([]int32{bos}, ids...)
	}
	return ids, nil
}

func (b *modelBackend) newDecoder() tokenDecoder { return b.tok.NewStreamDecoder(true) }

func (b *modelBackend) endOfTurn(id int32) bool {
	if b.tok.IsEndOfGeneration(id) {
		return true
	}
	end, ok := b.tok.ID("<|im_end|>")
	return ok && id == end
}

func (b *modelBackend) thinkTags() (open, close int32, ok bool) {
	open, ok1 := b.tok.ID("<think>")
	close, ok2 := b.tok.ID("</think>")
	return open, close, ok1 && ok2
}

// modelCache is a session's llama.Cache.
type modelCache struct {
	m *Model
	c *llama.Cache
}

func (c *modelCache) maxLen() int { return c.c.MaxLen() }

func (c *modelCache) forward(ctx context.Context, tokens []int32, pos int) ([]float32, error) {
	if c.c.Len() > pos {
		if err := c.c.Truncate(pos); err != nil {
			return nil, err
		}
	}
	return c.m.Forward(ctx, c.c, tokens, pos, false)
}
