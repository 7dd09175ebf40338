package models_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
	"github.com/smolgo/smolgo/sample"
)

// openMTPModel opens golden-next's tiny Qwen3.5 F32 file with an MTP block
// added (synth.WriteMTP), drafting with the block.
func openMTPModel(t *testing.T, opts ...engine.Option) *engine.Model {
	t.Helper()
	src, err := gguf.Open(sharedtest.Path(t, "golden-next/models/qwen35-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var buf bytes.Buffer
	if err := synth.WriteMTP(&buf, src, 1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "qwen35-mtp-F32.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	opts = append([]engine.Option{engine.WithThreads(2), engine.WithContext(512), engine.WithMTP()}, opts...)
	m, err := engine.Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// Drafting with Qwen3.5's MTP block gives the tokens of decoding without
// drafts: over several prompts, in a first and a second turn of one
// session (the block's cache and the model's recurrent state go back over
// the rejected drafts), and in a session from the prompt cache (whose
// block restores the prefix from the prompt cache too). A sampled answer
// at a high temperature, where the model and the block agree often (both
// near uniform), accepts drafts, after which a greedy turn of the same
// session is still the model's own.
func TestQwen35MTPDraft(t *testing.T) {
	m := openMTPModel(t, engine.WithDraftLimits(3, 0, 0), engine.WithPromptCache(32<<20))
	opts := engine.GenerateOptions{MaxTokens: 24, Thinking: new(false)}
	plain := opts
	plain.Drafter = engine.DrafterNone
	for _, prompt := range []string{"tell me a story about a fox", "hello", "what is 2+2? explain it twice, slowly.", strings.Repeat("a b c ", 20)} {
		first := []engine.Message{{Role: "user", Content: prompt}}
		s := m.NewSession()
		a := generate(t, s, first, opts)
		want := generate(t, m.NewSession(), first, plain)
		if fmt.Sprint(a.tokens) != fmt.Sprint(want.tokens) {
			t.Fatalf("%q: with MTP %v, without %v", prompt, a.tokens, want.tokens)
		}
		if a.stats.Drafter != engine.DrafterMTP || a.stats.DraftTokens == 0 {
			t.Fatalf("%q: no MTP drafts: %+v", prompt, a.stats)
		}
		second := append(first, engine.Message{Role: "assistant", Content: a.text}, engine.Message{Role: "user", Content: "and then?"})
		b := generate(t, s, second, opts)
		wantB := generate(t, m.NewSession(), second, plain)
		if fmt.Sprint(b.tokens) != fmt.Sprint(wantB.tokens) {
			t.Errorf("%q, second turn: with MTP %v, without %v", prompt, b.tokens, wantB.tokens)
		}
		c := generate(t, m.NewSession(), second, opts)
		if fmt.Sprint(c.tokens) != fmt.Sprint(wantB.tokens) {
			t.Errorf("%q, from the prompt cache: with MTP %v, without %v", prompt, c.tokens, wantB.tokens)
		}
		t.Logf("%q: accepted %d of %d, %d of %d, %d of %d", prompt, a.stats.AcceptedTokens, a.stats.DraftTokens,
			b.stats.AcceptedTokens, b.stats.DraftTokens, c.stats.AcceptedTokens, c.stats.DraftTokens)
	}

	hot := opts
	hot.MaxTokens = 48
	hot.Sampler = sample.Config{Temperature: 20, Seed: 5}
	s := m.NewSession()
	first := []engine.Message{{Role: "user", Content: "say anything"}}
	r := generate(t, s, first, hot)
	if r.stats.Drafter != engine.DrafterMTP || r.stats.AcceptedTokens == 0 {
		t.Fatalf("sampled at temperature 20: %+v", r.stats)
	}
	t.Logf("sampled: accepted %d of %d", r.stats.AcceptedTokens, r.stats.DraftTokens)
	second := append(first, engine.Message{Role: "assistant", Content: r.text}, engine.Message{Role: "user", Content: "again"})
	if a, want := generate(t, s, second, opts), generate(t, m.NewSession(), second, plain); fmt.Sprint(a.tokens) != fmt.Sprint(want.tokens) {
		t.Errorf("greedy after a sampled turn with MTP %v, without %v", a.tokens, want.tokens)
	}
}

// A new session whose whole prompt comes from the prompt cache restores
// the block's cache and the model's hidden state at the prompt's end from
// it too, so the block drafts from the inputs it had when it computed the
// prompt: sampled at a high temperature with one seed (where the block's
// drafts are often accepted), the session's tokens and drafts are those of
// a model without a prompt cache, whose block computed the whole prompt.
// A block fed zeros for the restored prefix instead (as before its
// snapshots were shared) drafts otherwise there, which this test sees on
// each of these prompts.
func TestQwen35MTPPromptCache(t *testing.T) {
	m := openMTPModel(t, engine.WithDraftLimits(3, 0, 0), engine.WithPromptCache(32<<20))
	ref := openMTPModel(t, engine.WithDraftLimits(3, 0, 0))
	hot := engine.GenerateOptions{MaxTokens: 32, Thinking: new(false), Sampler: sample.Config{Temperature: 20, Seed: 5}}
	for _, prompt := range []string{"say anything", "tell me a story about a fox", "hello"} {
		msgs := []engine.Message{{Role: "user", Content: prompt}}
		generate(t, m.NewSession(), msgs, hot) // the prompt cache keeps the prompt, and the block's
		got := generate(t, m.NewSession(), msgs, hot)
		want := generate(t, ref.NewSession(), msgs, hot)
		if got.stats.SharedCachedTokens != got.stats.PromptTokens {
			t.Fatalf("%q: %d of %d prompt tokens from the prompt cache", prompt, got.stats.SharedCachedTokens, got.stats.PromptTokens)
		}
		if fmt.Sprint(got.tokens) != fmt.Sprint(want.tokens) || got.stats.DraftTokens != want.stats.DraftTokens || got.stats.AcceptedTokens != want.stats.AcceptedTokens {
			t.Errorf("%q from the prompt cache: %v, %d of %d drafts accepted; computed: %v, %d of %d", prompt,
				got.tokens, got.stats.AcceptedTokens, got.stats.DraftTokens, want.tokens, want.stats.AcceptedTokens, want.stats.DraftTokens)
		}
		t.Logf("%q: %d of %d drafts accepted", prompt, got.stats.AcceptedTokens, got.stats.DraftTokens)
	}
}

// Cancelling a generation that drafts with the MTP block leaves the
// session usable: its next answer is the model's own.
func TestQwen35MTPCancel(t *testing.T) {
	m := openMTPModel(t, engine.WithDraftLimits(4, 0, 0))
	opts := engine.GenerateOptions{MaxTokens: 32, Thinking: new(false)}
	msgs := []engine.Message{{Role: "user", Content: "count to ten"}}
	for _, after := range []int{1, 3, 7} {
		s := m.NewSession()
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		for ev, err := range s.Generate(ctx, msgs, opts) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == engine.EventContent || ev.Kind == engine.EventReasoning {
				if n++; n == after {
					cancel()
				}
			}
		}
		cancel()
		plain := opts
		plain.Drafter = engine.DrafterNone
		again := append(msgs, engine.Message{Role: "assistant", Content: "1 2"}, engine.Message{Role: "user", Content: "go on"})
		a, want := generate(t, s, again, opts), generate(t, m.NewSession(), again, plain)
		if fmt.Sprint(a.tokens) != fmt.Sprint(want.tokens) {
			t.Errorf("cancelled after %d pieces, then: with MTP %v, without %v", after, a.tokens, want.tokens)
		}
	}
}

// A model without an MTP block refuses WithMTP at open, and a request for
// the MTP drafter fails on a model that does not draft with one.
func TestMTPRefused(t *testing.T) {
	_, err := engine.Open(sharedtest.Path(t, "golden-next/models/qwen35-tiny-Q8_0.gguf"), engine.WithMTP(), engine.WithThreads(1), engine.WithContext(64))
	if err == nil || !strings.Contains(err.Error(), "no multi-token-prediction block") {
		t.Errorf("WithMTP on a file without the block: %v", err)
	}
	m := loadFamily(t, "qwen35-tiny-Q8_0", engine.WithContext(64))
	for _, err := range m.NewSession().Generate(context.Background(), chat("hi"), engine.GenerateOptions{MaxTokens: 2, Drafter: engine.DrafterMTP}) {
		if err == nil || !strings.Contains(err.Error(), "no MTP block") {
			t.Errorf("DrafterMTP without WithMTP: %v", err)
		}
		break
	}
}
