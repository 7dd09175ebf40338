package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"
)

// TestBalancer runs three webchat replicas (the tiny model, real engine,
// prompt cache on) behind a real HAProxy that hashes the X-Session-Id
// header consistently (deploy/haproxy/haproxy.cfg.tmpl), and shows that
//
//   - every turn of a conversation lands on one replica (X-Smolgo-Replica),
//     so its prompt is found in that replica's caches: the share of prompt
//     tokens reused over the later turns is reported, beside the same
//     conversations balanced round robin;
//   - SIGTERM to a replica with streams running drains it: the streams end
//     whole, the requests that arrive meanwhile are answered by the others
//     (the draining replica says 503 and HAProxy retries elsewhere), and
//     the replica exits 0.
//
// It needs haproxy (apt-get install haproxy), so it runs only with
// SMOLGO_BALANCER=1. docs/serving.md has its figures.
func TestBalancer(t *testing.T) {
	if os.Getenv("SMOLGO_BALANCER") == "" {
		t.Skip("set SMOLGO_BALANCER=1 (and apt-get install haproxy) to run three replicas behind HAProxy")
	}
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("SMOLGO_BALANCER is set but haproxy is not installed: apt-get install haproxy")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "webchat")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	model, err := filepath.Abs(filepath.Join("..", "..", demoModel))
	if err != nil {
		t.Fatal(err)
	}

	// Three replicas.
	var reps []*replica
	for i := range 3 {
		r := startReplica(t, bin, fmt.Sprintf("r%d", i+1), "-model", model, "-threads", "1", "-ctx", "4096", "-slots", "4",
			"-kv", "f32", "-prompt-cache", "268435456", "-drain-timeout", "60s", "-max-tokens", "0")
		reps = append(reps, r)
	}

	// HAProxy, from the template in deploy/.
	tmpl, err := template.ParseFiles(filepath.Join("..", "..", "deploy", "haproxy", "haproxy.cfg.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	front, rr := freeAddr(t), freeAddr(t)
	type server struct{ Name, Addr string }
	data := struct {
		Bind, RoundRobin string
		Servers          []server
	}{Bind: front, RoundRobin: rr}
	for _, r := range reps {
		data.Servers = append(data.Servers, server{r.name, r.addr})
	}
	var cfg bytes.Buffer
	if err := tmpl.Execute(&cfg, data); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	os.WriteFile(cfgPath, cfg.Bytes(), 0o644)
	hp := exec.Command(haproxy, "-db", "-f", cfgPath)
	var hpLog lockedLog
	hp.Stdout, hp.Stderr = &hpLog, &hpLog
	if err := hp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		hp.Process.Kill()
		hp.Wait()
		if t.Failed() {
			t.Logf("haproxy:\n%s", hpLog.String())
		}
	})
	waitFor(t, "haproxy", func() bool {
		code, _, _ := call("http://"+front+"/readyz", "", "", nil)
		return code == 200
	})
	time.Sleep(1500 * time.Millisecond) // health checks: every replica up

	// Conversations: through the affinity frontend, then (other
	// conversations) round robin.
	for _, tc := range []struct {
		name, addr string
		pinned     bool
	}{{"consistent hash on X-Session-Id", front, true}, {"round robin", rr, false}} {
		var prompt, cached int
		scattered := 0
		const convs, turns = 9, 4
		for c := range convs {
			key := fmt.Sprintf("%s-conversation-%d", strings.Fields(tc.name)[0], c)
			msgs := []map[string]any{{"role": "system", "content": fmt.Sprintf("You are assistant number %d. ", c) + strings.Repeat("Answer briefly, kindly and precisely. ", 12)}}
			seen := map[string]bool{}
			for turn := range turns {
				msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("Question %d of conversation %s: what next?", turn, key)})
				body := map[string]any{"messages": msgs, "max_tokens": 24, "temperature": 0, "prompt_cache_key": key,
					"chat_template_kwargs": map[string]any{"enable_thinking": false}}
				code, hdr, out := call("http://"+tc.addr+"/v1/chat/completions", key, "", body)
				if code != 200 {
					t.Fatalf("%s: %s turn %d: status %d: %s", tc.name, key, turn, code, out)
				}
				var resp struct {
					Choices []struct {
						Message struct{ Content string } `json:"message"`
					} `json:"choices"`
					Usage struct {
						PromptTokens        int `json:"prompt_tokens"`
						PromptTokensDetails struct {
							CachedTokens int `json:"cached_tokens"`
						} `json:"prompt_tokens_details"`
					} `json:"usage"`
				}
				json.Unmarshal(out, &resp)
				msgs = append(msgs, map[string]any{"role": "assistant", "content": resp.Choices[0].Message.Content})
				seen[hdr.Get("X-Smolgo-Replica")] = true
				if turn > 0 {
					prompt += resp.Usage.PromptTokens
					cached += resp.Usage.PromptTokensDetails.CachedTokens
				}
			}
			if len(seen) > 1 {
				scattered++
			}
		}
		rate := float64(cached) / float64(prompt)
		t.Logf("%s: %d conversations × %d turns; turns 2-%d reused %d of %d prompt tokens (%.1f%%); %d conversations moved between replicas",
			tc.name, convs, turns, turns, cached, prompt, 100*rate, scattered)
		if tc.pinned && (scattered != 0 || rate < 0.8) {
			t.Errorf("%s: hit rate %.2f, %d conversations moved: want every conversation on one replica and most of its prompt reused", tc.name, rate, scattered)
		}
	}

	// Drain: streams on the replica that SIGTERM stops, and beside it.
	// The random-weight model ends its answers at random: forbid its end
	// tokens, so that every stream runs to max_tokens.
	noEnd := map[string]float64{}
	for _, tok := range []string{"<|im_end|>", "<|end_of_text|>"} {
		noEnd[fmt.Sprint(tokenID(t, reps[0].addr, tok))] = -100
	}
	victim := reps[1]
	var onVictim, elsewhere []string
	for k := 0; len(onVictim) < 3 || len(elsewhere) < 3; k++ {
		key := fmt.Sprintf("drain-%d", k)
		_, hdr, _ := call("http://"+front+"/v1/chat/completions", key, "", map[string]any{
			"messages": []map[string]any{{"role": "user", "content": "hi"}}, "max_tokens": 1})
		if hdr.Get("X-Smolgo-Replica") == victim.name {
			onVictim = append(onVictim, key)
		} else {
			elsewhere = append(elsewhere, key)
		}
	}
	keys := append(onVictim[:3], elsewhere[:3]...)
	const streamTokens = 2500
	type streamResult struct {
		key, replica, finish string
		chunks               int
		done, errEvent       bool
		err                  error
	}
	results := make([]streamResult, len(keys))
	var started, finished sync.WaitGroup
	for i, key := range keys {
		started.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			res := &results[i]
			res.key = key
			body, _ := json.Marshal(map[string]any{"stream": true, "max_tokens": streamTokens, "temperature": 0.8, "seed": i,
				"logit_bias":           noEnd,
				"chat_template_kwargs": map[string]any{"enable_thinking": false},
				"messages":             []map[string]any{{"role": "user", "content": "Tell me a long story, number " + key}}})
			req, _ := http.NewRequest("POST", "http://"+front+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("X-Session-Id", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				res.err = err
				started.Done()
				return
			}
			defer resp.Body.Close()
			res.replica = resp.Header.Get("X-Smolgo-Replica")
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			first := true
			for sc.Scan() {
				line, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				if first {
					started.Done()
					first = false
				}
				if line == "[DONE]" {
					res.done = true
					continue
				}
				var ev struct {
					Error   any `json:"error"`
					Choices []struct {
						FinishReason *string `json:"finish_reason"`
					} `json:"choices"`
				}
				json.Unmarshal([]byte(line), &ev)
				if ev.Error != nil {
					res.errEvent = true
				}
				for _, c := range ev.Choices {
					res.chunks++
					if c.FinishReason != nil {
						res.finish = *c.FinishReason
					}
				}
			}
			res.err = sc.Err()
			if first {
				started.Done()
			}
		}()
	}
	started.Wait()
	term := time.Now()
	victim.cmd.Process.Signal(syscall.SIGTERM)

	// New requests while it drains, half of them for its keys: all answered.
	var during, refused int
	servedBy := map[string]int{}
	for !victim.exited() && time.Since(term) < 60*time.Second {
		for _, key := range []string{onVictim[during%3], elsewhere[during%3]} {
			code, hdr, out := call("http://"+front+"/v1/chat/completions", key, "", map[string]any{
				"messages": []map[string]any{{"role": "user", "content": "quick one"}}, "max_tokens": 4})
			during++
			if code != 200 {
				refused++
				t.Errorf("during the drain: %s got %d: %s", key, code, out)
			}
			servedBy[hdr.Get("X-Smolgo-Replica")]++
		}
		time.Sleep(50 * time.Millisecond)
	}
	finished.Wait()
	exitErr := victim.wait(30 * time.Second)
	drained := time.Since(term)

	whole := 0
	for _, r := range results {
		ok := r.err == nil && r.done && !r.errEvent && r.finish == "length"
		if ok {
			whole++
		}
		if !ok {
			t.Errorf("stream %s on %s: finish %q, [DONE] %v, error event %v, %d chunks, err %v", r.key, r.replica, r.finish, r.done, r.errEvent, r.chunks, r.err)
		}
	}
	if exitErr != nil {
		t.Errorf("the drained replica: %v", exitErr)
	}
	if servedBy[victim.name] > 0 {
		t.Errorf("the draining replica answered %d new requests", servedBy[victim.name])
	}
	t.Logf("drain: SIGTERM to %s with %d of %d streams (%d tokens each) on it; %d of %d streams ended whole; %d requests during the drain, %d refused, served by %v; the replica exited %v after SIGTERM (status %v)",
		victim.name, len(onVictim[:3]), len(keys), streamTokens, whole, len(keys), during, refused, servedBy, drained.Round(10*time.Millisecond), exitErr)
}

// replica is a webchat process.
type replica struct {
	name, addr string
	cmd        *exec.Cmd
	log        *lockedLog
	done       chan error
}

func startReplica(t *testing.T, bin, name string, args ...string) *replica {
	t.Helper()
	r := &replica{name: name, log: &lockedLog{}, done: make(chan error, 1)}
	r.cmd = exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-replica-id", name}, args...)...)
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), " at http://"); ok {
				a, _, _ := strings.Cut(rest, "/")
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if !r.exited() {
			r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("%s:\n%s", name, r.log.String())
		}
	})
	select {
	case r.addr = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start:\n%s", name, r.log.String())
	}
	waitFor(t, name, func() bool {
		code, _, _ := call("http://"+r.addr+"/readyz", "", "", nil)
		return code == 200
	})
	return r
}

// exited reports whether the process has ended (keeping its status for
// wait).
func (r *replica) exited() bool {
	select {
	case err := <-r.done:
		r.done <- err
		return true
	default:
		return false
	}
}

func (r *replica) wait(d time.Duration) error {
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(d):
		return fmt.Errorf("still running %v later", d)
	}
}

// call sends body (GET without one) with the affinity header key and
// returns the status, headers and body; a failed request is status 0.
func call(url, key, _ string, body any) (int, http.Header, []byte) {
	method := "GET"
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		method, rd = "POST", bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if key != "" {
		req.Header.Set("X-Session-Id", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

// tokenID is the id of a special token of the served model.
func tokenID(t *testing.T, addr, text string) int {
	t.Helper()
	code, _, out := call("http://"+addr+"/tokenize", "", "", map[string]any{"content": text, "parse_special": true})
	var r struct{ Tokens []int }
	if json.Unmarshal(out, &r); code != 200 || len(r.Tokens) != 1 {
		t.Fatalf("tokenize %q: %d %s", text, code, out)
	}
	return r.Tokens[0]
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("%s: not ready after 30 s", what)
}

// lockedLog collects a process's output.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
