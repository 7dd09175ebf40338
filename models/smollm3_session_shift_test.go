package models_test

import (
	"context"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
)

// A conversation that outgrows the context drops its oldest turns; with
// ShiftContext the kept turns are reused from the shifted cache instead of
// being computed again.
func TestShiftContextReusesKeptTurns(t *testing.T) {
	const ctxLen = 200
	m := loadTiny(t, engine.WithContext(ctxLen), engine.WithPromptCache(16<<20))
	opts := engine.GenerateOptions{Thinking: ptr(false), MaxTokens: 4, DropOldest: true, ShiftContext: true}
	msgs := shortChat(strings.Repeat("old ", 12))
	msgs = append(msgs, engine.Message{Role: "assistant", Content: strings.Repeat("reply ", 6)},
		engine.Message{Role: "user", Content: strings.Repeat("kept ", 10)})
	s := m.NewSession()
	first := collect(s, context.Background(), msgs, opts)
	if first.err != nil || first.stats.ShiftedTokens != 0 {
		t.Fatalf("first turn: %v, stats %+v", first.err, first.stats)
	}
	msgs = append(msgs, engine.Message{Role: "assistant", Content: first.content},
		engine.Message{Role: "user", Content: strings.Repeat("new ", 9)})
	second := collect(s, context.Background(), msgs, opts)
	if second.err != nil {
		t.Fatal(second.err)
	}
	st := second.stats
	t.Logf("second turn: %+v", st)
	// A shifted cache is an approximation: it is not shared.
	if pc := m.PromptCache(); pc.Stats().Entries != 1 {
		t.Errorf("prompt cache after a shift: %+v, want only the first prompt's snapshot", pc.Stats())
	}
	// Without a shift only the system prompt (and a few tokens) would be
	// reused; with it, the kept user turn and the answer are reused too.
	noShift := opts
	noShift.ShiftContext = false
	plain := m.NewSession()
	collect(plain, context.Background(), msgs[:len(msgs)-2], noShift)
	ref := collect(plain, context.Background(), msgs, noShift)
	if ref.err != nil {
		t.Fatal(ref.err)
	}
	t.Logf("without shift: %+v", ref.stats)
	if st.ShiftedTokens == 0 || st.CachedTokens < ref.stats.CachedTokens+30 || st.PromptTokens != ref.stats.PromptTokens {
		t.Errorf("shift: %+v; re-prefill: %+v; want the shift to reuse the kept turn", st, ref.stats)
	}
	// The cache now holds the shortened prompt (and the answer).
	prompt, err := m.Format().Prompt(append(msgs[:1:1], msgs[2:]...), engine.PromptOptions{Thinking: opts.Thinking}) // the old question dropped
	if err != nil {
		t.Fatal(err)
	}
	if len(prompt) != st.PromptTokens || s.CachedTokens() < len(prompt) || s.CachedTokens() > len(prompt)+st.GeneratedTokens {
		t.Errorf("after the shift the cache holds %d tokens, want the %d-token prompt and up to %d answer tokens", s.CachedTokens(), len(prompt), st.GeneratedTokens)
	}
}
