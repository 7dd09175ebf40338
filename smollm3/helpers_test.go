package smollm3

import (
	"context"
	"log/slog"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// result is a whole generation, collected.
type result struct {
	reasoning, content string
	events             []engine.Event
	tokens             []int32 // the sampled tokens, when opts.Logprobs asked for them
	stats              *engine.Stats
	err                error
}

func collect(s *engine.Session, ctx context.Context, msgs []engine.Message, opts engine.GenerateOptions) result {
	var r result
	for ev, err := range s.Generate(ctx, msgs, opts) {
		if err != nil {
			r.err = err
			break
		}
		r.events = append(r.events, ev)
		for _, lp := range ev.Logprobs {
			r.tokens = append(r.tokens, lp.Token)
		}
		switch ev.Kind {
		case engine.EventReasoning:
			r.reasoning += ev.Text
		case engine.EventContent:
			r.content += ev.Text
		case engine.EventDone:
			r.stats = ev.Stats
		}
	}
	return r
}

func user(s string) []engine.Message { return []engine.Message{{Role: "user", Content: s}} }

func ptr[T any](v T) *T { return &v }

// scripted is an engine.Backend that "writes" a fixed answer: after the
// first promptLen positions each row predicts the answer's next token (one
// logit up), then the end of the turn. With the real Format on top it tests
// SmolLM3's parsing of whatever answer a test scripts.
type scripted struct {
	vocab     int
	promptLen int
	answer    []int32
	end       int32
}

type scriptedCache struct{ n, max int }

func (c *scriptedCache) Len() int    { return c.n }
func (c *scriptedCache) MaxLen() int { return c.max }
func (c *scriptedCache) Truncate(n int) error {
	c.n = min(c.n, n)
	return nil
}
func (c *scriptedCache) Bytes() int64 { return int64(c.n) }
func (c *scriptedCache) Close() error { return nil }

func (b *scripted) Vocab() int                      { return b.vocab }
func (b *scripted) BatchSize() int                  { return 512 }
func (b *scripted) NewCache() (engine.Cache, error) { return &scriptedCache{max: 4096}, nil }

func (b *scripted) Step(ctx context.Context, batch []engine.Seq) error {
	for _, s := range batch {
		c := s.Cache.(*scriptedCache)
		rows := len(s.Logits) / b.vocab
		for r := range rows {
			// The row of the token at position p predicts position p+1.
			p := c.n + len(s.Tokens) - rows + r
			next := b.end
			if i := p + 1 - b.promptLen; i >= 0 && i < len(b.answer) {
				next = b.answer[i]
			}
			row := s.Logits[r*b.vocab : (r+1)*b.vocab]
			clear(row)
			row[next] = 1
		}
		c.n += len(s.Tokens)
	}
	return nil
}

// scriptedModel returns an engine.Model with SmolLM3's format over the
// tiny golden model's vocabulary, whose backend answers msgs with answer.
func scriptedModel(t *testing.T, msgs []engine.Message, opts engine.PromptOptions, answer string) *engine.Model {
	t.Helper()
	f, err := gguf.Open(sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	format := NewFormat(f)
	prompt, err := format.Prompt(msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := realTokenizer(format)
	imEnd, _ := tok.ID("<|im_end|>")
	b := &scripted{vocab: tok.Len(), promptLen: len(prompt), answer: tok.Encode(answer, true), end: imEnd}
	cfg, err := engine.NewConfig(engine.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.New(b, format, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
