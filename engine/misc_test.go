package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/grammar"
)

func TestToolCallEvents(t *testing.T) {
	tools := []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f"}}`)}
	answer := `Let me see.<call>{"name": "a", "arguments": {"x": 1}}</call><call>{"name": "b"}</call><call>{broken</call> ok`
	for _, tt := range []struct {
		opts      GenerateOptions
		kinds     string
		content   string
		stop      string
		wantCalls int
	}{
		{GenerateOptions{Tools: tools}, "content,tool call,tool call,tool error,content,done", "Let me see. ok", StopEndOfTurn, 2},
		{GenerateOptions{Tools: tools, EndAfterToolCall: true}, "content,tool call,done", "Let me see.", StopToolCalls, 1},
		{GenerateOptions{}, "content,done", "Let me see.{\"name\": \"a\", \"arguments\": {\"x\": 1}}{\"name\": \"b\"}{broken ok", StopEndOfTurn, 0},
	} {
		f := &fakeBackend{ctxLen: 1000, answer: fixed(answer)}
		r := collect(testSession(t, f), context.Background(), user("go"), tt.opts)
		if r.err != nil {
			t.Fatal(r.err)
		}
		var kinds []string
		var calls []*ToolCall
		for _, ev := range r.events {
			if k := ev.Kind.String(); len(kinds) == 0 || kinds[len(kinds)-1] != k || ev.Kind == EventToolCall {
				kinds = append(kinds, k)
			}
			if ev.Kind == EventToolCall {
				calls = append(calls, ev.ToolCall)
			}
			if ev.Kind == EventToolError && (ev.Err == nil || !strings.Contains(ev.Text, "{broken")) {
				t.Errorf("tool error event %+v", ev)
			}
		}
		if got := strings.Join(kinds, ","); got != tt.kinds || r.content != tt.content || r.stats.StopReason != tt.stop || len(calls) != tt.wantCalls {
			t.Errorf("%+v: kinds %s content %q stop %s calls %d; want %s %q %s %d", tt.opts, got, r.content, r.stats.StopReason, len(calls), tt.kinds, tt.content, tt.stop, tt.wantCalls)
			continue
		}
		for i, c := range calls {
			if want := "call_" + string(rune('0'+i)); c.ID != want {
				t.Errorf("call %d id %q, want %q", i, c.ID, want)
			}
		}
		if len(calls) > 0 && (calls[0].Name != "a" || string(calls[0].Arguments) != `{"x": 1}`) {
			t.Errorf("first call %+v", calls[0])
		}
	}
}

func TestLogprobs(t *testing.T) {
	f := &fakeBackend{ctxLen: 1000, answer: fixed("héllo")}
	r := collect(testSession(t, f), context.Background(), user("hi"), GenerateOptions{Logprobs: true, TopLogprobs: 3})
	if r.err != nil {
		t.Fatal(r.err)
	}
	var lps []TokenLogprob
	for _, ev := range r.events {
		lps = append(lps, ev.Logprobs...)
	}
	if len(lps) != r.stats.GeneratedTokens {
		t.Fatalf("%d logprobs for %d tokens", len(lps), r.stats.GeneratedTokens)
	}
	// The fake gives the chosen token logit 10 and every other 0.
	want := 10 - math.Log(math.Exp(10)+fakeVocab-1)
	for i, lp := range lps {
		if math.Abs(float64(lp.Logprob)-want) > 1e-5 || len(lp.Top) != 3 || lp.Top[0].Token != lp.Token {
			t.Fatalf("token %d: %+v (want logprob %g, the token first of 3)", i, lp, want)
		}
		if lp.Top[1].Logprob > lp.Top[0].Logprob || lp.Top[2].Logprob > lp.Top[1].Logprob {
			t.Fatalf("token %d: top not sorted: %+v", i, lp.Top)
		}
	}
	if lps[0].Text != "h" || lps[1].Text != "\xc3" {
		t.Fatalf("token texts %q %q", lps[0].Text, lps[1].Text)
	}
}

// fakeGrammarVocab is the fake model's vocabulary for package grammar.
func grammarConstraint(t *testing.T, m *Model, src string) Constraint {
	t.Helper()
	c, err := m.NewConstraint(grammar.MustParse(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGenerateWithConstraint(t *testing.T) {
	src := `root ::= "{\"a\":" [0-9]{1,3} "}"`
	tests := []struct {
		name, answer string
		opts         GenerateOptions
		want, reason string
	}{
		// The model's own answer fits: the constraint changes nothing.
		{"answer fits", `{"a":42}`, GenerateOptions{}, `{"a":42}`, StopEndOfTurn},
		// The model wants to write something else: greedy decoding picks
		// the best allowed token (here the lowest id, as the fake's other
		// logits are equal), and the turn can only end once the value is
		// complete.
		{"answer does not fit", "hello", GenerateOptions{}, `{"a":000}`, StopEndOfTurn},
		{"thinking is turned off", "<think>\nhm\n</think>\n{\"a\":7}", GenerateOptions{Thinking: ptr(true)}, `{"a":000}`, StopEndOfTurn},
		{"speculation is off under a constraint", `{"a":42}`, GenerateOptions{Speculation: ptr(true)}, `{"a":42}`, StopEndOfTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeBackend{ctxLen: 256, answer: fixed(tt.answer)}
			m := testModel(t, f)
			tt.opts.Constraint = grammarConstraint(t, m, src)
			r := collect(m.NewSession(), context.Background(), user("json please"), tt.opts)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.content != tt.want || r.reasoning != "" || r.stats.StopReason != tt.reason || r.stats.DraftTokens != 0 {
				t.Fatalf("content %q reasoning %q stats %+v; want %q, stop %q", r.content, r.reasoning, r.stats, tt.want, tt.reason)
			}
		})
	}
}

// badConstraint allows nothing, or rejects what was picked.
type badConstraint struct{ allowNone bool }

func (b badConstraint) Allow(mask []bool) {
	for i := range mask {
		mask[i] = !b.allowNone
	}
}
func (b badConstraint) Accept(id int32) error { return errors.New("no thanks") }
func (b badConstraint) Done() bool            { return false }

func TestConstraintErrors(t *testing.T) {
	for _, tt := range []struct {
		c    Constraint
		want string
	}{
		{badConstraint{allowNone: true}, "the constraint allows no token"},
		{badConstraint{}, "the constraint rejected sampled token 104: no thanks"},
	} {
		f := &fakeBackend{ctxLen: 256, answer: fixed("hi")}
		s := testSession(t, f)
		r := collect(s, context.Background(), user("x"), GenerateOptions{Constraint: tt.c})
		if r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
			t.Fatalf("error %v, want %q", r.err, tt.want)
		}
		if r := collect(s, context.Background(), user("x"), GenerateOptions{}); r.err != nil || r.content != "hi" {
			t.Fatalf("after the error: %q %v", r.content, r.err)
		}
	}
}

// limitRecorder records the budgets Generate passes to a Limiter.
type limitRecorder struct {
	badConstraint
	limits []int
}

func (l *limitRecorder) Limit(n int)           { l.limits = append(l.limits, n) }
func (l *limitRecorder) Accept(id int32) error { return nil }

func TestLimiterBudget(t *testing.T) {
	f := &fakeBackend{ctxLen: 256, answer: fixed("abcdefgh")}
	l := &limitRecorder{}
	r := collect(testSession(t, f), context.Background(), user("x"), GenerateOptions{Constraint: l, MaxTokens: 5})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := []int{5, 4, 3, 2, 1}; !slices.Equal(l.limits, want) {
		t.Fatalf("budgets %v, want %v", l.limits, want)
	}
}

func TestPromptCache(t *testing.T) {
	f := &fakeBackend{ctxLen: 4000, answer: historyAnswer}
	m := testModel(t, f, WithPromptCache(1<<20))
	sys := Message{Role: "system", Content: strings.Repeat("You are kind. ", 20)}
	r1 := collect(m.NewSession(), context.Background(), []Message{sys, {Role: "user", Content: "one"}}, GenerateOptions{})
	r2 := collect(m.NewSession(), context.Background(), []Message{sys, {Role: "user", Content: "two"}}, GenerateOptions{})
	if r1.err != nil || r2.err != nil {
		t.Fatal(r1.err, r2.err)
	}
	if r2.stats.SharedCachedTokens < 280 || r2.stats.CachedTokens != r2.stats.SharedCachedTokens {
		t.Fatalf("second conversation: %+v, want the system prompt from the prompt cache", r2.stats)
	}
	alone := collect(testSession(t, &fakeBackend{ctxLen: 4000, answer: historyAnswer}), context.Background(), []Message{sys, {Role: "user", Content: "two"}}, GenerateOptions{})
	if alone.content != r2.content {
		t.Fatalf("answer with a shared prefix %q, alone %q", r2.content, alone.content)
	}
	st := m.PromptCache().Stats()
	if st.Hits != 1 || st.Entries == 0 || st.Bytes > st.MaxBytes {
		t.Fatalf("prompt cache stats %+v", st)
	}
	// Eviction closes snapshots: only the sessions' caches and the
	// snapshots kept are open.
	m2 := testModel(t, &fakeBackend{ctxLen: 4000, answer: historyAnswer}, WithPromptCache(5000))
	for _, q := range []string{"a", "b", "c", "d"} {
		collect(m2.NewSession(), context.Background(), []Message{{Role: "user", Content: strings.Repeat(q, 300)}}, GenerateOptions{})
	}
	if st := m2.PromptCache().Stats(); st.Entries != 1 || st.Bytes > st.MaxBytes {
		t.Fatalf("after evictions: %+v", st)
	}
}

func TestShiftContext(t *testing.T) {
	f := &fakeBackend{ctxLen: 160, answer: fixed("ok")}
	m := testModel(t, f)
	s := m.NewSession()
	msgs := []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: strings.Repeat("a", 40)}}
	r := collect(s, context.Background(), msgs, GenerateOptions{Thinking: ptr(false)})
	msgs = append(msgs, Message{Role: "assistant", Content: r.content}, Message{Role: "user", Content: strings.Repeat("b", 30)})
	if r = collect(s, context.Background(), msgs, GenerateOptions{Thinking: ptr(false)}); r.err != nil {
		t.Fatal(r.err)
	}
	msgs = append(msgs, Message{Role: "assistant", Content: r.content}, Message{Role: "user", Content: strings.Repeat("c", 30)})
	r = collect(s, context.Background(), msgs, GenerateOptions{Thinking: ptr(false), DropOldest: true, ShiftContext: true})
	if r.err != nil || r.stats.DroppedMessages == 0 || r.stats.ShiftedTokens == 0 {
		t.Fatalf("shift: %v %+v", r.err, r.stats)
	}
	// The kept turns came from the cache: more than the system prompt.
	if r.stats.CachedTokens < 60 {
		t.Fatalf("after the shift only %d tokens were reused: %+v", r.stats.CachedTokens, r.stats)
	}
}
