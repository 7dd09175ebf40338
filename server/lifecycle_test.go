package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// occupied is the fake engine with its batch's occupancy (server.Occupancy),
// which the gateway's gauges read.
type occupied struct{ *servertest.Engine }

func (o occupied) Occupancy() engine.Occupancy { return o.Model().Occupancy() }

// serve runs srv on a fresh loopback listener until the returned cancel;
// served reports Serve's result.
func serve(t *testing.T, srv *server.Server) (url string, cancel func(), served chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served = make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(cancel)
	return "http://" + ln.Addr().String(), cancel, served
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// SIGTERM (Serve's context ending) drains: readiness fails at once and new
// requests get 503 with Retry-After, while the listener stays open and the
// stream already running ends as it would have, not cut; then Serve
// returns, well inside the grace period.
func TestDrain(t *testing.T) {
	e := &servertest.Engine{TokenDelay: 3 * time.Millisecond}
	srv := server.New(e, server.Config{Slots: 2, ShutdownGrace: 20 * time.Second, Logger: quietLogger()})
	url, cancel, served := serve(t, srv)

	lines, closeStream := startStream(t, url, `{"stream":true,"messages":[{"role":"user","content":"count 300"}]}`)
	defer closeStream()
	var rest []byte
	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rest, readErr = io.ReadAll(lines)
	}()
	began := time.Now()
	cancel()
	time.Sleep(50 * time.Millisecond)

	for path, want := range map[string]int{"/readyz": 503, "/health": 503, "/livez": 200} {
		if code, body := get(t, url+path); code != want {
			t.Errorf("draining: %s %d %s, want %d", path, code, body, want)
		}
	}
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatalf("draining: a new request was refused at the connection (%v), want a 503", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "shutting_down") {
		t.Errorf("draining: new request %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	resp, err = http.Post(url+"/v1/messages", "application/json", strings.NewReader(`{}`))
	if err == nil {
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || !strings.Contains(string(b), `"type":"error"`) {
			t.Errorf("draining: Messages request %d: %s, want Anthropic's error shape", resp.StatusCode, b)
		}
	}

	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return")
	}
	wg.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	ev := sseEvents(t, strings.NewReader(string(rest)))
	n := len(ev)
	if n < 2 || ev[n-1] != "[DONE]" || strings.Contains(string(rest), "shutting_down") || !strings.Contains(string(rest), `"finish_reason":"stop"`) {
		t.Errorf("the running stream did not end whole: %q", ev[max(0, n-3):])
	}
	if !strings.Contains(string(rest), "300") {
		t.Error("the running stream lost its end")
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("drain took %v", d)
	}
	if _, err := http.Get(url + "/livez"); err == nil {
		t.Error("still listening after the drain")
	}
}

// While the model loads, ServeLoading answers on the listener the server
// will use: /health 503 "Loading model" as llama-server, /livez 200,
// everything else 503 with Retry-After; then Serve takes the same listener
// over.
func TestServeLoading(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	stop := server.ServeLoading(ln, quietLogger())
	code, body := get(t, url+"/health")
	var h struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(body), &h)
	if code != 503 || h.Error.Code != 503 || h.Error.Message != "Loading model" {
		t.Errorf("loading: /health %d %s", code, body)
	}
	if code, _ := get(t, url+"/readyz"); code != 503 {
		t.Errorf("loading: /readyz %d", code)
	}
	if code, _ := get(t, url+"/livez"); code != 200 {
		t.Errorf("loading: /livez %d", code)
	}
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("loading: chat %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	stop()

	srv := server.New(&servertest.Engine{}, server.Config{Logger: quietLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, ln)
	for _, path := range []string{"/health", "/readyz", "/livez"} {
		if code, body := get(t, url+path); code != 200 {
			t.Errorf("ready: %s %d %s", path, code, body)
		}
	}
	c := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`)
	c.Body.Close()
	if c.StatusCode != 200 {
		t.Errorf("ready: chat %d", c.StatusCode)
	}
}

// /metrics has the gauges a Kubernetes inference gateway routes by, beside
// smolgo's own: requests waiting and running, KV-cache utilization 0-1, and
// the cache's configuration in the info metric's labels.
func TestGatewayMetrics(t *testing.T) {
	e := occupied{&servertest.Engine{TokenDelay: 5 * time.Millisecond, Context: 1024, Sequences: 4}}
	ts := start(t, e, server.Config{Slots: 1, MaxQueue: 4})
	defer e.Close()
	idle := scrape(t, ts.URL)
	info := `smolgo_cache_config_info{block_size="64",num_gpu_blocks="64"}` // 4 sequences × 1024 / 64
	for name, want := range map[string]float64{"smolgo_requests_waiting": 0, "smolgo_requests_running": 0, "smolgo_kv_cache_usage_ratio": 0, info: 1} {
		if got, ok := idle[name]; !ok || got != want {
			t.Errorf("idle: %s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	_, closeA := startStream(t, ts.URL, `{"stream":true,"messages":[{"role":"user","content":"count 2000"}]}`)
	defer closeA()
	// A second request waits for the one slot.
	go func() {
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	var busy map[string]float64
	for time.Now().Before(deadline) {
		busy = scrape(t, ts.URL)
		if busy["smolgo_requests_waiting"] == 1 && busy["smolgo_kv_cache_usage_ratio"] > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if busy["smolgo_requests_running"] != 1 || busy["smolgo_requests_waiting"] != 1 {
		t.Errorf("busy: running %v, waiting %v, want 1 and 1", busy["smolgo_requests_running"], busy["smolgo_requests_waiting"])
	}
	if u := busy["smolgo_kv_cache_usage_ratio"]; u <= 0 || u > 1.0/4 {
		t.Errorf("busy: KV usage %v, want one sequence's share of four", u)
	}
}

// The replica's name is on every answer, and prompt_cache_key pins a
// conversation to the slot that holds its KV cache: its next turn reuses
// the answer too, even after another conversation ran in between.
func TestAffinity(t *testing.T) {
	turns := func(key string) (first, second completion, replica string) {
		e := &servertest.Engine{}
		ts := start(t, e, server.Config{Slots: 2, ReplicaID: "replica-7"})
		ask := func(body string) completion {
			t.Helper()
			resp := post(t, ts.URL+"/v1/chat/completions", body)
			replica = resp.Header.Get(server.ReplicaHeader)
			var c completion
			decode(t, resp.Body, &c)
			return c
		}
		with := func(k string) string {
			if key == "" {
				return ""
			}
			return `,"prompt_cache_key":"` + k + `"`
		}
		a1 := `{"role":"system","content":"` + strings.Repeat("You are Ada. ", 30) + `"},{"role":"user","content":"one"}`
		first = ask(`{"messages":[` + a1 + `]` + with("a") + `}`)
		ask(`{"messages":[{"role":"system","content":"` + strings.Repeat("You are Bob. ", 30) + `"},{"role":"user","content":"two"}]` + with("b") + `}`)
		a2 := a1 + `,{"role":"assistant","content":` + mustJSON(first.Choices[0].Message.Content) + `},{"role":"user","content":"three"}`
		second = ask(`{"messages":[` + a2 + `]` + with("a") + `}`)
		return first, second, replica
	}
	first, second, replica := turns("a")
	if replica != "replica-7" {
		t.Errorf("%s: %q", server.ReplicaHeader, replica)
	}
	got := second.Usage.PromptTokensDetails.CachedTokens
	t.Logf("with prompt_cache_key: the next turn reused %d of %d prompt tokens", got, second.Usage.PromptTokens)
	if got < first.Usage.PromptTokens {
		t.Errorf("with a key the next turn reused %d tokens, less than the first turn's prompt (%d)", got, first.Usage.PromptTokens)
	}
	_, control, _ := turns("")
	if c := control.Usage.PromptTokensDetails.CachedTokens; c >= got {
		t.Errorf("without a key the next turn reused %d tokens, with one %d: the key changed nothing", c, got)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
