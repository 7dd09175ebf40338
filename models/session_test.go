package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/goldentest"
)

// The engine's features on every family, through real forward passes of
// the tiny golden-families models (their 337-token vocabulary spells the
// templates' markers as text, which is enough to run every path), and of
// the tiny models that have no golden files there (goldentest.TinyModel).
var sessionModels = []string{"qwen3-tiny-Q4_K_M", "qwen2-tiny-Q4_K_M", "llama32-tiny-Q4_K_M", "gemma3-tiny-Q4_K_M", "smollm2-tiny-Q4_K_M", "granite-tiny-Q4_K_M", "phi3-tiny-Q4_K_M",
	"qwen3moe-tiny-Q4_K_M", "gptoss-tiny-Q4_K_M", "lfm2-tiny-Q4_K_M", "qwen35-tiny-Q4_K_M",
	"lfm2moe-tiny-Q4_K_M"}

// modelPath returns the file of a tiny model named stem-MIX
// ("gemma3-tiny-Q4_K_M"): a golden-families file, or one synth writes
// (goldentest.TinyModel).
func modelPath(t *testing.T, name string) string { return goldentest.TinyModel(t, name) }

// recurrentModels are the session models with recurrent layers, whose
// caches cannot shift (a dropped turn is recomputed instead).
var recurrentModels = map[string]bool{"lfm2-tiny-Q4_K_M": true, "qwen35-tiny-Q4_K_M": true, "lfm2moe-tiny-Q4_K_M": true}

// rewritesHistory are the session models whose template renders earlier
// answers differently from how they were generated (gpt-oss drops the
// analysis channel of earlier turns): a dropped turn is recomputed, since
// the cache's positions are not the new prompt's.
var rewritesHistory = map[string]bool{"gptoss-tiny-Q4_K_M": true}

// noToolModels are the session models whose format has no tool calls yet
// (none now: every session model's format reads its calls).
var noToolModels = map[string]bool{}

func loadFamily(t *testing.T, name string, opts ...engine.Option) *engine.Model {
	t.Helper()
	opts = append([]engine.Option{engine.WithThreads(2)}, opts...)
	m, err := engine.Open(modelPath(t, name), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// partsOf returns the parts under a family's model (family.Of): the runner
// for Forward, the weights, the file, the tokenizer.
func partsOf(t testing.TB, m *engine.Model) *family.Parts {
	t.Helper()
	p, ok := family.Of(m)
	if !ok {
		t.Fatal("not a family's model")
	}
	return p
}

type run struct {
	text   string
	tokens []int32
	stats  *engine.Stats
}

func generate(t *testing.T, s *engine.Session, msgs []engine.Message, opts engine.GenerateOptions) run {
	t.Helper()
	var r run
	opts.Logprobs = true
	for ev, err := range s.Generate(context.Background(), msgs, opts) {
		if err != nil {
			t.Fatal(err)
		}
		for _, lp := range ev.Logprobs {
			r.tokens = append(r.tokens, lp.Token)
		}
		switch ev.Kind {
		case engine.EventContent, engine.EventReasoning:
			r.text += ev.Text
		case engine.EventDone:
			r.stats = ev.Stats
		}
	}
	return r
}

func chat(turns ...string) []engine.Message {
	var msgs []engine.Message
	for i, t := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, engine.Message{Role: role, Content: t})
	}
	return msgs
}

// A long first turn (past Gemma's window of 32 and its ring of 32+batch),
// then a second turn in the same session: the second reuses the first's
// cache where the family's cache can go back that far, and its greedy
// answer is the one a fresh session gives (f32 caches make that exact).
func TestFamilySessions(t *testing.T) {
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 6)
	for _, name := range sessionModels {
		t.Run(name, func(t *testing.T) {
			m := loadFamily(t, name, engine.WithKVType("f32"), engine.WithBatchSize(16), engine.WithContext(512))
			opts := engine.GenerateOptions{MaxTokens: 6, Thinking: new(false)}
			s := m.NewSession()
			first := generate(t, s, chat(long), opts)
			if first.stats.GeneratedTokens == 0 || first.stats.PromptTokens < 64 {
				t.Fatalf("first turn: %+v", first.stats)
			}
			second := chat(long, first.text, "and again?")
			again := generate(t, s, second, opts)
			fresh := generate(t, m.NewSession(), second, opts)
			if fmt.Sprint(again.tokens) != fmt.Sprint(fresh.tokens) {
				t.Errorf("second turn %v, a fresh session %v", again.tokens, fresh.tokens)
			}
			t.Logf("second turn: %d of %d prompt tokens from the cache", again.stats.CachedTokens, again.stats.PromptTokens)
			if again.stats.CachedTokens == 0 {
				t.Errorf("the second turn reused nothing of the first")
			}
		})
	}
}

// Several sessions generating at once share forward steps; each gets what
// it gets alone. The prompt cache shares a common prefix between sessions.
// Speculation gives the greedy tokens of plain decoding.
func TestFamilyBatchingPromptCacheSpeculation(t *testing.T) {
	for _, name := range sessionModels {
		t.Run(name, func(t *testing.T) {
			m := loadFamily(t, name, engine.WithPromptCache(64<<20), engine.WithMaxSequences(4), engine.WithContext(512))
			opts := engine.GenerateOptions{MaxTokens: 8, Thinking: new(false)}
			sys := strings.Repeat("you answer in short words. ", 8)
			conv := func(i int) []engine.Message {
				return []engine.Message{{Role: "system", Content: sys}, {Role: "user", Content: fmt.Sprintf("question %d", i)}}
			}
			alone := make([]run, 4)
			for i := range alone {
				alone[i] = generate(t, m.NewSession(), conv(i), opts)
			}
			if alone[3].stats.SharedCachedTokens == 0 {
				t.Errorf("the fourth session shared no prefix through the prompt cache (%+v)", alone[3].stats)
			}
			together := make([]run, 4)
			var wg sync.WaitGroup
			for i := range together {
				wg.Go(func() { together[i] = generate(t, m.NewSession(), conv(i), opts) })
			}
			wg.Wait()
			for i := range together {
				if fmt.Sprint(together[i].tokens) != fmt.Sprint(alone[i].tokens) {
					t.Errorf("session %d: batched %v, alone %v", i, together[i].tokens, alone[i].tokens)
				}
			}
			rep := strings.Repeat("one two three four five six seven ", 5)
			spec := opts
			spec.Speculation = new(true)
			plain := generate(t, m.NewSession(), chat(rep), opts)
			fast := generate(t, m.NewSession(), chat(rep), spec)
			if fmt.Sprint(plain.tokens) != fmt.Sprint(fast.tokens) {
				t.Errorf("speculation changed the greedy tokens: %v, plain %v", fast.tokens, plain.tokens)
			}
		})
	}
}

// A JSON-schema constraint holds on every family, and a conversation that
// outgrows a small context drops its oldest turns and shifts the cache,
// Gemma's sliding-window ring included (passes of 16 tokens make it a ring
// of 48 positions in a context of 320).
func TestFamilyConstraintAndContextShift(t *testing.T) {
	for _, name := range sessionModels {
		t.Run(name, func(t *testing.T) {
			// Passes of 16 tokens: Gemma's window layer is then a ring of 48.
			m := loadFamily(t, name, engine.WithContext(320), engine.WithBatchSize(16))
			g, err := grammar.FromJSONSchema([]byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
			if err != nil {
				t.Fatal(err)
			}
			c, err := m.NewConstraint(g)
			if err != nil {
				t.Fatal(err)
			}
			r := generate(t, m.NewSession(), chat("answer in json"), engine.GenerateOptions{MaxTokens: 40, Thinking: new(false), Constraint: c})
			var v struct{ OK *bool }
			if err := json.Unmarshal([]byte(r.text), &v); err != nil || v.OK == nil {
				t.Errorf("constrained answer %q: %v", r.text, err)
			}
			s := m.NewSession()
			var msgs []engine.Message
			opts := engine.GenerateOptions{MaxTokens: 4, Thinking: new(false), DropOldest: true, ShiftContext: true}
			dropped, shifted := 0, 0
			for i := range 8 {
				msgs = append(msgs, engine.Message{Role: "user", Content: fmt.Sprintf("turn %d: %s", i, strings.Repeat("words ", 12))})
				out := generate(t, s, msgs, opts)
				msgs = append(msgs, engine.Message{Role: "assistant", Content: out.text})
				dropped = max(dropped, out.stats.DroppedMessages)
				shifted = max(shifted, out.stats.ShiftedTokens)
			}
			if dropped == 0 {
				t.Errorf("eight turns in a context of 320 dropped nothing")
			}
			t.Logf("dropped %d messages, shifted %d tokens", dropped, shifted)
			switch {
			case recurrentModels[name] && shifted != 0:
				t.Errorf("a recurrent model's cache shifted %d tokens", shifted)
			case !recurrentModels[name] && !rewritesHistory[name] && shifted == 0:
				t.Errorf("the cache never shifted: every drop was recomputed")
			}
		})
	}
}
