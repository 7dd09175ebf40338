package server_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// TestSlowBodyTimesOut: a client that sends its body a byte at a time
// cannot hold a connection past Config.ReadTimeout.
func TestSlowBodyTimesOut(t *testing.T) {
	srv := server.New(&servertest.Engine{}, server.Config{ReadTimeout: 300 * time.Millisecond, Logger: quietLogger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	stop := make(chan struct{})
	defer close(stop)
	go func() { // 10 bytes a second: the whole body would take 100 s
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if _, err := io.WriteString(conn, " "); err != nil {
					return
				}
			}
		}
	}()
	began := time.Now()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if elapsed := time.Since(began); elapsed > 3*time.Second {
		t.Fatalf("the slow body held the connection for %v", elapsed)
	}
	if err == nil && resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408 (or a closed connection)", resp.StatusCode)
	}
}

// TestGrammarCompiledInQueue: a request's grammar is compiled once it holds
// a slot, so a request that waits in line has not compiled anything yet (a
// bad schema's 400 comes only when its turn comes), and one whose client
// leaves while waiting compiles nothing.
func TestGrammarCompiledInQueue(t *testing.T) {
	e := &servertest.Engine{TokenDelay: 5 * time.Millisecond}
	ts := start(t, e, server.Config{Slots: 1})
	_, stop := startStream(t, ts.URL, `{"stream":true,"messages":[{"role":"user","content":"count 100000"}]}`)
	bad := `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"not":{}}}}}`

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(bad))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the request was answered (%d) while every slot was busy: its schema was compiled before it got a slot", resp.StatusCode)
	}
	stop()
	waitFor(t, "the slot to be free", func() bool { return e.Counters().Active == 0 })
	resp := post(t, ts.URL+"/v1/chat/completions", bad)
	var eb apiErr
	decode(t, resp.Body, &eb)
	if resp.StatusCode != http.StatusBadRequest || deref(eb.Error.Param) != "response_format" {
		t.Errorf("bad schema: %d %+v", resp.StatusCode, eb.Error)
	}
}

// TestStoreAnswersWhileSessionGenerates: the session store never holds its
// lock while a session generates, so /health, /metrics and POST
// /api/sessions (which evicts) answer at once.
func TestStoreAnswersWhileSessionGenerates(t *testing.T) {
	e := &servertest.Engine{TokenDelay: 20 * time.Millisecond}
	ts := start(t, e, server.Config{Slots: 2, MaxSessions: 2})
	var s struct{ ID string }
	decode(t, post(t, ts.URL+"/api/sessions", ``).Body, &s)
	_, stop := startStream(t, ts.URL, `{"stream":true,"session_id":"`+s.ID+`","messages":[{"role":"user","content":"count 100000"}]}`)
	defer stop()
	client := &http.Client{Timeout: 2 * time.Second}
	for i := range 4 {
		began := time.Now()
		resp, err := client.Get(ts.URL + "/health")
		if err != nil {
			t.Fatalf("/health while a session generates: %v", err)
		}
		resp.Body.Close()
		// With two sessions at most, each new one evicts the idle one
		// before it, never the one generating.
		resp, err = client.Post(ts.URL+"/api/sessions", "application/json", nil)
		if err != nil {
			t.Fatalf("POST /api/sessions #%d while a session generates: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("POST /api/sessions #%d: %d", i, resp.StatusCode)
		}
		resp, err = client.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatalf("/metrics while a session generates: %v", err)
		}
		resp.Body.Close()
		if d := time.Since(began); d > time.Second {
			t.Errorf("round %d took %v while a session generated", i, d)
		}
	}
	if e.Counters().Active != 1 {
		t.Errorf("the named session's generation stopped: %+v", e.Counters())
	}
}
