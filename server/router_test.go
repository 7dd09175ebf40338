package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// fakeModels makes ModelSpecs whose loads make a fresh servertest.Engine
// that answers "I am NAME: <the question>", and counts loads and closes.
type fakeModels struct {
	mu      sync.Mutex
	loads   map[string]int
	closes  map[string]int
	live    map[string]int // loaded and not yet closed
	engines map[string][]*servertest.Engine
}

func newFakeModels() *fakeModels {
	return &fakeModels{loads: map[string]int{}, closes: map[string]int{}, live: map[string]int{}, engines: map[string][]*servertest.Engine{}}
}

// fakeOpts shape a fake model's loads.
type fakeOpts struct {
	kind       server.ModelKind
	bytes      int64
	pinned     bool
	loadDelay  time.Duration
	gate       chan struct{} // when set, a load waits for it to close
	fail       error         // every load fails with it
	panics     bool          // every load panics
	tokenDelay time.Duration
}

func (f *fakeModels) spec(name string, o fakeOpts) server.ModelSpec {
	if o.kind == "" {
		o.kind = server.KindChat
	}
	return server.ModelSpec{Name: name, Kind: o.kind, Bytes: o.bytes, Pinned: o.pinned,
		Load: func(ctx context.Context) (server.Engine, func(), error) {
			f.mu.Lock()
			f.loads[name]++
			f.mu.Unlock()
			if o.gate != nil {
				select {
				case <-o.gate:
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			}
			time.Sleep(o.loadDelay)
			if o.panics {
				panic("the weights are upside down")
			}
			if o.fail != nil {
				return nil, nil, o.fail
			}
			e := &servertest.Engine{Name: name, TokenDelay: o.tokenDelay, Reply: func(msgs []engine.Message) (string, string) {
				_, content := servertest.Echo(msgs)
				return "", "I am " + name + ": " + content
			}}
			f.mu.Lock()
			f.live[name]++
			f.engines[name] = append(f.engines[name], e)
			f.mu.Unlock()
			return e, func() {
				e.Close()
				f.mu.Lock()
				f.closes[name]++
				f.live[name]--
				f.mu.Unlock()
			}, nil
		}}
}

func (f *fakeModels) count(m map[string]int, name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return m[name]
}

// startRouter serves a Router over httptest; the Router is closed at the
// end of the test.
func startRouter(t *testing.T, specs []server.ModelSpec, cfg server.RouterConfig) (*server.Router, *httptest.Server) {
	t.Helper()
	if cfg.Server.Logger == nil {
		cfg.Server.Logger = quietLogger()
	}
	cfg.Server.Sampler = sample.Config{} // greedy: the fakes' answers are scripted anyway
	rt, err := server.NewRouter(specs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(rt)
	t.Cleanup(func() {
		ts.Close()
		rt.Close()
	})
	return rt, ts
}

// ask sends a chat completion for model (omitted when "") and returns the
// status, the answer (or the error message) and the model the answer names.
func ask(url, model, question string) (status int, answer, answeredBy string, err error) {
	body := map[string]any{"messages": []map[string]string{{"role": "user", "content": question}}, "max_tokens": 64}
	if model != "" {
		body["model"] = model
	}
	b, _ := json.Marshal(body)
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(string(b)))
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Error *struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return resp.StatusCode, "", "", fmt.Errorf("decoding the answer: %w", err)
	}
	if out.Error != nil {
		return resp.StatusCode, out.Error.Code + ": " + out.Error.Message, "", nil
	}
	if len(out.Choices) != 1 {
		return resp.StatusCode, "", "", fmt.Errorf("%d choices", len(out.Choices))
	}
	return resp.StatusCode, out.Choices[0].Message.Content, out.Model, nil
}

// mustAsk asks and checks that model answered.
func mustAsk(t *testing.T, url, model, question string) {
	t.Helper()
	status, answer, by, err := ask(url, model, question)
	if err != nil || status != 200 || answer != "I am "+model+": You said: "+question || by != model {
		t.Fatalf("asking %s %q: status %d, answer %q by %q, err %v", model, question, status, answer, by, err)
	}
}

type listedModel struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	State       string `json:"state"`
	Pinned      bool   `json:"pinned"`
	MemoryBytes int64  `json:"memory_bytes"`
	LastError   string `json:"last_error"`
	Status      struct {
		Value string `json:"value"`
	} `json:"status"`
}

func listModels(t *testing.T, url string) map[string]listedModel {
	t.Helper()
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string        `json:"object"`
		Data   []listedModel `json:"data"`
	}
	decode(t, resp.Body, &list)
	out := map[string]listedModel{}
	for _, m := range list.Data {
		out[m.ID] = m
	}
	return out
}

func waitState(t *testing.T, url, model, state string) {
	t.Helper()
	waitFor(t, model+" "+state, func() bool { return listModels(t, url)[model].State == state })
}

func TestRouterAnswersEachModelByName(t *testing.T) {
	f := newFakeModels()
	_, ts := startRouter(t, []server.ModelSpec{
		f.spec("alpha", fakeOpts{}),
		f.spec("beta", fakeOpts{}),
		f.spec("gamma-embed", fakeOpts{kind: server.KindEmbedding}),
	}, server.RouterConfig{})

	models := listModels(t, ts.URL)
	for name, kind := range map[string]string{"alpha": "chat", "beta": "chat", "gamma-embed": "embedding"} {
		if m := models[name]; m.Kind != kind || m.State != "unloaded" || m.Status.Value != "unloaded" {
			t.Errorf("before any request, /v1/models has %s as %+v; want kind %s, unloaded", name, m, kind)
		}
	}
	mustAsk(t, ts.URL, "beta", "hello")
	mustAsk(t, ts.URL, "alpha", "hi")
	mustAsk(t, ts.URL, "beta", "again")
	if f.count(f.loads, "alpha") != 1 || f.count(f.loads, "beta") != 1 || f.count(f.loads, "gamma-embed") != 0 {
		t.Errorf("loads %v; want alpha and beta once, gamma-embed never", f.loads)
	}
	models = listModels(t, ts.URL)
	if models["alpha"].State != "loaded" || models["beta"].State != "loaded" || models["gamma-embed"].State != "unloaded" {
		t.Errorf("after use, /v1/models: %+v", models)
	}

	// No model: the first chat model. An unknown one: 404 naming the models,
	// in the shape of the endpoint's API.
	if status, answer, by, err := ask(ts.URL, "", "who?"); err != nil || status != 200 || by != "alpha" || !strings.HasPrefix(answer, "I am alpha") {
		t.Errorf("a request without a model: %d %q by %q, %v; want alpha's answer", status, answer, by, err)
	}
	status, answer, _, err := ask(ts.URL, "gpt-4o", "hello")
	if err != nil || status != 404 || !strings.Contains(answer, `model_not_found: model "gpt-4o" does not exist; this server has alpha, beta, gamma-embed`) {
		t.Errorf("an unknown model: %d %q %v", status, answer, err)
	}
	resp := post(t, ts.URL+"/v1/messages", `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	var anth struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	decode(t, resp.Body, &anth)
	if resp.StatusCode != 404 || anth.Type != "error" || !strings.Contains(anth.Error.Message, "claude-x") {
		t.Errorf("Messages API, unknown model: %d %+v", resp.StatusCode, anth)
	}
	// ?model= picks a model too (the web page's sessions use it).
	resp = post(t, ts.URL+"/api/sessions?model=beta", "")
	if resp.StatusCode != 201 {
		t.Errorf("POST /api/sessions?model=beta: %d", resp.StatusCode)
	}
	// GET /v1/models/{id}
	r2, err := http.Get(ts.URL + "/v1/models/beta")
	if err != nil {
		t.Fatal(err)
	}
	var one listedModel
	decode(t, r2.Body, &one)
	r2.Body.Close()
	if one.ID != "beta" || one.State != "loaded" || one.MemoryBytes <= 0 {
		t.Errorf("GET /v1/models/beta: %+v", one)
	}
	if r3, _ := http.Get(ts.URL + "/v1/models/nope"); r3.StatusCode != 404 {
		t.Errorf("GET /v1/models/nope: %d", r3.StatusCode)
	}
}

// With one model, any name is it (clients send their own defaults), as
// with a plain Server.
func TestRouterOneModelAnswersAnyName(t *testing.T) {
	f := newFakeModels()
	_, ts := startRouter(t, []server.ModelSpec{f.spec("solo", fakeOpts{})}, server.RouterConfig{})
	for _, name := range []string{"gpt-4o", "claude-sonnet-4", "", "solo"} {
		status, answer, by, err := ask(ts.URL, name, "hi")
		if err != nil || status != 200 || by != "solo" || answer != "I am solo: You said: hi" {
			t.Errorf("model %q: %d %q by %q %v", name, status, answer, by, err)
		}
	}
}

func TestRouterConcurrentFirstRequestsShareOneLoad(t *testing.T) {
	f := newFakeModels()
	gate := make(chan struct{})
	_, ts := startRouter(t, []server.ModelSpec{f.spec("slow", fakeOpts{gate: gate}), f.spec("other", fakeOpts{})},
		server.RouterConfig{})
	const n = 12
	errs := make(chan error, n)
	for i := range n {
		go func() {
			q := fmt.Sprintf("q%d", i)
			status, answer, _, err := ask(ts.URL, "slow", q)
			if err == nil && (status != 200 || answer != "I am slow: You said: "+q) {
				err = fmt.Errorf("status %d, answer %q", status, answer)
			}
			errs <- err
		}()
	}
	waitState(t, ts.URL, "slow", "loading")
	// While slow loads, the other model loads and answers.
	mustAsk(t, ts.URL, "other", "not stalled")
	time.Sleep(50 * time.Millisecond) // let every request reach the wait
	close(gate)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := f.count(f.loads, "slow"); got != 1 {
		t.Errorf("%d concurrent first requests made %d loads; want 1", n, got)
	}
}

func TestRouterFailedLoadLeavesOthersServing(t *testing.T) {
	f := newFakeModels()
	_, ts := startRouter(t, []server.ModelSpec{
		f.spec("good", fakeOpts{}),
		f.spec("broken", fakeOpts{fail: errors.New("tensor blk.0.attn_q.weight: truncated file"), loadDelay: 20 * time.Millisecond}),
		f.spec("panicky", fakeOpts{panics: true}),
	}, server.RouterConfig{})
	mustAsk(t, ts.URL, "good", "before")
	for _, tc := range []struct{ model, want string }{
		{"broken", "model_load_failed: model broken could not be loaded: tensor blk.0.attn_q.weight: truncated file"},
		{"panicky", "model_load_failed: model panicky could not be loaded: loader panicked: the weights are upside down"},
	} {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, answer, _, err := ask(ts.URL, tc.model, "hi")
				if err != nil || status != 500 || answer != tc.want {
					t.Errorf("%s: %d %q %v; want 500 %q", tc.model, status, answer, err, tc.want)
				}
			}()
		}
		mustAsk(t, ts.URL, "good", "during "+tc.model)
		wg.Wait()
	}
	mustAsk(t, ts.URL, "good", "after")
	m := listModels(t, ts.URL)["broken"]
	if m.State != "unloaded" || !strings.Contains(m.LastError, "truncated file") {
		t.Errorf("/v1/models after the failure: %+v", m)
	}
	// The next request tries again.
	before := f.count(f.loads, "broken")
	ask(ts.URL, "broken", "again")
	if after := f.count(f.loads, "broken"); after != before+1 {
		t.Errorf("a request after a failed load made %d loads; want 1", after-before)
	}
}

// fakeClock is a settable clock for TTL tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestRouterIdleTTLUnloadsButNotPinned(t *testing.T) {
	f := newFakeModels()
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	rt, ts := startRouter(t, []server.ModelSpec{
		f.spec("pinned", fakeOpts{pinned: true}),
		f.spec("a", fakeOpts{}),
		f.spec("b", fakeOpts{}),
	}, server.RouterConfig{IdleTTL: 10 * time.Minute, Server: server.Config{Now: clock.now}})
	waitState(t, ts.URL, "pinned", "loaded") // pinned models load at start
	mustAsk(t, ts.URL, "a", "one")
	clock.add(6 * time.Minute)
	mustAsk(t, ts.URL, "b", "two")
	clock.add(6 * time.Minute) // a idle 12 min, b 6 min, pinned never used
	server.Sweep(rt)
	waitState(t, ts.URL, "a", "unloaded")
	if m := listModels(t, ts.URL); m["b"].State != "loaded" || m["pinned"].State != "loaded" {
		t.Errorf("after a's TTL: %+v", m)
	}
	if f.count(f.closes, "a") != 1 || f.count(f.live, "a") != 0 {
		t.Errorf("a was closed %d times, %d left open", f.count(f.closes, "a"), f.count(f.live, "a"))
	}
	clock.add(time.Hour)
	server.Sweep(rt)
	waitState(t, ts.URL, "b", "unloaded")
	if listModels(t, ts.URL)["pinned"].State != "loaded" {
		t.Error("the pinned model was unloaded")
	}
	mustAsk(t, ts.URL, "a", "back") // loads again
	if f.count(f.loads, "a") != 2 {
		t.Errorf("a loaded %d times; want 2", f.count(f.loads, "a"))
	}
}

func TestRouterMemoryBoundUnloadsLeastRecentlyUsed(t *testing.T) {
	f := newFakeModels()
	const mb = 1 << 20
	_, ts := startRouter(t, []server.ModelSpec{
		f.spec("pinned", fakeOpts{pinned: true, bytes: 40 * mb}),
		f.spec("a", fakeOpts{bytes: 30 * mb}),
		f.spec("b", fakeOpts{bytes: 30 * mb}),
		f.spec("c", fakeOpts{bytes: 20 * mb}),
		f.spec("huge", fakeOpts{bytes: 75 * mb}),
	}, server.RouterConfig{MaxBytes: 110 * mb}) // the fakes' KV caches take about 1 MiB each
	waitState(t, ts.URL, "pinned", "loaded")
	mustAsk(t, ts.URL, "a", "1") // pinned 40 + a 30
	mustAsk(t, ts.URL, "c", "2") // + c 20 = 90 (plus KV)
	mustAsk(t, ts.URL, "a", "3") // a is now the most recent
	mustAsk(t, ts.URL, "b", "4") // 40+30+20+30 > 110: c, the least recently used, goes
	m := listModels(t, ts.URL)
	if m["c"].State != "unloaded" || m["a"].State != "loaded" || m["b"].State != "loaded" || m["pinned"].State != "loaded" {
		t.Errorf("after b's load: %+v", m)
	}
	var total int64
	for _, v := range m {
		total += v.MemoryBytes
	}
	if total > 110*mb {
		t.Errorf("the models count %d bytes, over the bound", total)
	}
	// A model that cannot fit beside the pinned one fails, saying why.
	status, answer, _, _ := ask(ts.URL, "huge", "hi")
	want := "model_load_failed: model huge could not be loaded: its file takes 75.0 MiB and the memory bound is 110.0 MiB, of which pinned models hold 40.0 MiB"
	if status != 500 || !strings.HasPrefix(answer, want) {
		t.Errorf("huge: %d %q; want 500 %q", status, answer, want)
	}
	mustAsk(t, ts.URL, "a", "still here")
}

// A busy model chosen to make room finishes its running requests first.
func TestRouterMemoryBoundWaitsForRunningRequests(t *testing.T) {
	f := newFakeModels()
	_, ts := startRouter(t, []server.ModelSpec{
		f.spec("a", fakeOpts{bytes: 60, tokenDelay: 2 * time.Millisecond}),
		f.spec("b", fakeOpts{bytes: 60}),
	}, server.RouterConfig{MaxBytes: 100})
	lines, closeStream := startStream(t, ts.URL, `{"model":"a","stream":true,"messages":[{"role":"user","content":"count 150"}]}`)
	defer closeStream()
	done := make(chan string)
	go func() {
		rest, _ := io.ReadAll(lines)
		done <- string(rest)
	}()
	mustAsk(t, ts.URL, "b", "make room") // waits until a's stream is over
	rest := <-done
	if !strings.Contains(rest, "150") || !strings.HasSuffix(strings.TrimSpace(rest), "data: [DONE]") {
		t.Errorf("a's stream was cut by the unload: ends %q", rest[max(0, len(rest)-200):])
	}
	if f.count(f.live, "a") != 0 || f.count(f.closes, "a") != 1 {
		t.Errorf("a: %d open, %d closes", f.count(f.live, "a"), f.count(f.closes, "a"))
	}
}

// Two models that cannot both fit, asked for at once: their loads are
// ordered, so neither waits for the other forever, and both answer.
func TestRouterConcurrentLoadsUnderTheBound(t *testing.T) {
	f := newFakeModels()
	_, ts := startRouter(t, []server.ModelSpec{
		f.spec("a", fakeOpts{bytes: 60, loadDelay: 50 * time.Millisecond}),
		f.spec("b", fakeOpts{bytes: 60, loadDelay: 50 * time.Millisecond}),
	}, server.RouterConfig{MaxBytes: 100})
	var wg sync.WaitGroup
	for _, m := range []string{"a", "b", "a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, answer, by, err := ask(ts.URL, m, "hi")
			if err != nil || status != 200 || by != m {
				t.Errorf("%s: %d %q by %q %v", m, status, answer, by, err)
			}
		}()
	}
	wg.Wait()
	if f.count(f.live, "a")+f.count(f.live, "b") > 1 {
		t.Errorf("both models are open under a bound that holds one")
	}
}

// Loads and unloads (TTL, memory, by request) under traffic lose no
// request: every one is answered by the model it named. Run it with -race.
func TestRouterLoadUnloadUnderTrafficLosesNothing(t *testing.T) {
	f := newFakeModels()
	names := []string{"m0", "m1", "m2", "m3"}
	var specs []server.ModelSpec
	for _, n := range names {
		specs = append(specs, f.spec(n, fakeOpts{bytes: 40, loadDelay: 2 * time.Millisecond, tokenDelay: 100 * time.Microsecond}))
	}
	// Two of the four fit: every switch unloads one.
	rt, ts := startRouter(t, specs, server.RouterConfig{MaxBytes: 100, IdleTTL: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var asked, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				model := names[(w+i)%len(names)]
				q := fmt.Sprintf("w%d q%d", w, i)
				status, answer, by, err := ask(ts.URL, model, q)
				asked.Add(1)
				if err != nil || status != 200 || by != model || answer != "I am "+model+": You said: "+q {
					failed.Add(1)
					t.Errorf("%s %q: %d %q by %q %v", model, q, status, answer, by, err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the TTL sweep and unloads by request, as fast as they go
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			server.Sweep(rt)
			b := strings.NewReader(fmt.Sprintf(`{"model":%q}`, names[i%len(names)]))
			if resp, err := http.Post(ts.URL+"/models/unload", "application/json", b); err == nil {
				resp.Body.Close()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	var loads int
	for _, n := range names {
		loads += f.count(f.loads, n)
		for _, e := range f.engines[n] {
			if c := e.Counters(); c.Overlaps != 0 || c.Active != 0 {
				t.Errorf("%s: engine counters %+v", n, c)
			}
		}
	}
	t.Logf("%d requests (%d failed) over %d loads", asked.Load(), failed.Load(), loads)
	if loads < 2*len(names) {
		t.Errorf("only %d loads: the test did not exercise unloading", loads)
	}
	rt.Close()
	for _, n := range names {
		if f.count(f.live, n) != 0 {
			t.Errorf("%s left open after Close", n)
		}
	}
}

func TestRouterHealthAndMetrics(t *testing.T) {
	f := newFakeModels()
	gate := make(chan struct{})
	_, ts := startRouter(t, []server.ModelSpec{
		f.spec("chat", fakeOpts{}),
		f.spec("emb", fakeOpts{kind: server.KindEmbedding, pinned: true, gate: gate, bytes: 1000}),
	}, server.RouterConfig{MaxBytes: 1 << 30})
	health := func(q string) (int, map[string]any) {
		resp, err := http.Get(ts.URL + "/health" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		decode(t, resp.Body, &body)
		return resp.StatusCode, body
	}
	probe := func(path string) (int, string) {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Status string }
		decode(t, resp.Body, &body)
		return resp.StatusCode, body.Status
	}
	if code, body := health(""); code != 503 || body["status"] != "loading" {
		t.Errorf("while the pinned model loads: %d %v", code, body)
	}
	// deploy/'s probes: alive while the pinned model loads, not ready.
	if code, status := probe("/livez"); code != 200 {
		t.Errorf("/livez while the pinned model loads: %d %s", code, status)
	}
	if code, status := probe("/readyz"); code != 503 || status != "loading" {
		t.Errorf("/readyz while the pinned model loads: %d %s", code, status)
	}
	close(gate)
	waitState(t, ts.URL, "emb", "loaded")
	if code, body := health(""); code != 200 || body["status"] != "ok" {
		t.Errorf("once loaded: %d %v", code, body)
	}
	if code, status := probe("/readyz"); code != 200 || status != "ready" {
		t.Errorf("/readyz once loaded: %d %s", code, status)
	}
	if code, body := health("?model=chat"); code != 200 || body["state"] != "unloaded" || body["model"] != "chat" {
		t.Errorf("/health?model=chat before its load: %d %v", code, body)
	}
	mustAsk(t, ts.URL, "chat", "hi")
	if code, body := health("?model=chat"); code != 200 || body["state"] != "loaded" || body["slots_processing"] != 0.0 {
		t.Errorf("/health?model=chat after: %d %v", code, body)
	}

	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	for _, want := range []string{
		`smolgo_http_requests_total{model="chat",endpoint="/v1/chat/completions",status="200"} 1`,
		`smolgo_generated_tokens_total{model="chat"} `,
		`smolgo_slots{model="emb"} `,
		`smolgo_time_to_first_token_seconds_bucket{model="chat",le="+Inf"} 1`,
		`smolgo_model_loaded{model="chat"} 1`,
		`smolgo_model_loads_total{model="emb"} 1`,
		`smolgo_models_max_memory_bytes 1.073741824e+09`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	seen := map[string]bool{}
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "# TYPE ") {
			if seen[line] {
				t.Errorf("/metrics repeats %q", line)
			}
			seen[line] = true
		}
	}
}

// Stored responses are the Router's, so a conversation can go on with
// another model, and a model's unload does not lose them.
func TestRouterStoredResponsesAcrossModels(t *testing.T) {
	f := newFakeModels()
	_, ts := startRouter(t, []server.ModelSpec{f.spec("a", fakeOpts{}), f.spec("b", fakeOpts{})}, server.RouterConfig{})
	resp := post(t, ts.URL+"/v1/responses", `{"model":"a","input":"first"}`)
	var first struct {
		ID string `json:"id"`
	}
	decode(t, resp.Body, &first)
	if resp.StatusCode != 200 || first.ID == "" {
		t.Fatalf("first response: %d %+v", resp.StatusCode, first)
	}
	if r, _ := http.Post(ts.URL+"/models/unload", "application/json", strings.NewReader(`{"model":"a"}`)); r.StatusCode != 200 {
		t.Errorf("unload a: %d", r.StatusCode)
	}
	waitState(t, ts.URL, "a", "unloaded")
	resp = post(t, ts.URL+"/v1/responses", fmt.Sprintf(`{"model":"b","input":"second","previous_response_id":%q}`, first.ID))
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("follow-up on b: %d %s", resp.StatusCode, b)
	}
	if r, _ := http.Get(ts.URL + "/v1/responses/" + first.ID); r.StatusCode != 200 {
		t.Errorf("GET the first response: %d", r.StatusCode)
	}
}

func TestRouterGracefulShutdown(t *testing.T) {
	f := newFakeModels()
	rt, err := server.NewRouter([]server.ModelSpec{f.spec("a", fakeOpts{tokenDelay: time.Millisecond}), f.spec("b", fakeOpts{})},
		server.RouterConfig{Server: server.Config{Logger: quietLogger(), ShutdownGrace: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	lines, closeStream := startStream(t, url, `{"model":"a","stream":true,"messages":[{"role":"user","content":"count 200"}]}`)
	defer closeStream()
	cancel()
	rest, err := io.ReadAll(lines)
	if err != nil || !strings.Contains(string(rest), `"200"`) || !strings.HasSuffix(strings.TrimSpace(string(rest)), "[DONE]") {
		t.Errorf("the running stream did not finish within the grace: %v, ends %q", err, string(rest)[max(0, len(rest)-100):])
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	rt.Close()
	if f.count(f.live, "a") != 0 {
		t.Error("a left open after Close")
	}
}

func TestNewRouterRefusesBadSpecs(t *testing.T) {
	load := func(context.Context) (server.Engine, func(), error) { return nil, nil, nil }
	for _, tc := range []struct {
		name  string
		specs []server.ModelSpec
		cfg   server.RouterConfig
		want  string
	}{
		{"none", nil, server.RouterConfig{}, "at least one model"},
		{"no name", []server.ModelSpec{{Kind: server.KindChat, Load: load}}, server.RouterConfig{}, "model 0 has no name"},
		{"twice", []server.ModelSpec{{Name: "a", Kind: server.KindChat, Load: load}, {Name: "a", Kind: server.KindChat, Load: load}}, server.RouterConfig{}, `two models are named "a"`},
		{"no loader", []server.ModelSpec{{Name: "a", Kind: server.KindChat}}, server.RouterConfig{}, "model a has no Load function"},
		{"kind", []server.ModelSpec{{Name: "a", Kind: "vision", Load: load}}, server.RouterConfig{}, `model a has kind "vision"`},
		{"pinned too big", []server.ModelSpec{{Name: "a", Kind: server.KindChat, Load: load, Pinned: true, Bytes: 2 << 20}},
			server.RouterConfig{MaxBytes: 1 << 20}, "the pinned models' files take 2.0 MiB, more than the memory bound of 1.0 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := server.NewRouter(tc.specs, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewRouter: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// imageEngine is a fake engine that says whether it takes images.
type imageEngine struct {
	*servertest.Engine
	images bool
}

func (e imageEngine) TakesImages() bool { return e.images }

// A model's input modalities: from its spec (ModelSpec.Images) while it is
// not loaded, from its engine once it is; the page's /api/info lists them
// with the body limit.
func TestRouterInputModalities(t *testing.T) {
	load := func(name string, images bool) func(context.Context) (server.Engine, func(), error) {
		return func(context.Context) (server.Engine, func(), error) {
			return imageEngine{&servertest.Engine{Name: name}, images}, func() {}, nil
		}
	}
	_, ts := startRouter(t, []server.ModelSpec{
		{Name: "vision", Kind: server.KindChat, Images: true, Load: load("vision", true)},
		{Name: "text", Kind: server.KindChat, Load: load("text", false)},
		{Name: "wrong", Kind: server.KindChat, Images: true, Load: load("wrong", false)}, // its engine knows better
	}, server.RouterConfig{Server: server.Config{MaxBodyBytes: 32 << 20}})
	modalities := func() map[string]string {
		resp, err := http.Get(ts.URL + "/api/info")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var info struct {
			MaxBodyBytes int64 `json:"max_body_bytes"`
			Models       []struct {
				ID              string   `json:"id"`
				InputModalities []string `json:"input_modalities"`
			} `json:"models"`
		}
		decode(t, resp.Body, &info)
		if info.MaxBodyBytes != 32<<20 {
			t.Errorf("/api/info max_body_bytes %d", info.MaxBodyBytes)
		}
		out := map[string]string{}
		for _, m := range info.Models {
			out[m.ID] = strings.Join(m.InputModalities, "+")
		}
		return out
	}
	if got, want := modalities(), "map[text:text vision:text+image wrong:text+image]"; fmt.Sprint(got) != want {
		t.Errorf("before loading: %v; want %s", got, want)
	}
	for _, name := range []string{"vision", "text", "wrong"} {
		if status, _, by, err := ask(ts.URL, name, "hi"); err != nil || status != 200 || by != name {
			t.Fatalf("asking %s: %d %q %v", name, status, by, err)
		}
	}
	if got, want := modalities(), "map[text:text vision:text+image wrong:text]"; fmt.Sprint(got) != want {
		t.Errorf("loaded: %v; want %s", got, want)
	}
	resp, err := http.Get(ts.URL + "/v1/models/vision")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"input_modalities":["text","image"]`) {
		t.Errorf("/v1/models/vision: %s", b)
	}
}
