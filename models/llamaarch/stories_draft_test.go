package llamaarch_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/sample"
)

// storiesPair opens stories260K in Q8_0 with its Q4_0 file as the draft
// model: a trained model and its own weights quantized coarser, the
// realistic pair of the same vocabulary.
func storiesPair(t *testing.T) *engine.Model {
	t.Helper()
	d := loadStories(t, "stories260K-Q4_0.gguf")
	m, err := engine.Open(sharedtest.Path(t, stories260K+"stories260K-Q8_0.gguf"), engine.WithThreads(2), engine.WithContext(256),
		engine.WithDraft(d), engine.WithDraftLimits(4, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func storiesTokens(t *testing.T, s *engine.Session, opts engine.GenerateOptions) ([]int32, *engine.Stats) {
	t.Helper()
	var got []int32
	var st *engine.Stats
	opts.Logprobs = true
	for ev, err := range s.Generate(context.Background(), nil, opts) {
		if err != nil {
			t.Fatal(err)
		}
		for _, lp := range ev.Logprobs {
			got = append(got, lp.Token)
		}
		if ev.Kind == engine.EventDone {
			st = ev.Stats
		}
	}
	return got, st
}

// Greedily, stories260K drafted by its Q4_0 file writes the tokens it
// writes alone, on llama.cpp's five prompts, and most drafts are right.
func TestStories260KDraftGreedy(t *testing.T) {
	m := storiesPair(t)
	ref := readStoriesGreedy(t)
	drafted, accepted := 0, 0
	for _, p := range ref["Q8_0"] {
		opts := engine.GenerateOptions{RawPrompt: p.Tokens, MaxTokens: 64, Drafter: engine.DrafterNone}
		want, _ := storiesTokens(t, m.NewSession(), opts)
		opts.Drafter = engine.DrafterModel
		got, st := storiesTokens(t, m.NewSession(), opts)
		if !slices.Equal(got, want) {
			t.Errorf("%q: with the draft %v\nwithout %v", p.Prompt, got, want)
		}
		drafted += st.DraftTokens
		accepted += st.AcceptedTokens
	}
	t.Logf("%d of %d drafted tokens accepted", accepted, drafted)
	if drafted == 0 || accepted*2 < drafted {
		t.Errorf("%d of %d drafted tokens accepted: the Q4_0 file should agree with the Q8_0 one most of the time", accepted, drafted)
	}
}

// Sampled, the answers drafted by the Q4_0 file have the distribution of
// the Q8_0 model's own: the frequencies of whole answers (four tokens,
// top-k 3, temperature 1.2) of many seeded runs (1000, 10000 with SMOLGO_HEAVY=1) with and without the
// draft pass a two-sample chi-square test.
func TestStories260KDraftSampled(t *testing.T) {
	m := storiesPair(t)
	prompt := readStoriesGreedy(t)["Q8_0"][0].Tokens
	runs := 1000
	if os.Getenv("SMOLGO_HEAVY") != "" {
		runs = 10000
	}
	counts := [2]map[string]int{{}, {}}
	var st [2]engine.Stats
	for arm, drafter := range []engine.Drafter{engine.DrafterNone, engine.DrafterModel} {
		sess := m.NewSession() // the same prompt each time: its logits are reused
		for i := range runs {
			got, s := storiesTokens(t, sess, engine.GenerateOptions{RawPrompt: prompt, MaxTokens: 4, Drafter: drafter,
				Sampler: sample.Config{Temperature: 1.2, TopK: 3, Seed: uint64(1 + i + arm*runs)}})
			counts[arm][fmt.Sprint(got)]++
			st[arm].DraftTokens += s.DraftTokens
			st[arm].AcceptedTokens += s.AcceptedTokens
		}
	}
	// Two samples of equal size: sum over cells of (a-b)^2/(a+b), cells
	// seen fewer than 10 times in all pooled.
	chi2, df := 0.0, -1
	var poolA, poolB float64
	keys := map[string]bool{}
	for _, c := range counts {
		for k := range c {
			keys[k] = true
		}
	}
	for k := range keys {
		a, b := float64(counts[0][k]), float64(counts[1][k])
		if a+b < 10 {
			poolA, poolB = poolA+a, poolB+b
			continue
		}
		chi2 += (a - b) * (a - b) / (a + b)
		df++
	}
	if poolA+poolB > 0 {
		chi2 += (poolA - poolB) * (poolA - poolB) / (poolA + poolB)
		df++
	}
	k := float64(max(df, 1))
	c := 1 - 2/(9*k) + 3.0902*math.Sqrt(2/(9*k)) // 99.9% (Wilson-Hilferty)
	crit := k * c * c * c
	t.Logf("chi-square %.1f, %d degrees of freedom (critical %.1f); drafts: %d of %d accepted", chi2, df, crit, st[1].AcceptedTokens, st[1].DraftTokens)
	if st[1].DraftTokens == 0 || st[1].AcceptedTokens == st[1].DraftTokens {
		t.Errorf("%d of %d drafted tokens accepted: the test needs drafts and rejections", st[1].AcceptedTokens, st[1].DraftTokens)
	}
	if chi2 > crit {
		t.Errorf("answers with the draft are distributed otherwise than without: chi-square %.1f > %.1f", chi2, crit)
	}
}
