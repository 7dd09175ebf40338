package models_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/sample"
)

// A draft model on every family: the Q8_0 file drafted by its own weights
// in Q4_K_M. Greedy answers are the tokens of decoding without the draft,
// in a first turn, in a second turn of the same session after the first
// turn's rejected drafts were dropped (recurrent state included: lfm2
// goes back to its hold and its checkpoints), and in a second session that
// takes the prompt from the prompt cache, the draft's part included. A
// sampled answer runs too.
func TestFamilyDraft(t *testing.T) {
	for _, name := range sessionModels {
		stem := strings.TrimSuffix(name, "-Q4_K_M")
		t.Run(stem, func(t *testing.T) {
			d := loadFamily(t, stem+"-Q4_K_M", engine.WithContext(512))
			m := loadFamily(t, stem+"-Q8_0", engine.WithContext(512), engine.WithDraft(d), engine.WithDraftLimits(4, 0, 0),
				engine.WithPromptCache(32<<20))
			opts := engine.GenerateOptions{MaxTokens: 24, Thinking: new(false)}
			plain := opts
			plain.Drafter = engine.DrafterNone
			sys := strings.Repeat("you answer in short words. ", 4)
			first := []engine.Message{{Role: "system", Content: sys}, {Role: "user", Content: "tell me a story about a fox"}}

			s := m.NewSession()
			a := generate(t, s, first, opts)
			want := generate(t, m.NewSession(), first, plain)
			if fmt.Sprint(a.tokens) != fmt.Sprint(want.tokens) {
				t.Fatalf("first turn with the draft %v, without %v", a.tokens, want.tokens)
			}
			if a.stats.DraftTokens == 0 {
				t.Fatalf("no drafts: %+v", a.stats)
			}
			second := append(first, engine.Message{Role: "assistant", Content: a.text}, engine.Message{Role: "user", Content: "and then?"})
			b := generate(t, s, second, opts)
			wantB := generate(t, m.NewSession(), second, plain)
			if fmt.Sprint(b.tokens) != fmt.Sprint(wantB.tokens) {
				t.Errorf("second turn with the draft %v, without %v", b.tokens, wantB.tokens)
			}
			c := generate(t, m.NewSession(), second, opts)
			if fmt.Sprint(c.tokens) != fmt.Sprint(wantB.tokens) || c.stats.SharedCachedTokens == 0 {
				t.Errorf("a new session from the prompt cache: %v (%d shared), want %v", c.tokens, c.stats.SharedCachedTokens, wantB.tokens)
			}
			t.Logf("accepted %d of %d, %d of %d, %d of %d", a.stats.AcceptedTokens, a.stats.DraftTokens,
				b.stats.AcceptedTokens, b.stats.DraftTokens, c.stats.AcceptedTokens, c.stats.DraftTokens)
			sampled := opts
			sampled.Sampler = sample.Config{Temperature: 0.8, TopP: 0.95, Seed: 3}
			if r := generate(t, m.NewSession(), first, sampled); r.stats.GeneratedTokens == 0 || r.stats.Drafter != engine.DrafterModel {
				t.Errorf("sampled with the draft: %+v", r.stats)
			}
		})
	}
}
