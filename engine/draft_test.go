package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smolgo/smolgo/sample"
)

// softModel is a fake model with a distribution: after hist, the tokens
// 'a' to 'e' get logits in [0, 4) from a hash of the last three tokens and
// seed, scaled by scale (a negative scale reverses the preferences),
// <|im_end|> a small one, every other token -20.
func softModel(seed uint32, scale float32) func(hist []int32, dst []float32) {
	return func(hist []int32, dst []float32) {
		for i := range dst {
			dst[i] = -20
		}
		h := historyHash(hist[max(0, len(hist)-3):]) ^ seed*0x9e3779b9
		for j, t := range "abcde" {
			dst[t] = scale * float32((h>>(4*j))&15) / 4
		}
		dst[fakeImEnd] = -1.5
	}
}

// mixModel is target's logits plus amount times noise's: a draft that
// agrees with its target most of the time.
func mixModel(target, noise func([]int32, []float32), amount float32) func([]int32, []float32) {
	return func(hist []int32, dst []float32) {
		target(hist, dst)
		n := make([]float32, len(dst))
		noise(hist, n)
		for i := range dst {
			dst[i] += amount * n[i]
		}
	}
}

// draftPair makes a model of target's logits with a draft model of draft's.
func draftPair(t testing.TB, target, draft func([]int32, []float32), opts ...Option) (*Model, *fakeBackend, *fakeBackend) {
	t.Helper()
	fd := &fakeBackend{ctxLen: 4000, logits: draft}
	d := testModel(t, fd)
	ft := &fakeBackend{ctxLen: 4000, logits: target}
	m := newFakeModel(ft, append([]Option{WithDraft(d)}, opts...)...)
	t.Cleanup(func() { m.Close() }) // before the draft's (cleanups run last first)
	return m, ft, fd
}

func sampledTokens(t testing.TB, s *Session, msgs []Message, opts GenerateOptions) ([]int32, *Stats) {
	t.Helper()
	r := collect(s, context.Background(), msgs, opts)
	if r.err != nil {
		t.Fatal(r.err)
	}
	return slices.Clone(s.sampled), r.stats
}

// Greedy decoding with a draft model gives the tokens of decoding without
// one, token for token, over many prompts, whether the draft is often
// right, always right (the model as its own draft), or always wrong; and
// the drafts are checked: fewer steps of the model when the draft is right.
func TestDraftGreedyIsExact(t *testing.T) {
	target := softModel(1, 1)
	for _, tc := range []struct {
		name  string
		draft func([]int32, []float32)
		check func(t *testing.T, drafted, accepted int)
	}{
		{"often right", mixModel(target, softModel(2, 1), 0.35), func(t *testing.T, d, a int) {
			if a == 0 || a == d {
				t.Errorf("%d of %d drafted tokens accepted: want some but not all", a, d)
			}
		}},
		{"itself", target, func(t *testing.T, d, a int) {
			if a != d || d == 0 {
				t.Errorf("the model as its own draft: %d of %d drafted tokens accepted, want all", a, d)
			}
		}},
		{"reversed", softModel(1, -1), func(t *testing.T, d, a int) {
			if a*5 > d {
				t.Errorf("a draft of reversed preferences: %d of %d accepted", a, d)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ft, _ := draftPair(t, target, tc.draft, WithDraftLimits(4, 0, 0))
			drafted, accepted, steps, plainSteps := 0, 0, 0, 0
			for i := range 40 {
				msgs := user(fmt.Sprintf("prompt %d %s", i, strings.Repeat("y", i)))
				opts := GenerateOptions{MaxTokens: 30, Drafter: DrafterNone}
				before := ft.calls
				want, _ := sampledTokens(t, m.NewSession(), msgs, opts)
				plainSteps += ft.calls - before
				opts.Drafter = DrafterDefault
				before = ft.calls
				got, st := sampledTokens(t, m.NewSession(), msgs, opts)
				steps += ft.calls - before
				if !slices.Equal(got, want) {
					t.Fatalf("prompt %d: with the draft %v, without %v", i, got, want)
				}
				if st.Drafter != DrafterModel {
					t.Fatalf("drafter %q, want %q", st.Drafter, DrafterModel)
				}
				drafted += st.DraftTokens
				accepted += st.AcceptedTokens
			}
			tc.check(t, drafted, accepted)
			if accepted > drafted/2 && steps*3 > plainSteps*2 {
				t.Errorf("%d of %d drafted tokens accepted, yet %d steps of the model against %d without", accepted, drafted, steps, plainSteps)
			}
		})
	}
}

// noRepeat is a constraint that forbids a token right after itself, and
// can go back (Marker).
type noRepeat struct{ last int32 }

func (c *noRepeat) Allow(mask []bool) {
	for i := range mask {
		mask[i] = int32(i) != c.last
	}
}

func (c *noRepeat) Accept(id int32) error {
	if id == c.last {
		return fmt.Errorf("token %d twice", id)
	}
	c.last = id
	return nil
}

func (c *noRepeat) Done() bool { return true }

func (c *noRepeat) Mark() func() {
	last := c.last
	return func() { c.last = last }
}

// pathProbs returns the exact probability of every answer of at most n
// tokens after prompt under logits, as the engine samples: the logit bias,
// then the constraint noRepeat, then cfg's chain with the prompt's last
// tokens and the answer's in the penalty window; an answer ends at
// <|im_end|>.
func pathProbs(logits func([]int32, []float32), prompt []int32, n int, cfg sample.Config, bias map[int32]float32) map[string]float64 {
	out := map[string]float64{}
	var walk func(path []int32, p float64)
	walk = func(path []int32, p float64) {
		if len(path) == n || (len(path) > 0 && path[len(path)-1] == fakeImEnd) {
			out[fmt.Sprint(path)] += p
			return
		}
		row, probs := make([]float32, fakeVocab), make([]float32, fakeVocab)
		s := sample.New(cfg)
		w := s.Config().PenaltyWindow
		for _, t := range prompt[max(0, len(prompt)-w):] {
			s.Accept(t)
		}
		for _, t := range path {
			s.Accept(t)
		}
		logits(append(slices.Clone(prompt), path...), row)
		for id, b := range bias {
			row[id] += b
		}
		if len(path) > 0 {
			row[path[len(path)-1]] = float32(math.Inf(-1))
		}
		s.Probs(row, probs)
		for id, q := range probs {
			if q > 0 {
				walk(append(slices.Clone(path), int32(id)), p*float64(q))
			}
		}
	}
	walk(nil, 1)
	return out
}

// chiSquareCritical is the 99.9% quantile of chi-square with df degrees of
// freedom (Wilson and Hilferty's approximation, within 1% from df 3 on).
func chiSquareCritical(df int) float64 {
	const z = 3.0902 // the standard normal's 99.9% quantile
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

// goodnessOfFit is Pearson's chi-square of counts (of n runs) against the
// probabilities want, cells expected fewer than 5 times pooled into one;
// it returns the statistic and its 99.9% critical value.
func goodnessOfFit(counts map[string]int, want map[string]float64, n int) (chi2, crit float64) {
	var poolE, poolO float64
	df := -1
	for k, p := range want {
		e, o := p*float64(n), float64(counts[k])
		if e < 5 {
			poolE, poolO = poolE+e, poolO+o
			continue
		}
		chi2 += (o - e) * (o - e) / e
		df++
	}
	for k, o := range counts {
		if _, ok := want[k]; !ok {
			poolO += float64(o) // an answer of probability 0: counts against
		}
	}
	if poolE > 0 || poolO > 0 {
		e := max(poolE, 1e-9)
		chi2 += (poolO - e) * (poolO - e) / e
		df++
	}
	return chi2, chiSquareCritical(max(df, 1))
}

// Sampled decoding with a draft model follows the model's distribution
// exactly: over many seeded runs, the frequencies of whole answers (four
// tokens, top-k 3, temperature 0.9, a repeat penalty, a logit bias and a
// constraint, all on both sides) pass a chi-square test against the exact
// probabilities, as decoding without a draft does; with a draft whose
// preferences are reversed, so that most drafts are rejected and the
// residual distribution is drawn from often. The same test fails when the
// acceptance rule is wrong: always accepting the draft, or accepting with
// q/p instead of p/q.
func TestDraftSampledFollowsTheModel(t *testing.T) {
	target := softModel(5, 1)
	cfg := sample.Config{Temperature: 0.9, TopK: 3, RepeatPenalty: 1.4}
	bias := map[int32]float32{'b': 0.8}
	prompt := fakeEncode("tell me")
	const tokens = 4
	want := pathProbs(target, prompt, tokens, cfg, bias)
	runs := 10000
	if testing.Short() {
		runs = 3000
	}
	frequencies := func(m *Model, drafter Drafter) (map[string]int, *Stats) {
		s := m.NewSession()
		counts := map[string]int{}
		total := &Stats{}
		for i := range runs {
			c := cfg
			c.Seed = uint64(i + 1)
			got, st := sampledTokens(t, s, nil, GenerateOptions{RawPrompt: prompt, MaxTokens: tokens, Sampler: c,
				LogitBias: bias, Constraint: &noRepeat{last: -1}, Drafter: drafter})
			counts[fmt.Sprint(got)]++
			total.DraftTokens += st.DraftTokens
			total.AcceptedTokens += st.AcceptedTokens
		}
		return counts, total
	}
	for _, tc := range []struct {
		name    string
		draft   func([]int32, []float32)
		rule    func(p, q, u float64) bool
		drafter Drafter
		fits    bool
	}{
		{"no draft", softModel(6, -1), nil, DrafterNone, true},
		{"a reversed draft", softModel(5, -1), nil, DrafterModel, true},
		{"a close draft", mixModel(target, softModel(7, 1), 0.4), nil, DrafterModel, true},
		{"always accepting", softModel(5, -1), func(p, q, u float64) bool { return true }, DrafterModel, false},
		{"accepting with q/p", softModel(5, -1), func(p, q, u float64) bool { return u*p < q }, DrafterModel, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := draftPair(t, target, tc.draft, WithDraftLimits(3, 0, 0))
			m.acceptRule = tc.rule
			counts, st := frequencies(m, tc.drafter)
			chi2, crit := goodnessOfFit(counts, want, runs)
			t.Logf("chi-square %.1f (critical %.1f), %d of %d drafted tokens accepted", chi2, crit, st.AcceptedTokens, st.DraftTokens)
			if tc.fits && tc.drafter == DrafterModel && (st.DraftTokens == 0 || st.AcceptedTokens == st.DraftTokens) {
				t.Errorf("%d of %d drafted tokens accepted: the test needs drafts and rejections", st.AcceptedTokens, st.DraftTokens)
			}
			if fits := chi2 <= crit; fits != tc.fits {
				t.Errorf("chi-square %.1f against a critical %.1f: fits %v, want %v", chi2, crit, fits, tc.fits)
			}
		})
	}
}

// A draft model drafts under a grammar constraint (it goes back after each
// draft), stop strings end the answer where they do without a draft, and
// log-probabilities are the model's.
func TestDraftConstraintStopLogprobs(t *testing.T) {
	target := softModel(9, 1)
	m, _, _ := draftPair(t, target, mixModel(target, softModel(10, 1), 0.3))
	run := func(opts GenerateOptions) result {
		r := collect(m.NewSession(), context.Background(), user("hi"), opts)
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	}
	for _, opts := range []GenerateOptions{
		{MaxTokens: 40, Logprobs: true, TopLogprobs: 2},
		{MaxTokens: 40, Stop: []string{"ca", "eb"}},
		{MaxTokens: 40, Sampler: sample.Config{Temperature: 1, Seed: 5}, Logprobs: true},
	} {
		opts.Constraint = &noRepeat{last: -1}
		plain := opts
		plain.Drafter = DrafterNone
		plain.Constraint = &noRepeat{last: -1}
		with, without := run(opts), run(plain)
		if with.stats.DraftTokens == 0 {
			t.Errorf("%+v: no drafts under the constraint", opts)
		}
		var lp []TokenLogprob
		for _, ev := range with.events {
			lp = append(lp, ev.Logprobs...)
		}
		for i := 1; i < len(with.content); i++ {
			if with.content[i] == with.content[i-1] {
				t.Fatalf("%+v: the constraint did not hold: %q", opts, with.content)
			}
		}
		if opts.Sampler.Temperature > 0 {
			// Another random path, but every log-probability is the
			// model's at the token it took.
			for _, l := range lp {
				if math.IsNaN(float64(l.Logprob)) || l.Logprob > 0 {
					t.Fatalf("log-probability %v", l)
				}
			}
			if len(lp) != with.stats.GeneratedTokens {
				t.Errorf("%d log-probabilities for %d tokens", len(lp), with.stats.GeneratedTokens)
			}
			continue
		}
		var plainLP []TokenLogprob
		for _, ev := range without.events {
			plainLP = append(plainLP, ev.Logprobs...)
		}
		if with.content != without.content || fmt.Sprint(lp) != fmt.Sprint(plainLP) || with.stats.StopString != without.stats.StopString {
			t.Errorf("%+v: with the draft %q %v (stop %q), without %q %v (stop %q)", opts, with.content, lp, with.stats.StopString,
				without.content, plainLP, without.stats.StopString)
		}
	}
}

// Sessions generating at once have their drafts checked in the same steps
// of the model (continuous batching), and their answers are their own.
func TestDraftBatched(t *testing.T) {
	target := softModel(11, 1)
	m, ft, _ := draftPair(t, target, target, WithMaxSequences(2))
	ft.delay = 2 * time.Millisecond
	convs := [][]Message{user("first question"), user("second one")}
	alone := make([][]int32, 2)
	for i, msgs := range convs {
		alone[i], _ = sampledTokens(t, m.NewSession(), msgs, GenerateOptions{MaxTokens: 40, Drafter: DrafterNone})
	}
	ft.mu.Lock()
	ft.steps = nil
	ft.mu.Unlock()
	var wg sync.WaitGroup
	got := make([][]int32, 2)
	for i, msgs := range convs {
		wg.Go(func() { got[i], _ = sampledTokens(t, m.NewSession(), msgs, GenerateOptions{MaxTokens: 40}) })
	}
	wg.Wait()
	for i := range convs {
		if !slices.Equal(got[i], alone[i]) {
			t.Errorf("conversation %d: together %v, alone %v", i, got[i], alone[i])
		}
	}
	both := 0
	for _, st := range ft.steps {
		if len(st) == 2 && st[0].rows > 1 && st[1].rows > 1 {
			both++
		}
	}
	if both == 0 {
		t.Errorf("no step checked both sequences' drafts: %v", ft.steps)
	}
}

// A generation cancelled while the draft model computes ends with
// StopCancelled, and the session then answers as a fresh one does.
func TestDraftCancelled(t *testing.T) {
	target := softModel(13, 1)
	m, _, fd := draftPair(t, target, target)
	fd.delay = 20 * time.Millisecond
	msgs := user("question")
	want, _ := sampledTokens(t, m.NewSession(), msgs, GenerateOptions{MaxTokens: 20, Drafter: DrafterNone})
	s := m.NewSession()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	r := collect(s, ctx, msgs, GenerateOptions{MaxTokens: 20})
	cancel()
	if r.err != nil || r.stats.StopReason != StopCancelled {
		t.Fatalf("cancelled mid-draft: %v, %+v", r.err, r.stats)
	}
	fd.delay = 0
	for range 2 {
		got, st := sampledTokens(t, s, msgs, GenerateOptions{MaxTokens: 20})
		if !slices.Equal(got, want) || st.DraftTokens == 0 {
			t.Fatalf("after the cancel: %v (%d drafted), want %v", got, st.DraftTokens, want)
		}
	}
}

// The draft's snapshots share the model's prompt cache: a second session
// with the same long prompt copies the draft's prefix too instead of
// computing it, and the draft's entries never serve the model.
func TestDraftSharesThePromptCache(t *testing.T) {
	target := softModel(15, 1)
	m, ft, fd := draftPair(t, target, target, WithPromptCache(1<<20))
	msgs := []Message{{Role: "system", Content: strings.Repeat("a long shared system prompt. ", 10)}, {Role: "user", Content: "q"}}
	first, _ := sampledTokens(t, m.NewSession(), msgs, GenerateOptions{MaxTokens: 10})
	tokensOf := func(f *fakeBackend) int {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, st := range f.steps {
			for _, q := range st {
				n += q.tokens
			}
		}
		return n
	}
	t0, d0 := tokensOf(ft), tokensOf(fd)
	second, st := sampledTokens(t, m.NewSession(), msgs, GenerateOptions{MaxTokens: 10})
	t1, d1 := tokensOf(ft)-t0, tokensOf(fd)-d0
	if !slices.Equal(first, second) {
		t.Fatalf("second session %v, first %v", second, first)
	}
	if st.SharedCachedTokens == 0 || d1 > 30 {
		t.Errorf("second session: %d shared tokens; the model computed %d tokens, the draft %d (the prompt has %d)", st.SharedCachedTokens, t1, d1, st.PromptTokens)
	}
	pcs := m.PromptCache().Stats()
	if pcs.Entries != 2 {
		t.Errorf("prompt cache: %d entries, want the model's and the draft's", pcs.Entries)
	}
}

// A draft whose vocabulary differs is refused with an error that says
// what differs; a request for a draft model on a model without one is an
// error too.
func TestDraftVocabularyChecked(t *testing.T) {
	d := testModel(t, &fakeBackend{ctxLen: 100, answer: fixed("x")})
	for _, tc := range []struct {
		name   string
		format Format
		want   string
	}{
		{"token text", otherFormat{swap: true}, "token 97 is"},
		{"end of turn", otherFormat{eot: fakeThink}, "ends a turn"},
		{"end of generation", otherFormat{eog: []int32{fakeImEnd, fakeThinkEnd}}, "end-of-generation tokens"},
		{"size", otherFormat{extra: 200}, "more than 128 apart"},
		{"probe", otherFormat{split: true}, "tokenize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := NewConfig(WithDraft(d))
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(&fakeBackend{ctxLen: 100, answer: fixed("x")}, tc.format, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	m := testModel(t, &fakeBackend{ctxLen: 100, answer: fixed("x")})
	r := collect(m.NewSession(), context.Background(), user("hi"), GenerateOptions{Drafter: DrafterModel})
	if r.err == nil || !strings.Contains(r.err.Error(), "no draft model") {
		t.Errorf("a draft asked of a model without one: %v", r.err)
	}
	r = collect(m.NewSession(), context.Background(), user("hi"), GenerateOptions{Drafter: "magic"})
	if r.err == nil || !strings.Contains(r.err.Error(), "Drafter") {
		t.Errorf("an unknown drafter: %v", r.err)
	}
}

// otherFormat is fakeFormat with its vocabulary changed as a test asks.
type otherFormat struct {
	fakeFormat
	swap  bool    // tokens 'a' and 'b' trade texts
	eot   int32   // another end-of-turn token besides <|im_end|>
	eog   []int32 // other end-of-generation tokens
	extra int     // more tokens
	split bool    // tokenizes "Hello" as two tokens... of one id each
}

func (o otherFormat) EndOfTurn(id int32) bool { return id == fakeImEnd || (o.eot != 0 && id == o.eot) }

func (o otherFormat) Tokenizer() (Tokenizer, error) { return otherTokenizer{o}, nil }

type otherTokenizer struct{ o otherFormat }

func (t otherTokenizer) Encode(text string, special bool) []int32 {
	ids := fakeEncode(text)
	if t.o.split && len(ids) > 2 {
		ids[1], ids[2] = ids[2], ids[1]
	}
	return ids
}
func (otherTokenizer) Decode(ids []int32, skip bool) (string, error) { return decodeFake(ids), nil }
func (t otherTokenizer) TokenBytes(id int32) []byte {
	if t.o.swap && (id == 'a' || id == 'b') {
		id = 'a' + 'b' - id
	}
	return []byte(decodeFake([]int32{id}))
}
func (otherTokenizer) Normal(id int32) bool { return id >= 0 && id < 256 }
func (t otherTokenizer) Len() int           { return fakeVocab + t.o.extra }
func (t otherTokenizer) EndOfGeneration() []int32 {
	if t.o.eog != nil {
		return t.o.eog
	}
	return []int32{fakeImEnd}
}
