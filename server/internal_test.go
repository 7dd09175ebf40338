package server

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
)

func TestSchedulerFIFO(t *testing.T) {
	s := newSlotQueue(1, 3)
	first, err := s.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			slot, err := s.acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			s.release(slot)
		}()
		// Wait until waiter i is in line before starting the next.
		for {
			if _, q := s.load(1); q == i+1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := s.acquire(context.Background()); !errors.Is(err, errQueueFull) {
		t.Fatalf("fourth waiter: %v, want errQueueFull", err)
	}
	s.release(first)
	for want := range 3 {
		if got := <-order; got != want {
			t.Fatalf("waiter %d ran in place %d", got, want)
		}
	}
	if busy, q := s.load(1); busy != 0 || q != 0 {
		t.Errorf("after all: busy %d queued %d", busy, q)
	}
}

func TestSchedulerCancelledWaiterLeavesLine(t *testing.T) {
	s := newSlotQueue(1, 1)
	slot, _ := s.acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.acquire(ctx)
		done <- err
	}()
	for {
		if _, q := s.load(1); q == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	s.release(slot)
	if busy, q := s.load(1); busy != 0 || q != 0 {
		t.Errorf("slot leaked: busy %d queued %d", busy, q)
	}
}

// sizedSession is a Session that reports a fixed memory size.
type sizedSession struct {
	bytes  int64
	resets int
}

func (s *sizedSession) Generate(context.Context, []engine.Message, engine.GenerateOptions) iter.Seq2[engine.Event, error] {
	return func(func(engine.Event, error) bool) {}
}
func (s *sizedSession) Reset()             { s.resets++ }
func (s *sizedSession) MemoryBytes() int64 { return s.bytes }

type sizedEngine struct{ bytes int64 }

func (e sizedEngine) ModelName() string   { return "sized" }
func (e sizedEngine) ContextLength() int  { return 10 }
func (e sizedEngine) NewSession() Session { return &sizedSession{bytes: e.bytes} }
func (e sizedEngine) NewConstraint(*grammar.Grammar) (engine.Constraint, error) {
	return nil, errors.New("no grammars")
}

func TestSessionStoreEviction(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	tests := []struct {
		name     string
		max      int
		maxBytes int64
		idle     time.Duration
		// step creates three sessions a, b, c (a is used after c when
		// touchA), advancing the clock by gap between each.
		gap     time.Duration
		touchA  bool
		holdB   bool // b is generating and must survive
		wantIDs string
	}{
		{name: "count bound drops least recently used", max: 2, gap: time.Second, wantIDs: "bc"},
		{name: "recent use protects", max: 2, gap: time.Second, touchA: true, wantIDs: "ac"},
		{name: "busy sessions are kept", max: 2, gap: time.Second, holdB: true, wantIDs: "bc"},
		{name: "memory bound", max: 10, maxBytes: 250, gap: time.Second, wantIDs: "bc"},
		{name: "idle timeout", max: 10, idle: 150 * time.Second, gap: time.Minute, wantIDs: "bc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newSessionStore(sizedEngine{bytes: 100}, tc.max, 0, tc.maxBytes, tc.idle, clock)
			ids := map[string]string{}
			for _, name := range []string{"a", "b"} {
				id, err := st.create("")
				if err != nil {
					t.Fatal(err)
				}
				ids[name] = id
				now = now.Add(tc.gap)
			}
			if tc.holdB {
				_, done, err := st.acquire(context.Background(), ids["b"], 0)
				if err != nil {
					t.Fatal(err)
				}
				defer done()
			}
			if tc.touchA {
				_, done, err := st.acquire(context.Background(), ids["a"], 0)
				if err != nil {
					t.Fatal(err)
				}
				done()
			}
			now = now.Add(tc.gap)
			id, err := st.create("")
			if err != nil {
				t.Fatal(err)
			}
			ids["c"] = id
			got := ""
			for _, name := range []string{"a", "b", "c"} {
				if _, ok := st.ids[ids[name]]; ok {
					got += name
				}
			}
			if got != tc.wantIDs {
				t.Errorf("kept %q, want %q", got, tc.wantIDs)
			}
		})
	}
}

func TestSessionStoreFullOfBusySessions(t *testing.T) {
	st := newSessionStore(sizedEngine{}, 1, 0, 0, 0, time.Now)
	id, _ := st.create("")
	_, done, _ := st.acquire(context.Background(), id, 0)
	defer done()
	if _, err := st.create(""); !errors.Is(err, errTooManySessions) {
		t.Fatalf("create with every session busy: %v", err)
	}
}

// reasoning_effort (chat) and reasoning.effort (Responses) reach the
// engine as GenerateOptions.ReasoningEffort, for templates with levels,
// beside the thinking switch they also set.
func TestReasoningEffortReachesEngine(t *testing.T) {
	cfg := Config{}
	for _, tt := range []struct {
		effort   string
		thinking bool
	}{{"low", true}, {"high", true}, {"none", false}, {"", true}} {
		body := `{"messages":[{"role":"user","content":"hi"}]`
		if tt.effort != "" {
			body += `,"reasoning_effort":"` + tt.effort + `"`
		}
		var req chatRequest
		if err := json.Unmarshal([]byte(body+"}"), &req); err != nil {
			t.Fatal(err)
		}
		job, ae := req.validate(&cfg, nil)
		if ae != nil {
			t.Fatalf("%s: %v", body, ae)
		}
		if job.opts.ReasoningEffort != tt.effort {
			t.Errorf("%s: ReasoningEffort %q, want %q", body, job.opts.ReasoningEffort, tt.effort)
		}
		if tt.effort != "" && (job.opts.Thinking == nil || *job.opts.Thinking != tt.thinking) {
			t.Errorf("%s: Thinking %v, want %v", body, job.opts.Thinking, tt.thinking)
		}
	}
}

// Issue 39: a client looping POST /api/sessions (and chatting in each, so
// that they are protected) filled the store and locked new users out. With
// a per-client bound its own sessions churn and another client still gets
// one; a client whose every session is generating is refused, others not.
func TestSessionStorePerClient(t *testing.T) {
	now := time.Unix(1000, 0)
	st := newSessionStore(sizedEngine{}, 32, 8, 0, 0, func() time.Time { return now })
	for i := range 1000 {
		id, err := st.create("10.0.0.66")
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		_, done, err := st.acquire(context.Background(), id, 0) // used: protected from eviction
		if err != nil {
			t.Fatal(err)
		}
		done()
		now = now.Add(time.Millisecond)
	}
	if n, _ := st.stats(); n != 8 {
		t.Errorf("the looping client keeps %d sessions, want 8", n)
	}
	alice, err := st.create("10.0.0.7")
	if err != nil {
		t.Fatalf("a new user: %v", err)
	}
	// Every session of a client generating: that client waits, no other.
	var dones []func()
	for range 8 {
		id, err := st.create("10.0.0.8")
		if err != nil {
			t.Fatal(err)
		}
		_, done, _ := st.acquire(context.Background(), id, 0)
		dones = append(dones, done)
	}
	if _, err := st.create("10.0.0.8"); !errors.Is(err, errClientSessions) {
		t.Errorf("a ninth session while eight generate: %v, want errClientSessions", err)
	}
	if _, err := st.create("10.0.0.9"); err != nil {
		t.Errorf("another client meanwhile: %v", err)
	}
	for _, d := range dones {
		d()
	}
	if _, ok := st.ids[alice]; !ok {
		t.Error("the new user's session was evicted")
	}
	// A client's own unused sessions go before its conversations.
	var talks []string
	for range 3 {
		id, _ := st.create("10.0.0.10")
		_, done, _ := st.acquire(context.Background(), id, 0)
		done()
		talks = append(talks, id)
	}
	for range 50 {
		if _, err := st.create("10.0.0.10"); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range talks {
		if _, ok := st.ids[id]; !ok {
			t.Errorf("conversation %s evicted by its own client's unused sessions", id)
		}
	}
}
