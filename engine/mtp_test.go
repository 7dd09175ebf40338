package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// mtpTarget is a fake model with an MTP block (backend.NextNer): a
// fakeBackend with hidden states, whose block is fakeMTP.
type mtpTarget struct {
	fakeHidden
	head *fakeMTP
}

func (f mtpTarget) NextN() (Backend, error) { return f.head, nil }

// fakeMTP is a fake MTP block that predicts the token after its own exactly
// (the model's argmax after its cache's tokens) when the hidden state it is
// given at position p is the model's after the tokens before p, and a token
// the model never writes ('z') otherwise: its drafts are accepted only if
// the engine feeds it the right hidden states at the right positions. Its
// hidden state after position p is the model's after the tokens up to p.
// Its caches can be copied (Snapshotter), as the real block's can, unless
// noSnapshots.
type fakeMTP struct {
	target      func([]int32, []float32)
	dim         int
	ctxLen      int
	noSnapshots bool
	steps       int
	wrong       int // rows given a hidden state that was not the model's (position 0 aside)
}

type fakeMTPCache struct {
	f      *fakeMTP
	stored []int32
}

func (c *fakeMTPCache) Len() int     { return len(c.stored) }
func (c *fakeMTPCache) MaxLen() int  { return c.f.ctxLen }
func (c *fakeMTPCache) Bytes() int64 { return int64(4 * cap(c.stored)) }
func (c *fakeMTPCache) Close() error { return nil }
func (c *fakeMTPCache) Truncate(n int) error {
	if n > len(c.stored) {
		return errors.New("fake MTP: truncate past the end")
	}
	c.stored = c.stored[:n]
	return nil
}

// fakeMTPSnapshots is a fakeMTPCache the prompt cache can copy.
type fakeMTPSnapshots struct{ *fakeMTPCache }

func (c fakeMTPSnapshots) Clone(n int) (Cache, error) {
	if n > len(c.stored) {
		return nil, fmt.Errorf("fake MTP: clone %d of %d", n, len(c.stored))
	}
	return fakeMTPSnapshots{&fakeMTPCache{f: c.f, stored: slices.Clone(c.stored[:n])}}, nil
}

func (c fakeMTPSnapshots) CopyFrom(src Cache, from, to int) error {
	s, ok := src.(fakeMTPSnapshots)
	if !ok || s.f != c.f {
		return errors.New("fake MTP: copy from another backend's cache")
	}
	if from > len(c.stored) || to > len(s.stored) || from > to {
		return fmt.Errorf("fake MTP: copy [%d, %d) of %d into %d", from, to, len(s.stored), len(c.stored))
	}
	c.stored = append(c.stored[:from], s.stored[from:to]...)
	return nil
}

// fakeMTPOf returns the fake block's cache c is.
func fakeMTPOf(c Cache) *fakeMTPCache {
	if s, ok := c.(fakeMTPSnapshots); ok {
		return s.fakeMTPCache
	}
	return c.(*fakeMTPCache)
}

func (f *fakeMTP) Vocab() int     { return fakeVocab }
func (f *fakeMTP) BatchSize() int { return 512 }
func (f *fakeMTP) NewCache() (Cache, error) {
	if f.noSnapshots {
		return &fakeMTPCache{f: f}, nil
	}
	return fakeMTPSnapshots{&fakeMTPCache{f: f}}, nil
}

func (f *fakeMTP) Step(ctx context.Context, batch []Seq) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.steps++
	E := f.dim
	want, row := make([]float32, E), make([]float32, fakeVocab)
	for _, q := range batch {
		c := fakeMTPOf(q.Cache)
		if len(q.Embeds) != len(q.Tokens)*E {
			return fmt.Errorf("fake MTP: %d hidden values for %d tokens", len(q.Embeds), len(q.Tokens))
		}
		rows := len(q.Logits) / fakeVocab
		for i, tok := range q.Tokens {
			fakeHiddenState(c.stored, want)
			right := len(c.stored) > 0 && slices.Equal(q.Embeds[i*E:(i+1)*E], want)
			if !right && len(c.stored) > 0 {
				f.wrong++
			}
			c.stored = append(c.stored, tok)
			if r := i - (len(q.Tokens) - rows); r >= 0 {
				out := q.Logits[r*fakeVocab : (r+1)*fakeVocab]
				clear(out)
				next := int32('z')
				if right {
					f.target(c.stored, row)
					next = int32(slices.Index(row, slices.Max(row)))
				}
				out[next] = 10
			}
			if r := i - (len(q.Tokens) - len(q.Hidden)/E); r >= 0 {
				fakeHiddenState(c.stored, q.Hidden[r*E:(r+1)*E])
			}
		}
	}
	return nil
}

// mtpModel makes a fake model of target's logits with an MTP block.
func mtpModel(t testing.TB, target func([]int32, []float32), opts ...Option) (*Model, *fakeBackend, *fakeMTP) {
	t.Helper()
	ft := &fakeBackend{ctxLen: 4000, logits: target, hidden: 8}
	head := &fakeMTP{target: target, dim: 8, ctxLen: 4000}
	cfg, err := NewConfig(append([]Option{WithMTP()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(mtpTarget{fakeHidden{ft}, head}, fakeFormat{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, ft, head
}

// Drafting with the MTP block: greedy answers are the model's, token for
// token, over many prompts and a second turn; and the block is fed the
// model's hidden states at the right positions (the fake block drafts
// right only then), so every draft is accepted and the model takes fewer
// steps.
func TestMTPGreedyIsExact(t *testing.T) {
	m, ft, head := mtpModel(t, softModel(1, 1), WithDraftLimits(3, 0, 0))
	drafted, accepted, steps, plainSteps := 0, 0, 0, 0
	for i := range 30 {
		msgs := user(fmt.Sprintf("prompt %d %s", i, strings.Repeat("y", i)))
		opts := GenerateOptions{MaxTokens: 30, Drafter: DrafterNone}
		before := ft.calls
		want, _ := sampledTokens(t, m.NewSession(), msgs, opts)
		plainSteps += ft.calls - before
		opts.Drafter = DrafterDefault
		s := m.NewSession()
		before = ft.calls
		got, st := sampledTokens(t, s, msgs, opts)
		steps += ft.calls - before
		if !slices.Equal(got, want) {
			t.Fatalf("prompt %d: with MTP %v, without %v", i, got, want)
		}
		if st.Drafter != DrafterMTP {
			t.Fatalf("drafter %q, want %q", st.Drafter, DrafterMTP)
		}
		drafted, accepted = drafted+st.DraftTokens, accepted+st.AcceptedTokens
		// A second turn of the same session: the block's cache follows.
		msgs2 := append(append(msgs, Message{Role: "assistant", Content: decodeFake(got)}), user("more")...)
		opts.Drafter = DrafterNone
		want2, _ := sampledTokens(t, m.NewSession(), msgs2, opts)
		opts.Drafter = DrafterDefault
		got2, st2 := sampledTokens(t, s, msgs2, opts)
		if !slices.Equal(got2, want2) {
			t.Fatalf("prompt %d, second turn: with MTP %v, without %v", i, got2, want2)
		}
		drafted, accepted = drafted+st2.DraftTokens, accepted+st2.AcceptedTokens
	}
	t.Logf("%d of %d drafted tokens accepted; %d model steps against %d without; %d block steps, %d rows of the wrong hidden state",
		accepted, drafted, steps, plainSteps, head.steps, head.wrong)
	if drafted == 0 || accepted != drafted {
		t.Errorf("%d of %d drafted tokens accepted: the block is not fed the model's hidden states", accepted, drafted)
	}
	if head.wrong > 0 {
		t.Errorf("%d rows fed a hidden state that was not the model's", head.wrong)
	}
	if steps*2 > plainSteps {
		t.Errorf("%d model steps with MTP, %d without", steps, plainSteps)
	}
}

// With a prompt cache the block's cache is shared as the model's: a new
// session whose prompt, or its start, another session computed restores
// the block's positions and the model's hidden state after them, so no row
// is fed a hidden state that is not the model's and every draft is
// accepted. A block whose caches cannot be copied is fed zeros there and
// loses the drafts that start from them. The greedy answers are the
// model's either way.
func TestMTPPromptCache(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shared bool
	}{
		{"shared", true},
		{"not shared", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, head := mtpModel(t, softModel(1, 1), WithDraftLimits(3, 0, 0), WithPromptCache(1<<20))
			head.noSnapshots = !tc.shared
			opts := GenerateOptions{MaxTokens: 30}
			plain := GenerateOptions{MaxTokens: 30, Drafter: DrafterNone}
			drafted, accepted, wrong, prompts := 0, 0, 0, 0
			for i := range 10 {
				msgs := user(fmt.Sprintf("prompt %d %s", i, strings.Repeat("y", i)))
				first, _ := sampledTokens(t, m.NewSession(), msgs, opts) // computes the prompt: the prompt cache keeps it
				prompts++
				msgs2 := append(append(msgs, Message{Role: "assistant", Content: decodeFake(first)}), user("more")...)
				for turn, msgs := range [][]Message{msgs, msgs2} {
					// The whole prompt from the prompt cache, then its
					// start (the first turn's prompt) in a second turn.
					wrongBefore := head.wrong
					got, st := sampledTokens(t, m.NewSession(), msgs, opts)
					wrong += head.wrong - wrongBefore
					if st.SharedCachedTokens == 0 {
						t.Fatalf("prompt %d, turn %d: nothing from the prompt cache: %+v", i, turn+1, st)
					}
					if want, _ := sampledTokens(t, m.NewSession(), msgs, plain); !slices.Equal(got, want) {
						t.Fatalf("prompt %d, turn %d: with MTP %v, without %v", i, turn+1, got, want)
					}
					drafted, accepted = drafted+st.DraftTokens, accepted+st.AcceptedTokens
					prompts += 2
				}
			}
			// The block's lookups are not the model's prompts.
			if ps := m.PromptCache().Stats(); ps.Hits+ps.Misses != prompts {
				t.Errorf("prompt cache: %d hits and %d misses for %d prompts", ps.Hits, ps.Misses, prompts)
			}
			t.Logf("%d of %d drafted tokens accepted, %d rows of the wrong hidden state, %d entries in the prompt cache",
				accepted, drafted, wrong, m.PromptCache().Stats().Entries)
			switch {
			case drafted == 0:
				t.Errorf("nothing drafted")
			case tc.shared && (accepted != drafted || wrong > 0):
				t.Errorf("%d of %d drafted tokens accepted, %d rows fed a hidden state that was not the model's: the block's prefix is not restored", accepted, drafted, wrong)
			case !tc.shared && (accepted == drafted || wrong == 0):
				t.Errorf("%d of %d drafted tokens accepted, %d rows fed a wrong hidden state: a block without snapshots should be fed zeros", accepted, drafted, wrong)
			}
		})
	}
}

// A generation cancelled while it drafts with the MTP block leaves the
// session usable: its next answer is the model's.
func TestMTPCancelled(t *testing.T) {
	m, _, _ := mtpModel(t, softModel(3, 1), WithDraftLimits(4, 0, 0))
	msgs := user("count")
	opts := GenerateOptions{MaxTokens: 40}
	s := m.NewSession()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	for ev, err := range s.Generate(ctx, msgs, opts) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == EventContent {
			if n++; n == 3 {
				cancel()
			}
		}
	}
	cancel()
	plain := opts
	plain.Drafter = DrafterNone
	want, _ := sampledTokens(t, m.NewSession(), msgs, plain)
	got, st := sampledTokens(t, s, msgs, opts)
	if !slices.Equal(got, want) || st.AcceptedTokens == 0 {
		t.Errorf("after a cancel: with MTP %v (%d accepted), without %v", got, st.AcceptedTokens, want)
	}
}

// WithMTP needs a backend with a block; DrafterMTP a model that drafts
// with one.
func TestMTPRefusals(t *testing.T) {
	cfg, _ := NewConfig(WithMTP())
	if _, err := New(&fakeBackend{ctxLen: 64}, fakeFormat{}, cfg); err == nil || !strings.Contains(err.Error(), "multi-token-prediction") {
		t.Errorf("WithMTP on a backend without a block: %v", err)
	}
	r := collect(testSession(t, &fakeBackend{ctxLen: 64, answer: fixed("ok")}), context.Background(), user("hi"), GenerateOptions{Drafter: DrafterMTP})
	if r.err == nil || !strings.Contains(r.err.Error(), "no MTP block") {
		t.Errorf("DrafterMTP without WithMTP: %v", r.err)
	}
}
