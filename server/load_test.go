package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// TestLoad runs 16 streaming clients against the fake engine on loopback for
// a bounded time (SMOLGO_LOAD_DURATION, default 60s) and checks that no
// stream is lost or mixed with another, that clients who hang up free their
// slot, and that goroutines and memory return to where they were. It is
// heavy, so it runs only with SMOLGO_HEAVY=1:
//
//	SMOLGO_HEAVY=1 go test -run TestLoad -v ./server/
//
// SMOLGO_LOAD_SLOTS sets the generation slots (default 1, the CPU default).
// SMOLGO_LOAD_MODEL=tiny serves the tiny SmolLM3 from testdata/ instead of
// the fake engine; then each of a few prompts is answered greedily and every
// answer must equal the first one for its prompt (in 16 sessions and the
// slot's, so with different cache histories).
func TestLoad(t *testing.T) {
	if os.Getenv("SMOLGO_HEAVY") != "1" {
		t.Skip("load test: set SMOLGO_HEAVY=1")
	}
	duration := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("SMOLGO_LOAD_DURATION")); err == nil && d > 0 && d <= 10*time.Minute {
		duration = d
	}
	slots := 1
	if n, err := strconv.Atoi(os.Getenv("SMOLGO_LOAD_SLOTS")); err == nil && n > 0 && n <= 64 {
		slots = n
	}
	const clients = 16

	fake := &servertest.Engine{TokenDelay: 500 * time.Microsecond}
	var e server.Engine = fake
	tiny := os.Getenv("SMOLGO_LOAD_MODEL") == "tiny"
	if tiny {
		// An f32 KV cache makes a reused prefix bit-identical to a fresh
		// prefill, so greedy answers are reproducible whatever the
		// session's cache held before (with f16 they may differ slightly).
		e = tinyEngine(t, 2048, engine.WithKVType("f32"))
	}
	var refMu sync.Mutex
	reference := map[string]string{} // tiny model: prompt -> first greedy answer
	ts := start(t, e, server.Config{Slots: slots, MaxQueue: clients})
	transport := &http.Transport{MaxIdleConnsPerHost: clients * 2}
	client := &http.Client{Transport: transport}

	runtime.GC()
	goroutinesBefore := runtime.NumGoroutine()
	// Memory is measured from the end of a warm-up round (one request per
	// client), when every session's KV cache exists: the caches are meant
	// to stay; growth after that would be a leak.
	var memBefore runtime.MemStats
	var warm sync.WaitGroup
	warm.Add(clients)
	go1 := make(chan struct{})

	var (
		completed, hungUp, rejected, tokens atomic.Int64
		mu                                  sync.Mutex
		firstToken, total                   []time.Duration
		failures                            []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	var deadline time.Time
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			session := ""
			if c%4 == 0 { // a quarter of the clients chat in their own session
				resp, err := client.Post(ts.URL+"/api/sessions", "application/json", nil)
				if err != nil {
					fail("client %d: create session: %v", c, err)
					return
				}
				var s struct{ ID string }
				json.NewDecoder(resp.Body).Decode(&s)
				resp.Body.Close()
				session = s.ID
			}
			warmed := false
			defer func() {
				if !warmed {
					warm.Done()
				}
			}()
			for seq := 0; ; seq++ {
				if seq == 1 {
					warmed = true
					warm.Done()
					<-go1
				}
				if seq > 0 && !time.Now().Before(deadline) {
					break
				}
				var msg, want string
				if tiny {
					msg = fmt.Sprintf("Tell me about topic %d.", rng.IntN(4))
				} else if rng.IntN(2) == 0 {
					k := 20 + rng.IntN(180)
					msg = "count " + strconv.Itoa(k)
					_, want = servertest.Echo([]engine.Message{{Role: "user", Content: msg}})
				} else {
					msg = fmt.Sprintf("client %d request %d says %x", c, seq, rng.Uint64())
					want = "You said: " + msg
				}
				hangUp := seq > 0 && rng.IntN(10) == 0
				st, err := loadRequest(client, ts.URL, session, msg, hangUp, tiny)
				if err == nil && !st.rejected && !hangUp {
					if tiny {
						refMu.Lock()
						if _, ok := reference[msg]; !ok {
							reference[msg] = st.content
						}
						want = reference[msg]
						refMu.Unlock()
					}
					if st.content != want {
						err = fmt.Errorf("stream %s for %q: got %q, want %q", st.id, msg, st.content, want)
					}
				}
				switch {
				case err != nil:
					fail("client %d request %d: %v", c, seq, err)
				case st.rejected:
					rejected.Add(1)
				case hangUp:
					hungUp.Add(1)
				default:
					completed.Add(1)
					tokens.Add(int64(st.tokens))
					mu.Lock()
					firstToken = append(firstToken, st.firstToken)
					total = append(total, st.total)
					mu.Unlock()
				}
			}
		}()
	}
	warm.Wait()
	runtime.GC()
	runtime.ReadMemStats(&memBefore)
	deadline = time.Now().Add(duration)
	close(go1)
	wg.Wait()
	elapsed := duration

	// Everything must drain: no generation running, no slot held.
	waitFor(t, "the engine to go idle", func() bool { return fake.Counters().Active == 0 })
	resp, err := client.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	transport.CloseIdleConnections()
	if h["slots_processing"] != 0.0 || h["queued"] != 0.0 {
		t.Errorf("after the load: %v", h)
	}

	// Goroutines and memory return to their level (with a little slack for
	// the runtime and the test server's connection goroutines winding down).
	var goroutinesAfter int
	deadlineG := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		goroutinesAfter = runtime.NumGoroutine()
		if goroutinesAfter <= goroutinesBefore+2 || time.Now().After(deadlineG) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var memAfter runtime.MemStats
	runtime.ReadMemStats(&memAfter)
	growth := int64(memAfter.HeapInuse) - int64(memBefore.HeapInuse)

	c := fake.Counters()
	slices.Sort(firstToken)
	slices.Sort(total)
	pct := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(float64(len(d))*p))].Round(time.Millisecond)
	}
	engineName := "fake engine"
	if tiny {
		engineName = "tiny SmolLM3"
	}
	t.Logf("%s, %d clients, %d slot(s), %v: %d streams completed, %d hung up on purpose, %d rejected (503), %d failures",
		engineName, clients, slots, elapsed, completed.Load(), hungUp.Load(), rejected.Load(), len(failures))
	t.Logf("streamed %d text deltas = %.0f/s through the server", tokens.Load(), float64(tokens.Load())/elapsed.Seconds())
	if !tiny {
		t.Logf("fake engine: %d calls, %d cancelled, max %d at once, %d session overlaps", c.Calls, c.Cancelled, c.MaxActive, c.Overlaps)
	}
	t.Logf("time to first token p50 %v p99 %v; whole stream p50 %v p99 %v",
		pct(firstToken, .5), pct(firstToken, .99), pct(total, .5), pct(total, .99))
	t.Logf("goroutines before %d after %d; heap in use before %.1f MiB after %.1f MiB (growth %+.1f MiB)",
		goroutinesBefore, goroutinesAfter, float64(memBefore.HeapInuse)/(1<<20), float64(memAfter.HeapInuse)/(1<<20), float64(growth)/(1<<20))

	for _, f := range failures {
		t.Error(f)
	}
	if completed.Load() == 0 {
		t.Error("no stream completed")
	}
	if !tiny && (c.Overlaps != 0 || c.MaxActive > int64(slots)) {
		t.Errorf("engine counters %+v: more generations at once than slots, or a session shared", c)
	}
	if rejected.Load() != 0 {
		t.Errorf("%d requests rejected although the queue holds every client", rejected.Load())
	}
	if goroutinesAfter > goroutinesBefore+2 {
		t.Errorf("goroutines grew from %d to %d", goroutinesBefore, goroutinesAfter)
	}
	if growth > 16<<20 {
		t.Errorf("heap in use grew by %.1f MiB", float64(growth)/(1<<20))
	}
}

type loadStats struct {
	id, content       string
	rejected          bool
	tokens            int
	firstToken, total time.Duration
}

// loadRequest sends one streaming request and checks its whole stream: one
// id, usage that matches the deltas, and [DONE]; the caller checks the
// content (so nothing from another stream got in). With hangUp it
// disconnects after a few chunks. greedy asks for temperature 0 and a short
// answer (for the real model).
func loadRequest(client *http.Client, url, session, msg string, hangUp, greedy bool) (loadStats, error) {
	var st loadStats
	req := map[string]any{
		"messages": []map[string]string{{"role": "user", "content": msg}}, "session_id": session,
		"stream": true, "stream_options": map[string]bool{"include_usage": true},
		"chat_template_kwargs": map[string]bool{"enable_thinking": false},
	}
	if greedy {
		req["temperature"], req["max_tokens"] = 0, 24
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hreq, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(string(body)))
	hreq.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(hreq)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		st.rejected = true
		return st, nil
	}
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	var id string
	var content strings.Builder
	deltas, events := 0, 0
	var usage *usage
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return st, fmt.Errorf("bad SSE line %q", line)
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return st, fmt.Errorf("bad chunk %q: %v", data, err)
		}
		if id == "" {
			id = c.ID
		} else if c.ID != id {
			return st, fmt.Errorf("chunk id %s in stream %s", c.ID, id)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "" {
			if deltas == 0 {
				st.firstToken = time.Since(start)
			}
			deltas++
			content.WriteString(*c.Choices[0].Delta.Content)
		}
		events++
		if hangUp && events == 4 {
			return st, nil // hang up mid-stream
		}
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	st.total = time.Since(start)
	st.id, st.content = id, content.String()
	switch {
	case !done:
		return st, fmt.Errorf("stream %s ended without [DONE]", id)
	case usage == nil || !greedy && usage.CompletionTokens != deltas && usage.CompletionTokens != deltas+1 || usage.CompletionTokens < deltas:
		// The fake sends one delta per token, and counts the end of turn
		// as one more (the engine does); a real model's token may hold
		// half a character or end the turn without text.
		return st, fmt.Errorf("stream %s: usage %+v for %d deltas", id, usage, deltas)
	}
	st.tokens = deltas
	return st, nil
}
