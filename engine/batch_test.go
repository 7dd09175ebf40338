package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smolgo/smolgo/sample"
)

// runAll runs one generation per conversation concurrently, each on its own
// session of m, and returns the results in order.
func runAll(t *testing.T, m *Model, convs [][]Message, opts GenerateOptions) []result {
	t.Helper()
	out := make([]result, len(convs))
	var wg sync.WaitGroup
	for i, msgs := range convs {
		wg.Go(func() { out[i] = collect(m.NewSession(), context.Background(), msgs, opts) })
	}
	wg.Wait()
	for i, r := range out {
		if r.err != nil {
			t.Fatalf("conversation %d: %v", i, r.err)
		}
	}
	return out
}

// Sessions that generate at the same time share forward steps, and each
// gets the answer it gets alone.
func TestBatchedSessionsMatchAlone(t *testing.T) {
	var convs [][]Message
	for i := range 6 {
		convs = append(convs, user(fmt.Sprintf("question %d %s", i, strings.Repeat("x", 40*i))))
	}
	for _, opts := range []GenerateOptions{{}, {Sampler: sample.Config{Temperature: 1, Seed: 7}}, {Speculation: ptr(true)}} {
		f := &fakeBackend{ctxLen: 2000, answer: historyAnswer, delay: time.Millisecond}
		m := testModel(t, f, WithMaxSequences(4))
		together := runAll(t, m, convs, opts)
		for i, msgs := range convs {
			alone := collect(testSession(t, &fakeBackend{ctxLen: 2000, answer: historyAnswer}), context.Background(), msgs, opts)
			if alone.content != together[i].content || alone.reasoning != together[i].reasoning {
				t.Errorf("%+v: conversation %d together %q/%q, alone %q/%q", opts, i, together[i].reasoning, together[i].content, alone.reasoning, alone.content)
			}
		}
		most := 0
		for _, st := range f.steps {
			most = max(most, len(st))
		}
		if most < 2 || most > 4 {
			t.Errorf("%+v: at most %d sequences in a step, want 2..4 (MaxSequences 4)", opts, most)
		}
		if l := m.Occupancy(); l.Sequences != 0 || l.Waiting != 0 || l.Steps != int64(f.calls) {
			t.Errorf("load after the run: %+v (%d steps)", l, f.calls)
		}
	}
}

// A long prompt that arrives while others decode is cut into chunks, one
// per step: the others get a token in every step.
func TestPrefillDoesNotStallDecoding(t *testing.T) {
	f := &fakeBackend{ctxLen: 5000, answer: fixed(strings.Repeat("d", 60)), delay: time.Millisecond}
	m := testModel(t, f, WithPrefillChunk(64))
	var wg sync.WaitGroup
	started := make(chan struct{}, 3)
	for i := range 3 {
		wg.Go(func() {
			first := true
			for ev, err := range m.NewSession().Generate(context.Background(), user(fmt.Sprint("short ", i)), GenerateOptions{}) {
				if err != nil {
					t.Error(err)
					return
				}
				if first && ev.Kind == EventContent {
					started <- struct{}{}
					first = false
				}
			}
		})
	}
	for range 3 {
		<-started
	}
	long := collect(m.NewSession(), context.Background(), user(strings.Repeat("p", 2000)), GenerateOptions{MaxTokens: 1})
	wg.Wait()
	if long.err != nil {
		t.Fatal(long.err)
	}
	mixed := 0
	for i, st := range f.steps {
		prefill, decode := 0, 0
		for _, q := range st {
			if q.rows == 0 || q.tokens > 1 {
				prefill++
				if q.tokens > 64 {
					t.Fatalf("step %d: a prompt chunk of %d tokens while others decode", i, q.tokens)
				}
			} else {
				decode++
			}
		}
		if prefill > 1 && decode > 0 {
			t.Fatalf("step %d: %d prompt chunks beside %d decoding sequences", i, prefill, decode)
		}
		if prefill == 1 && decode > 0 {
			mixed++
		}
	}
	if mixed < 10 {
		t.Fatalf("only %d steps mixed a prompt chunk with decoding", mixed)
	}
}

// A decoder that misses steps (its caller is slow to take its tokens)
// still counts as decoding: a prompt that arrives meanwhile takes one chunk
// per step, not a whole batch, so the decoder's next token never waits
// behind more than a chunk.
func TestPrefillChunksBesideSlowDecoder(t *testing.T) {
	f := &fakeBackend{ctxLen: 5000, answer: fixed(strings.Repeat("d", 20)), delay: time.Millisecond}
	m := testModel(t, f, WithPrefillChunk(64))
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		first := true
		for ev, err := range m.NewSession().Generate(context.Background(), user("short"), GenerateOptions{}) {
			if err != nil {
				t.Error(err)
				return
			}
			if ev.Kind == EventContent {
				if first {
					close(started)
					first = false
				}
				time.Sleep(30 * time.Millisecond) // far beyond the scheduler's grace
			}
		}
	}()
	<-started
	long := collect(m.NewSession(), context.Background(), user(strings.Repeat("p", 1000)), GenerateOptions{MaxTokens: 1})
	if long.err != nil {
		t.Fatal(long.err)
	}
	select {
	case <-done:
		t.Fatal("the decoder ended before the prompt was computed: the test proves nothing")
	default:
	}
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, st := range f.steps {
		for _, q := range st {
			if q.tokens > 64 {
				t.Fatalf("step %d: a prompt piece of %d tokens while a decoder was active", i, q.tokens)
			}
		}
	}
}

// MaxSequences bounds a step's sequences; the others wait their turn.
func TestMaxSequences(t *testing.T) {
	f := &fakeBackend{ctxLen: 2000, answer: fixed("some answer"), delay: time.Millisecond}
	m := testModel(t, f, WithMaxSequences(2))
	var convs [][]Message
	for i := range 5 {
		convs = append(convs, user(fmt.Sprint("q", i)))
	}
	rs := runAll(t, m, convs, GenerateOptions{})
	for i, st := range f.steps {
		if len(st) > 2 {
			t.Fatalf("step %d computed %d sequences", i, len(st))
		}
	}
	waited := 0
	for _, r := range rs {
		if r.content != "some answer" {
			t.Fatalf("answer %q", r.content)
		}
		if r.stats.QueueSeconds > 0.002 {
			waited++
		}
	}
	if waited == 0 {
		t.Fatal("no generation waited for a place")
	}
}

// A cancelled generation waiting for a place leaves the line; one cancelled
// in a step does not stop the step for the others.
func TestCancelInBatch(t *testing.T) {
	f := &fakeBackend{ctxLen: 4000, answer: fixed(strings.Repeat("c", 200)), delay: 2 * time.Millisecond}
	m := testModel(t, f, WithMaxSequences(2))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	results := make([]result, 4)
	for i := range 4 {
		c := context.Background()
		if i%2 == 1 {
			c = ctx
		}
		wg.Go(func() { results[i] = collect(m.NewSession(), c, user(fmt.Sprint("q", i)), GenerateOptions{}) })
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("%d: %v", i, r.err)
		}
		want := StopEndOfTurn
		if i%2 == 1 {
			want = StopCancelled
		}
		if r.stats.StopReason != want {
			t.Errorf("%d: stop %q, want %q", i, r.stats.StopReason, want)
		}
	}
	if l := m.Occupancy(); l.Sequences != 0 || l.Waiting != 0 {
		t.Fatalf("load after the run: %+v", l)
	}
}

// copyAnswer repeats the last user message: drafts from the prompt are right.
func copyAnswer(p []int32) string {
	s := decodeFake(p)
	i := strings.LastIndex(s, "<|im_start|>user\n")
	j := strings.LastIndex(s, "<|im_end|>")
	if i < 0 || j < i {
		return "?"
	}
	return s[i+len("<|im_start|>user\n") : j]
}

// Speculation gives the same answer in fewer steps when the answer repeats
// the prompt, greedy and sampled.
func TestSpeculation(t *testing.T) {
	text := "func main() { fmt.Println(\"hello, world\"); os.Exit(0) } // the end of the program text"
	for _, sampler := range []sample.Config{{}, {Temperature: 0.8, Seed: 3}} {
		var steps [2]int
		var answers [2]result
		for i, spec := range []bool{false, true} {
			f := &fakeBackend{ctxLen: 2000, answer: copyAnswer}
			answers[i] = collect(testSession(t, f), context.Background(), user(text), GenerateOptions{Speculation: &spec, Sampler: sampler})
			if answers[i].err != nil {
				t.Fatal(answers[i].err)
			}
			steps[i] = f.calls
		}
		off, on := answers[0], answers[1]
		if on.content != off.content || on.content != text {
			t.Fatalf("%+v: speculation changed the answer: %q vs %q", sampler, on.content, off.content)
		}
		if on.stats.DraftTokens == 0 || on.stats.AcceptedTokens < len(text)/2 || off.stats.DraftTokens != 0 {
			t.Fatalf("%+v: drafted %d, accepted %d (off: %d)", sampler, on.stats.DraftTokens, on.stats.AcceptedTokens, off.stats.DraftTokens)
		}
		if steps[1]*2 > steps[0] {
			t.Fatalf("%+v: %d steps with speculation, %d without", sampler, steps[1], steps[0])
		}
	}
	// An answer that never repeats: no draft is checked for long.
	f := &fakeBackend{ctxLen: 2000, answer: fixed("abcdefghijklmnopqrstuvwxyz0123456789")}
	r := collect(testSession(t, f), context.Background(), user("zyxw"), GenerateOptions{Speculation: ptr(true)})
	if r.err != nil || r.content != "abcdefghijklmnopqrstuvwxyz0123456789" || r.stats.DraftTokens > 4 {
		t.Fatalf("no repetition: %q, %+v, %v", r.content, r.stats, r.err)
	}
}
