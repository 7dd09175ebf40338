package models_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/smollm3"
)

// Tests of the generation API on real forward passes: the golden tiny model
// (random weights, a 337-token vocabulary with SmolLM3's special tokens) and
// realvocab (SmolLM3's real tokenizer). The tiny model's answers are
// nonsense, so these tests compare runs with each other; realvocab compares
// with llama.cpp.

func loadTiny(t *testing.T, opts ...engine.Option) *engine.Model {
	t.Helper()
	m, err := engine.Open(sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// shortChat keeps prompts short: /system_override replaces the long default
// system header (the tiny vocabulary spends about a token per byte).
func shortChat(question string) []engine.Message {
	return []engine.Message{{Role: "system", Content: "Be brief. /system_override"}, {Role: "user", Content: question}}
}

func TestModelGenerate(t *testing.T) {
	m := loadTiny(t)
	opts := engine.GenerateOptions{MaxTokens: 12, Thinking: ptr(false), Logprobs: true}
	s := m.NewSession()
	r := collect(s, context.Background(), shortChat("Hi"), opts)
	if r.err != nil {
		t.Fatal(r.err)
	}
	st := r.stats
	if st == nil || st.StopReason != engine.StopLength || st.GeneratedTokens != 12 || st.CachedTokens != 0 ||
		st.PrefillTokensPerSec <= 0 || st.DecodeTokensPerSec <= 0 {
		t.Fatalf("stats %+v", st)
	}
	prompt, err := m.Format().Prompt(shortChat("Hi"), engine.PromptOptions{Thinking: opts.Thinking})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := partsOf(t, m).Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	text, _ := tok.Decode(prompt, false)
	if st.PromptTokens != len(prompt) || !strings.HasSuffix(text, "<|im_start|>assistant\n<think>\n\n</think>\n") {
		t.Fatalf("prompt %d tokens (%q), stats say %d", len(prompt), text, st.PromptTokens)
	}
	// The events carry exactly the decoded tokens (this model never writes
	// think tags after an empty think block, nor <|im_end|> this early).
	want, err := tok.Decode(r.tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.reasoning + r.content; len(r.tokens) != 12 || got != strings.TrimLeft(want, "\n") {
		t.Fatalf("events say %q, tokens %v decode to %q", got, r.tokens, want)
	}
	if r.content == "" || r.reasoning != "" {
		t.Fatalf("reasoning %q content %q", r.reasoning, r.content)
	}

	// Determinism: a fresh session answers the same; so does a seeded sampler.
	if again := collect(m.NewSession(), context.Background(), shortChat("Hi"), opts); again.content != r.content {
		t.Fatalf("fresh session: %q, first: %q", again.content, r.content)
	}
	seeded := opts
	seeded.Sampler = sample.SmolLM3Defaults()
	seeded.Sampler.Temperature, seeded.Sampler.Seed = 0.8, 7
	seededSession := m.NewSession()
	a := collect(seededSession, context.Background(), shortChat("Hi"), seeded)
	bb := collect(m.NewSession(), context.Background(), shortChat("Hi"), seeded)
	if a.err != nil || a.content != bb.content {
		t.Fatalf("seeded runs differ: %q vs %q (%v)", a.content, bb.content, a.err)
	}
	// Asking again on the same session repeats the answer too: the prompt's
	// logits are reused, not recomputed by a differently rounded
	// single-token pass.
	if again := collect(seededSession, context.Background(), shortChat("Hi"), seeded); again.content != a.content {
		t.Fatalf("seeded rerun on the same session: %q, first %q", again.content, a.content)
	}

	t.Run("tools reach the template", func(t *testing.T) {
		tool := json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{}}}`)
		with, err := m.Format().Prompt(user("Hi"), engine.PromptOptions{Tools: []json.RawMessage{tool}})
		if err != nil {
			t.Fatal(err)
		}
		if text, _ := tok.Decode(with, false); !strings.Contains(text, "get_weather") {
			t.Fatalf("render with a tool:\n%s", text)
		}
	})

	t.Run("stop string", func(t *testing.T) {
		runes := []rune(r.content)
		if len(runes) < 6 {
			t.Skipf("answer %q too short to cut", r.content)
		}
		stop := string(runes[3:5])
		cut := collect(m.NewSession(), context.Background(), shortChat("Hi"), engine.GenerateOptions{MaxTokens: 12, Thinking: ptr(false), Stop: []string{stop}})
		if cut.err != nil || cut.content != r.content[:strings.Index(r.content, stop)] || cut.stats.StopReason != engine.StopEndOfTurn {
			t.Fatalf("stop %q: content %q, stats %+v, err %v (full answer %q)", stop, cut.content, cut.stats, cut.err, r.content)
		}
	})

	t.Run("resume reuses the cache", func(t *testing.T) {
		msgs := append(shortChat("Hi"), engine.Message{Role: "assistant", Content: r.content}, engine.Message{Role: "user", Content: "More"})
		second := collect(s, context.Background(), msgs, opts)
		fresh := collect(m.NewSession(), context.Background(), msgs, opts)
		if second.err != nil || fresh.err != nil {
			t.Fatal(second.err, fresh.err)
		}
		if second.stats.CachedTokens < st.PromptTokens {
			t.Fatalf("second turn reused %d tokens; the first prompt alone was %d", second.stats.CachedTokens, st.PromptTokens)
		}
		if fresh.stats.CachedTokens != 0 || second.content != fresh.content {
			t.Fatalf("resumed %q (cached %d), fresh %q", second.content, second.stats.CachedTokens, fresh.content)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cs := m.NewSession()
		n, sampled := 0, 0
		var stats *engine.Stats
		for ev, err := range cs.Generate(ctx, shortChat("Hi"), engine.GenerateOptions{Thinking: ptr(false), Logprobs: true}) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 2 {
				cancel()
			}
			sampled += len(ev.Logprobs)
			stats = ev.Stats
		}
		// The step running at cancel may still finish its token.
		if stats == nil || stats.StopReason != engine.StopCancelled || stats.GeneratedTokens != sampled || sampled > 4 {
			t.Fatalf("cancelled after 2 events (%d tokens): %+v", sampled, stats)
		}
		after := collect(cs, context.Background(), shortChat("Hi"), opts)
		if after.err != nil || after.content != r.content || after.stats.CachedTokens == 0 {
			t.Fatalf("after cancel: %q (cached %d), want %q; %v", after.content, after.stats.CachedTokens, r.content, after.err)
		}
	})
}

func TestModelContextFull(t *testing.T) {
	m := loadTiny(t, engine.WithContext(48))
	r := collect(m.NewSession(), context.Background(), shortChat(strings.Repeat("word ", 20)), engine.GenerateOptions{Thinking: ptr(false)})
	if !errors.Is(r.err, engine.ErrContextFull) || !strings.Contains(r.err.Error(), "holds 48") {
		t.Fatalf("err %v, want engine.ErrContextFull naming the context 48", r.err)
	}
	msgs := append(shortChat(strings.Repeat("word ", 20)), engine.Message{Role: "assistant", Content: "ok"}, engine.Message{Role: "user", Content: "Hi"})
	r = collect(m.NewSession(), context.Background(), msgs, engine.GenerateOptions{Thinking: ptr(false), DropOldest: true})
	if r.err != nil || r.stats.StopReason != engine.StopLength || r.stats.PromptTokens+r.stats.GeneratedTokens != 49 {
		t.Fatalf("DropOldest: err %v, stats %+v (want to fill the context of 48)", r.err, r.stats)
	}
}

// realvocabCase is a line of golden/realvocab/cases.jsonl joined by name
// with its conversation from tokenizer/chat_template_cases.jsonl.
type realvocabCase struct {
	Name            string           `json:"name"`
	Messages        []engine.Message `json:"messages"`
	Kwargs          map[string]any   `json:"kwargs"`
	Date            string           `json:"date"`
	PromptIDs       []int32          `json:"prompt_ids"`
	Generated       []int32          `json:"generated"`
	Margins         []float64        `json:"margins"`
	Text            string           `json:"text"`
	TextSkipSpecial string           `json:"text_skip_special"`
}

// readJSONL decodes every line of the shared file rel into a T.
func readJSONL[T any](t *testing.T, rel string) []T {
	t.Helper()
	f, err := os.Open(sharedtest.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var out []T
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s line %d: %v", rel, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRealvocabEndToEnd renders, tokenizes, prefills and greedy-decodes
// llama.cpp's six chat cases through engine.Session.Generate and compares tokens
// and text with what llama.cpp produced.
func TestRealvocabEndToEnd(t *testing.T) {
	const tolerance = 0.04 // F16 max-abs logit tolerance of golden/selfcheck.md
	m, err := engine.Open(sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cases := readJSONL[realvocabCase](t, "golden/realvocab/cases.jsonl")
	conversations := map[string]realvocabCase{}
	for _, c := range readJSONL[realvocabCase](t, "tokenizer/chat_template_cases.jsonl") {
		conversations[c.Name] = c
	}
	if len(cases) != 6 {
		t.Fatalf("%d cases, README says 6", len(cases))
	}
	for _, c := range cases {
		conv, ok := conversations[c.Name]
		if !ok {
			t.Fatalf("case %s has no conversation in chat_template_cases.jsonl", c.Name)
		}
		c.Messages, c.Kwargs, c.Date = conv.Messages, conv.Kwargs, conv.Date
		t.Run(c.Name, func(t *testing.T) {
			date, err := time.Parse("2006-01-02", c.Date)
			if err != nil {
				t.Fatal(err)
			}
			var thinking *bool
			if v, ok := c.Kwargs["enable_thinking"].(bool); ok {
				thinking = &v
			}
			// The same backend under a format dated as the reference was.
			dated, err := engine.New(m.Backend(), family.NewFormat(partsOf(t, m).File(), smollm3.FormatSpec(func() time.Time { return date })), m.Config())
			if err != nil {
				t.Fatal(err)
			}
			defer dated.Close()
			s := dated.NewSession()
			ids, err := dated.Format().Prompt(c.Messages, engine.PromptOptions{Thinking: thinking, ParseSpecial: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, c.PromptIDs) {
				t.Fatalf("prompt ids differ from Hugging Face's (%d vs %d tokens)", len(ids), len(c.PromptIDs))
			}
			// Compare up to the first step llama.cpp itself could flip.
			k := len(c.Generated)
			for i, mg := range c.Margins {
				if mg < tolerance {
					k = i
					break
				}
			}
			r := collect(s, context.Background(), c.Messages, engine.GenerateOptions{MaxTokens: len(c.Generated), Thinking: thinking, ParseSpecial: true, Logprobs: true})
			if r.err != nil {
				t.Fatal(r.err)
			}
			sampled := r.tokens
			if len(sampled) < k || !slices.Equal(sampled[:k], c.Generated[:k]) {
				t.Fatalf("tokens\n got %v\nwant %v (first %d compared)", sampled, c.Generated, k)
			}
			if k < len(c.Generated) {
				same := 0
				for same < len(sampled) && same < len(c.Generated) && sampled[same] == c.Generated[same] {
					same++
				}
				t.Logf("compared the first %d of %d tokens (margin %.3f at step %d); %d agree", k, len(c.Generated), c.Margins[k], k, same)
				if same < len(c.Generated) {
					return // the texts legitimately differ
				}
			}
			tok, _ := partsOf(t, m).Tokenizer()
			if got, _ := tok.Decode(sampled, false); got != c.Text {
				t.Errorf("decoded text %q, llama.cpp/HF %q", got, c.Text)
			}
			if got := r.reasoning + r.content; !slices.Contains(c.Generated, 128002) && got != strings.TrimLeft(c.TextSkipSpecial, "\n") {
				t.Errorf("streamed text %q, want %q", got, c.TextSkipSpecial)
			}
		})
	}
}

// TestSpeculationGreedyIdentical: on real forward passes, greedy output
// with lookup speculation on is token for token the output with it off,
// although the drafts are checked in multi-token passes (other kernels than
// the one-token mat-vec). The prompts repeat a random run of tokens, so the
// lookup finds drafts to check.
func TestSpeculationGreedyIdentical(t *testing.T) {
	for _, name := range []string{"smollm3-tinyq-Q4_K_M.gguf", "smollm3-tinyq-Q8_0.gguf", "smollm3-tinyq-F16.gguf"} {
		t.Run(name, func(t *testing.T) {
			m, err := engine.Open(sharedtest.Path(t, "golden/models/"+name))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			rng := rand.New(rand.NewPCG(7, 7))
			drafted := 0
			for trial := range 6 {
				run := make([]int32, 12)
				for i := range run {
					run[i] = int32(20 + rng.IntN(300)) // ordinary tokens of the 337
				}
				var prompt []int32
				for range 4 {
					prompt = append(prompt, run...)
				}
				var got [2]result
				for i, spec := range []bool{false, true} {
					got[i] = collect(m.NewSession(), context.Background(), nil,
						engine.GenerateOptions{RawPrompt: prompt, MaxTokens: 48, Logprobs: true, Speculation: ptr(spec)})
					if got[i].err != nil {
						t.Fatal(got[i].err)
					}
				}
				off, on := got[0], got[1]
				if !slices.Equal(on.tokens, off.tokens) || len(off.tokens) == 0 {
					t.Fatalf("trial %d: speculation changed greedy output:\n on  %v\n off %v", trial, on.tokens, off.tokens)
				}
				drafted += on.stats.DraftTokens
			}
			if drafted == 0 {
				t.Fatal("no draft was checked in any trial: the test proves nothing")
			}
			t.Logf("%d draft tokens checked", drafted)
		})
	}
}
