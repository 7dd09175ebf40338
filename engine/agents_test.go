package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/smolgo/smolgo/grammar"
)

// The engine's part of issue 30 ("Agents work out of the box").

// TestLogitBias: a bias of -100 bans a token, +100 all but forces one;
// ids outside the vocabulary are an error.
func TestLogitBias(t *testing.T) {
	s := testSession(t, &fakeBackend{ctxLen: 256, answer: fixed("ab")})
	if r := collect(s, context.Background(), user("x"), GenerateOptions{MaxTokens: 3}); r.content != "ab" {
		t.Fatalf("without a bias: %q", r.content)
	}
	r := collect(s, context.Background(), user("x"), GenerateOptions{MaxTokens: 3, LogitBias: map[int32]float32{'a': -100, 'z': 100}})
	if r.err != nil || r.content != "zzz" {
		t.Fatalf("with a bias: %q, %v", r.content, r.err)
	}
	r = collect(s, context.Background(), user("x"), GenerateOptions{MaxTokens: 3, LogitBias: map[int32]float32{fakeVocab: 1}})
	if r.err == nil || !strings.Contains(r.err.Error(), "outside the model's vocabulary") {
		t.Fatalf("a bias on a token outside the vocabulary: %v", r.err)
	}
}

// TestPromptReady: the callback says how long the prompt is and how much
// of it was cached, before the first token.
func TestPromptReady(t *testing.T) {
	s := testSession(t, &fakeBackend{ctxLen: 256, answer: fixed("ok")})
	var got [][2]int
	var events atomic.Int32
	opts := GenerateOptions{PromptReady: func(p, c int) {
		if events.Load() != 0 {
			t.Error("PromptReady after an event")
		}
		got = append(got, [2]int{p, c})
	}}
	for ev := range s.Generate(context.Background(), user("hello"), opts) {
		if ev.Kind != EventDone {
			events.Add(1)
		}
	}
	events.Store(0)
	r := collect(s, context.Background(), user("hello"), opts)
	if len(got) != 2 || got[0][0] == 0 || got[0][1] != 0 || got[1][0] != got[0][0] || got[1][1] != got[0][0] || r.stats.PromptTokens != got[1][0] {
		t.Fatalf("PromptReady got %v, stats %+v", got, r.stats)
	}
}

// TestRequireComplete: a constrained answer that cannot be whole within
// the budget is not started; one that can completes.
func TestRequireComplete(t *testing.T) {
	g := grammar.MustParse(`root ::= "[call]" [a-z]{0,5} "[/call]"`)
	m := testModel(t, &fakeBackend{ctxLen: 256, answer: fixed("[call]abc[/call]")})
	for _, tc := range []struct {
		max  int
		want string
		stop string
	}{
		{13, "", StopLength},                 // the tags alone are 13 byte tokens, and the end of turn one more
		{14, "[call][/call]", StopEndOfTurn}, // the shortest answer, steered there by the budget
		{30, "[call]abc[/call]", StopEndOfTurn},
	} {
		c, err := m.NewConstraint(g)
		if err != nil {
			t.Fatal(err)
		}
		r := collect(m.NewSession(), context.Background(), user("x"), GenerateOptions{MaxTokens: tc.max, Constraint: c, RequireComplete: true})
		if r.err != nil || r.content != tc.want || r.stats.StopReason != tc.stop {
			t.Errorf("max %d: %q, stop %s, %v; want %q, %s", tc.max, r.content, r.stats.StopReason, r.err, tc.want, tc.stop)
		}
	}
}

// faultBackend panics in Step as a read of a truncated mapped file does
// (with SetPanicOnFault), once.
type faultBackend struct {
	*fakeBackend
	fault atomic.Bool
}

func (f *faultBackend) Step(ctx context.Context, batch []Seq) error {
	if f.fault.CompareAndSwap(true, false) {
		var p *[1 << 20]byte
		_ = p[0] // a nil dereference stands in for SIGBUS: both are runtime faults
	}
	return f.fakeBackend.Step(ctx, batch)
}

// TestStepFaultIsAnError: a fault in a forward step fails that step's
// generations with ErrFault, and the model goes on serving.
func TestStepFaultIsAnError(t *testing.T) {
	f := &faultBackend{fakeBackend: &fakeBackend{ctxLen: 256, answer: fixed("ok")}}
	f.fault.Store(true)
	m, err := New(f, fakeFormat{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := collect(m.NewSession(), context.Background(), user("x"), GenerateOptions{})
	if !errors.Is(r.err, ErrFault) || !strings.Contains(r.err.Error(), "mv") {
		t.Fatalf("a faulting step: %v", r.err)
	}
	if r := collect(m.NewSession(), context.Background(), user("x"), GenerateOptions{}); r.err != nil || r.content != "ok" {
		t.Fatalf("after the fault: %q, %v", r.content, r.err)
	}
}

// TestPromptTooLongError: the error of a prompt that does not fit has the
// numbers, and is still ErrContextFull.
func TestPromptTooLongError(t *testing.T) {
	s := testSession(t, &fakeBackend{ctxLen: 32, answer: fixed("ok")})
	r := collect(s, context.Background(), user(strings.Repeat("x", 100)), GenerateOptions{})
	var pe *PromptTooLongError
	if !errors.As(r.err, &pe) || !errors.Is(r.err, ErrContextFull) || pe.Context != 32 || pe.Tokens < 100 {
		t.Fatalf("%v", r.err)
	}
}
