package models_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	_ "github.com/smolgo/smolgo/models/llamaarch"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/llama"
)

func loadGoldenModel(t testing.TB, name string, opts ...engine.Option) *engine.Model {
	t.Helper()
	m, err := engine.Open(goldenModelPath(t, name), opts...) // llama-tiny too

	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// sysChat is a conversation with a long shared system prompt.
func sysChat(question string) []engine.Message {
	return []engine.Message{{Role: "system", Content: strings.Repeat("You answer briefly and kindly. ", 4) + "/system_override"},
		{Role: "user", Content: question}}
}

// promptLogits runs one generation step and returns the prompt's logits and
// the stats.
func promptLogits(t *testing.T, s *engine.Session, msgs []engine.Message) ([]float32, *engine.Stats) {
	t.Helper()
	r := collect(s, context.Background(), msgs, engine.GenerateOptions{MaxTokens: 1, Thinking: ptr(false)})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return append([]float32(nil), s.PromptLogits()...), r.stats
}

func maxAbs(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// Sessions share prompt prefixes through the model's engine.PromptCache, and the
// logits are those of a model without one: identical with an f32 cache (the
// tiled attention path for any batch), within the golden tolerance with f16
// (a short remainder takes the f16 online path; see engine.PromptCache).
func TestPromptCacheSharesPrefixes(t *testing.T) {
	cases := []struct {
		model string
		kv    llama.KVType
		tol   float64
	}{
		{"smollm3-tinyq-F32", llama.KVF32, 0},
		{"smollm3-tinyq-F32", llama.KVF16, 0.09},
		{"smollm3-tinyq-Q4_K_M", llama.KVF16, 0.9},
	}
	for _, tc := range cases {
		plain := loadGoldenModel(t, tc.model, engine.WithKVType(tc.kv.String()), engine.WithThreads(2))
		cached := loadGoldenModel(t, tc.model, engine.WithKVType(tc.kv.String()), engine.WithThreads(2), engine.WithPromptCache(64<<20))
		if plain.PromptCache() != nil || cached.PromptCache() == nil {
			t.Fatal("WithPromptCache: prompt cache not set up as asked")
		}
		q1, q2 := sysChat("What is the capital of France?"), sysChat("Name a prime number.")
		want1, _ := promptLogits(t, plain.NewSession(), q1)
		want2, _ := promptLogits(t, plain.NewSession(), q2)

		got1, st1 := promptLogits(t, cached.NewSession(), q1)
		if st1.CachedTokens != 0 || st1.SharedCachedTokens != 0 {
			t.Errorf("%s: first request reused %+v", tc.model, st1)
		}
		got2, st2 := promptLogits(t, cached.NewSession(), q2) // another session, same system prompt
		if st2.SharedCachedTokens < 80 || st2.CachedTokens != st2.SharedCachedTokens || st2.CachedTokens >= st2.PromptTokens {
			t.Errorf("%s: second request: %+v, want the system prompt reused", tc.model, st2)
		}
		again, st3 := promptLogits(t, cached.NewSession(), q1) // a regenerated answer
		if st3.CachedTokens != st3.PromptTokens {
			t.Errorf("%s: the same prompt again: %+v, want all of it reused", tc.model, st3)
		}
		d1, d2, d3 := maxAbs(got1, want1), maxAbs(got2, want2), maxAbs(again, got1)
		t.Logf("%s, %v cache: %d of %d prompt tokens shared; logits vs no prompt cache: first %.3g, shared prefix %.3g, repeat vs first %.3g",
			tc.model, tc.kv, st2.SharedCachedTokens, st2.PromptTokens, d1, d2, d3)
		if d1 != 0 || d2 > tc.tol || d3 != 0 {
			t.Errorf("%s, %v cache: logits differ from a model without prompt cache by %g, %g (tolerance %g); repeat by %g",
				tc.model, tc.kv, d1, d2, tc.tol, d3)
		}
		ps := cached.PromptCache().Stats()
		if ps.Hits != 2 || ps.Misses != 1 || ps.HitTokens != st2.SharedCachedTokens+st3.CachedTokens || ps.Entries != 2 || ps.Bytes > ps.MaxBytes {
			t.Errorf("%s: prompt cache stats %+v", tc.model, ps)
		}
	}
}

// The memory bound evicts the least recently used snapshots, and a
// conversation's growing prompt replaces its earlier snapshot.
func TestPromptCacheEviction(t *testing.T) {
	path := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	probe, err := engine.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := partsOf(t, probe).CPU().Config
	probe.Close()
	// Room for one prompt of about 150 tokens, not two.
	m := loadGoldenModel(t, "smollm3-tinyq-Q4_K_M", engine.WithPromptCache(cfg.KVBytes(llama.KVF16, 220)))
	a, b := sysChat("first question"), shortChat(strings.Repeat("another system ", 6))
	_, _ = promptLogits(t, m.NewSession(), a)
	_, _ = promptLogits(t, m.NewSession(), b)
	ps := m.PromptCache().Stats()
	if ps.Entries != 1 || ps.Bytes > ps.MaxBytes {
		t.Fatalf("after two prompts: %+v, want one snapshot within the bound", ps)
	}
	// Only the template's first tokens, common to a and b, come back.
	if _, st := promptLogits(t, m.NewSession(), a); st.SharedCachedTokens > 16 {
		t.Errorf("evicted prompt was reused: %+v", st)
	}
	// One conversation, two turns: one snapshot, the longer prompt.
	m2 := loadGoldenModel(t, "smollm3-tinyq-Q4_K_M", engine.WithPromptCache(64<<20))
	s := m2.NewSession()
	r := collect(s, context.Background(), a, engine.GenerateOptions{MaxTokens: 3, Thinking: ptr(false)})
	turn2 := append(a, engine.Message{Role: "assistant", Content: r.content}, engine.Message{Role: "user", Content: "and then?"})
	if _, st := promptLogits(t, s, turn2); st.SharedCachedTokens != 0 || st.CachedTokens == 0 {
		t.Errorf("second turn: %+v, want the session's own cache used", st)
	}
	if ps := m2.PromptCache().Stats(); ps.Entries != 1 {
		t.Errorf("a conversation of two turns left %d snapshots, want 1", ps.Entries)
	}
}

// Sessions on several goroutines share one prompt cache safely, and each
// gets the answer it would get alone.
func TestPromptCacheConcurrent(t *testing.T) {
	m := loadGoldenModel(t, "smollm3-tinyq-F32", engine.WithKVType("f32"), engine.WithThreads(1), engine.WithPromptCache(8<<20))
	plain := loadGoldenModel(t, "smollm3-tinyq-F32", engine.WithKVType("f32"), engine.WithThreads(1))
	questions := []string{"one?", "two?", "three?", "four?"}
	want := make([][]float32, len(questions))
	for i, q := range questions {
		want[i], _ = promptLogits(t, plain.NewSession(), sysChat(q))
	}
	errs := make(chan string, 2*len(questions))
	for round := range 2 {
		done := make(chan struct{})
		for i, q := range questions {
			go func() {
				defer func() { done <- struct{}{} }()
				s := m.NewSession()
				r := collect(s, context.Background(), sysChat(q), engine.GenerateOptions{MaxTokens: 1, Thinking: ptr(false)})
				if r.err != nil {
					errs <- r.err.Error()
				} else if d := maxAbs(s.PromptLogits(), want[i]); d != 0 {
					errs <- fmt.Sprintf("round %d, %q: logits differ by %g", round, q, d)
				}
			}()
		}
		for range questions {
			<-done
		}
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if st := m.PromptCache().Stats(); st.Hits == 0 || st.Bytes > st.MaxBytes {
		t.Errorf("stats %+v", st)
	}
}
