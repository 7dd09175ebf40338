package models_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/smollm3"
	"github.com/smolgo/smolgo/tokenizer"
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

// scriptedModel returns an engine.Model with SmolLM3's format over the
// tiny golden model's vocabulary, whose backend answers msgs with answer.
// The backend is format_test.go's scripted.
func scriptedModel(t *testing.T, msgs []engine.Message, opts engine.PromptOptions, answer string) *engine.Model {
	t.Helper()
	f, err := gguf.Open(sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	format := smollm3.NewFormat(f)
	prompt, err := format.Prompt(msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
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
