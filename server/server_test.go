package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func start(t *testing.T, e server.Engine, cfg server.Config) *httptest.Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.Sampler == (sample.Config{}) {
		cfg.Sampler = sample.SmolLM3Defaults() // what examples/webchat serves with
	}
	ts := httptest.NewServer(server.New(e, cfg))
	t.Cleanup(ts.Close)
	return ts
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decode(t *testing.T, r io.Reader, v any) {
	t.Helper()
	if err := json.NewDecoder(r).Decode(v); err != nil {
		t.Fatalf("decoding response: %v", err)
	}
}

type apiErr struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// sseEvents reads a whole SSE body and returns the data payloads, checking
// that every event is exactly "data: ...\n\n".
func sseEvents(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	expectBlank := false
	for sc.Scan() {
		line := sc.Text()
		if expectBlank {
			if line != "" {
				t.Fatalf("event not followed by a blank line: %q", line)
			}
			expectBlank = false
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line is not an SSE data line: %q", line)
		}
		out = append(out, data)
		expectBlank = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type chunk struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		Index int `json:"index"`
		Delta struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role             string  `json:"role"`
			Content          string  `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usage `json:"usage"`
}

func TestChatCompletionNonStreaming(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	body := `{"model":"fake-smollm3","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello there"}]}`
	resp := post(t, ts.URL+"/v1/chat/completions", body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var c completion
	decode(t, resp.Body, &c)
	if !strings.HasPrefix(c.ID, "chatcmpl-") || c.Object != "chat.completion" || c.Model != "fake-smollm3" || c.Created == 0 {
		t.Errorf("envelope: %+v", c)
	}
	if len(c.Choices) != 1 {
		t.Fatalf("%d choices", len(c.Choices))
	}
	ch := c.Choices[0]
	if ch.Message.Role != "assistant" || ch.Message.Content != "You said: hello there" || ch.FinishReason != "stop" {
		t.Errorf("choice: %+v", ch)
	}
	if ch.Message.ReasoningContent == nil || *ch.Message.ReasoningContent != "The user wrote 2 words. I will echo them back." {
		t.Errorf("reasoning_content: %v", ch.Message.ReasoningContent)
	}
	u := c.Usage
	if u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("usage: %+v", u)
	}
	if u.CompletionTokensDetails.ReasoningTokens == 0 || u.CompletionTokensDetails.ReasoningTokens >= u.CompletionTokens {
		t.Errorf("reasoning tokens: %+v", u)
	}

	// The same conversation one turn later reuses the slot's cache.
	body2 := `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello there"},` +
		`{"role":"assistant","content":"You said: hello there"},{"role":"user","content":[{"type":"text","text":"again"}]}],` +
		`"chat_template_kwargs":{"enable_thinking":false}}`
	var c2 completion
	decode(t, post(t, ts.URL+"/v1/chat/completions", body2).Body, &c2)
	if c2.Usage.PromptTokensDetails.CachedTokens == 0 {
		t.Errorf("second turn cached no tokens: %+v", c2.Usage)
	}
	if c2.Choices[0].Message.ReasoningContent != nil || c2.Choices[0].Message.Content != "You said: again" {
		t.Errorf("thinking off: %+v", c2.Choices[0].Message)
	}
}

func TestChatCompletionStreaming(t *testing.T) {
	ts := start(t, &servertest.Engine{}, server.Config{})
	body := `{"messages":[{"role":"user","content":"one two three"}],"stream":true,"stream_options":{"include_usage":true}}`
	resp := post(t, ts.URL+"/v1/chat/completions", body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := sseEvents(t, resp.Body)
	if len(events) < 5 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("events: %q", events)
	}
	var chunks []chunk
	for _, ev := range events[:len(events)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("chunk %q: %v", ev, err)
		}
		chunks = append(chunks, c)
	}
	first, final, usageChunk := chunks[0], chunks[len(chunks)-2], chunks[len(chunks)-1]
	if len(first.Choices) != 1 || first.Choices[0].Delta.Role != "assistant" {
		t.Errorf("first chunk has no assistant role: %s", events[0])
	}
	var content, reasoning strings.Builder
	sawContent := false
	for i, c := range chunks {
		if c.ID != first.ID || c.Object != "chat.completion.chunk" || c.Created != first.Created || c.Model != "fake-smollm3" {
			t.Errorf("chunk %d envelope differs: %s", i, events[i])
		}
		if i != len(chunks)-1 && c.Usage != nil {
			t.Errorf("chunk %d carries usage: %s", i, events[i])
		}
		if len(c.Choices) == 0 {
			continue
		}
		d := c.Choices[0].Delta
		if d.ReasoningContent != nil {
			if sawContent {
				t.Errorf("reasoning after content in chunk %d", i)
			}
			reasoning.WriteString(*d.ReasoningContent)
		}
		if d.Content != nil && *d.Content != "" {
			sawContent = true
			content.WriteString(*d.Content)
		}
		if fr := c.Choices[0].FinishReason; fr != nil && i != len(chunks)-2 {
			t.Errorf("finish_reason before the end in chunk %d", i)
		}
	}
	if content.String() != "You said: one two three" || reasoning.String() != "The user wrote 3 words. I will echo them back." {
		t.Errorf("content %q, reasoning %q", content.String(), reasoning.String())
	}
	if fr := final.Choices[0].FinishReason; fr == nil || *fr != "stop" {
		t.Errorf("final chunk: %s", events[len(events)-3])
	}
	if len(usageChunk.Choices) != 0 || usageChunk.Usage == nil || usageChunk.Usage.CompletionTokens == 0 ||
		usageChunk.Usage.TotalTokens != usageChunk.Usage.PromptTokens+usageChunk.Usage.CompletionTokens {
		t.Errorf("usage chunk: %s", events[len(events)-2])
	}
	// The raw usage chunk must say "choices":[] (not null) for strict clients.
	if !strings.Contains(events[len(events)-2], `"choices":[]`) {
		t.Errorf("usage chunk choices not an empty array: %s", events[len(events)-2])
	}
}

func TestStopStringsAndMaxTokens(t *testing.T) {
	ts := start(t, &servertest.Engine{}, server.Config{})
	tests := []struct {
		name, extra, wantContent, wantFinish string
	}{
		{"stop string", `"stop":" 5"`, "1 2 3 4", "stop"},
		{"stop array", `"stop":["zzz"," 3 "]`, "1 2", "stop"},
		{"max_tokens", `"max_tokens":3,"chat_template_kwargs":{"enable_thinking":false}`, "1 2 3 ", "length"},
		{"max_completion_tokens wins", `"max_tokens":1,"max_completion_tokens":2,"chat_template_kwargs":{"enable_thinking":false}`, "1 2 ", "length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"messages":[{"role":"user","content":"count 10"}],` + tc.extra + `}`
			resp := post(t, ts.URL+"/v1/chat/completions", body)
			var c completion
			decode(t, resp.Body, &c)
			if resp.StatusCode != 200 || c.Choices[0].Message.Content != tc.wantContent || c.Choices[0].FinishReason != tc.wantFinish {
				t.Errorf("status %d, content %q finish %q; want %q %q", resp.StatusCode, c.Choices[0].Message.Content, c.Choices[0].FinishReason, tc.wantContent, tc.wantFinish)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	ts := start(t, &servertest.Engine{Context: 100}, server.Config{MaxBodyBytes: 4096})
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, method, path, body string
		status                   int
		param, code              string
	}{
		{"bad json", "POST", "/v1/chat/completions", `{"messages": [`, 400, "", ""},
		{"not an object", "POST", "/v1/chat/completions", `[1,2]`, 400, "", ""},
		{"trailing garbage", "POST", "/v1/chat/completions", `{` + msgs + `} x`, 400, "", ""},
		{"empty body", "POST", "/v1/chat/completions", ``, 400, "", ""},
		{"wrong type", "POST", "/v1/chat/completions", `{` + msgs + `,"temperature":"hot"}`, 400, "temperature", ""},
		{"no messages", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "messages", ""},
		{"bad role", "POST", "/v1/chat/completions", `{"messages":[{"role":"function","content":"x"}]}`, 400, "messages[0].role", ""},
		{"image part", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "messages[0].content[0].image_url", ""},
		{"temperature range", "POST", "/v1/chat/completions", `{` + msgs + `,"temperature":3}`, 400, "temperature", ""},
		{"presence_penalty range", "POST", "/v1/chat/completions", `{` + msgs + `,"presence_penalty":2.5}`, 400, "presence_penalty", ""},
		{"top_p range", "POST", "/v1/chat/completions", `{` + msgs + `,"top_p":0}`, 400, "top_p", ""},
		{"max_tokens zero", "POST", "/v1/chat/completions", `{` + msgs + `,"max_tokens":0}`, 400, "max_tokens", ""},
		{"stop type", "POST", "/v1/chat/completions", `{` + msgs + `,"stop":5}`, 400, "stop", ""},
		{"n", "POST", "/v1/chat/completions", `{` + msgs + `,"n":9}`, 400, "n", ""},
		{"logit_bias key", "POST", "/v1/chat/completions", `{` + msgs + `,"logit_bias":{"x":1}}`, 400, "logit_bias", ""},
		{"logit_bias range", "POST", "/v1/chat/completions", `{` + msgs + `,"logit_bias":{"5":101}}`, 400, "logit_bias", ""},
		{"logit_bias outside the vocabulary", "POST", "/v1/chat/completions", `{` + msgs + `,"logit_bias":{"99999999":1}}`, 400, "logit_bias", ""},
		{"tools", "POST", "/v1/chat/completions", `{` + msgs + `,"tools":[{"type":"function"}]}`, 400, "tools[0]", ""},
		{"stream_options without stream", "POST", "/v1/chat/completions", `{` + msgs + `,"stream_options":{"include_usage":true}}`, 400, "stream_options", ""},
		{"body too large", "POST", "/v1/chat/completions", `{` + msgs + `,"user":"` + strings.Repeat("x", 5000) + `"}`, 413, "", "request_too_large"},
		{"unknown session", "POST", "/v1/chat/completions", `{` + msgs + `,"session_id":"nope"}`, 404, "session_id", "session_not_found"},
		{"wrong method", "GET", "/v1/chat/completions", ``, 405, "", "method_not_allowed"},
		{"unknown path", "GET", "/v1/nothing", ``, 404, "", "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e apiErr
			decode(t, resp.Body, &e)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tc.status, e.Error.Message)
			}
			if e.Error.Message == "" || e.Error.Type == "" {
				t.Errorf("error body without message or type: %+v", e)
			}
			if got := deref(e.Error.Param); got != tc.param {
				t.Errorf("param %q, want %q (%s)", got, tc.param, e.Error.Message)
			}
			if tc.code != "" && deref(e.Error.Code) != tc.code {
				t.Errorf("code %q, want %q", deref(e.Error.Code), tc.code)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestPromptTooLong(t *testing.T) {
	ts := start(t, &servertest.Engine{Context: 64}, server.Config{MaxPromptBytes: 2000})
	long := strings.Repeat("word ", 100)
	tests := []struct {
		name, body, want string
	}{
		{"over the byte limit", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 2001) + `"}]}`, "at most 2000"},
		{"over the context", `{"messages":[{"role":"user","content":"` + long + `"}]}`, "the context holds 64"},
		{"over the context, streaming", `{"stream":true,"messages":[{"role":"user","content":"` + long + `"}]}`, "the context holds 64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, ts.URL+"/v1/chat/completions", tc.body)
			var e apiErr
			decode(t, resp.Body, &e)
			if resp.StatusCode != 400 || deref(e.Error.Code) != "context_length_exceeded" || !strings.Contains(e.Error.Message, tc.want) {
				t.Errorf("status %d, error %+v; want 400 context_length_exceeded mentioning %q", resp.StatusCode, e.Error, tc.want)
			}
		})
	}
}

func TestModelsAndHealth(t *testing.T) {
	ts := start(t, &servertest.Engine{Name: "tiny", Context: 123}, server.Config{})
	resp, err := http.Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
			Created             int64
		} `json:"data"`
	}
	decode(t, resp.Body, &models)
	resp.Body.Close()
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != "tiny" || models.Data[0].Object != "model" || models.Data[0].Created == 0 {
		t.Errorf("models: %+v", models)
	}
	resp, err = http.Get(ts.URL + "/v1/models/tiny")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/models/tiny: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	resp, err = http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	decode(t, resp.Body, &h)
	resp.Body.Close()
	if resp.StatusCode != 200 || h["status"] != "ok" || h["slots_idle"] != 1.0 {
		t.Errorf("health: %d %v", resp.StatusCode, h)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id header")
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startStream posts a streaming request and returns once the first chunk
// arrived, with a function that disconnects the client.
func startStream(t *testing.T, url, body string) (lines *bufio.Reader, disconnect func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		t.Fatalf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	for _, want := range []string{"data: ", "\n"} { // the first event and its blank line
		if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, want) {
			t.Fatalf("first event: %q, %v", line, err)
		}
	}
	return br, func() { cancel(); resp.Body.Close() }
}

func TestClientDisconnectCancelsGeneration(t *testing.T) {
	for _, asError := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancel as error %v", asError), func(t *testing.T) {
			e := &servertest.Engine{TokenDelay: 5 * time.Millisecond, CancelAsError: asError}
			ts := start(t, e, server.Config{Slots: 1})
			_, disconnect := startStream(t, ts.URL, `{"stream":true,"messages":[{"role":"user","content":"count 100000"}]}`)
			waitFor(t, "the generation to run", func() bool { return e.Counters().Active == 1 })
			disconnect()
			waitFor(t, "the engine to see the cancellation", func() bool {
				c := e.Counters()
				return c.Cancelled == 1 && c.Active == 0
			})
			// The slot is free again: a new request runs at once.
			resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"count 3"}]}`)
			if resp.StatusCode != 200 {
				t.Fatalf("after disconnect: status %d", resp.StatusCode)
			}
		})
	}
}

func TestNonStreamingDisconnectCancels(t *testing.T) {
	e := &servertest.Engine{TokenDelay: 5 * time.Millisecond}
	ts := start(t, e, server.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"count 100000"}]}`))
	go func() {
		waitFor(t, "the generation to run", func() bool { return e.Counters().Active == 1 })
		cancel()
	}()
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("request was not cancelled")
	}
	waitFor(t, "the engine to see the cancellation", func() bool { return e.Counters().Cancelled == 1 && e.Counters().Active == 0 })
}

func TestQueueLimits(t *testing.T) {
	e := &servertest.Engine{TokenDelay: 5 * time.Millisecond}
	ts := start(t, e, server.Config{Slots: 1, MaxQueue: 1})
	_, stopA := startStream(t, ts.URL, `{"stream":true,"messages":[{"role":"user","content":"count 100000"}]}`)
	defer stopA()

	// B waits in the queue.
	type result struct {
		status int
		err    error
	}
	bDone := make(chan result, 1)
	go func() {
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"count 2"}]}`))
		if err != nil {
			bDone <- result{err: err}
			return
		}
		resp.Body.Close()
		bDone <- result{status: resp.StatusCode}
	}()
	waitFor(t, "B to be queued", func() bool {
		var h map[string]any
		resp, err := http.Get(ts.URL + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&h)
		return h["queued"] == 1.0
	})

	// C finds the queue full.
	resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`)
	var eb apiErr
	decode(t, resp.Body, &eb)
	if resp.StatusCode != 503 || deref(eb.Error.Code) != "queue_full" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("C: status %d, error %+v, Retry-After %q", resp.StatusCode, eb.Error, resp.Header.Get("Retry-After"))
	}
	if !strings.Contains(eb.Error.Message, "busy") {
		t.Errorf("message does not say the model is busy: %q", eb.Error.Message)
	}

	// When A leaves, B runs.
	stopA()
	select {
	case r := <-bDone:
		if r.err != nil || r.status != 200 {
			t.Fatalf("B: %v %d", r.err, r.status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B never ran")
	}
	if c := e.Counters(); c.MaxActive != 1 || c.Overlaps != 0 {
		t.Errorf("counters %+v: want one generation at a time", c)
	}
}

func TestSessions(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	resp := post(t, ts.URL+"/api/sessions", ``)
	var s struct{ ID string }
	decode(t, resp.Body, &s)
	if resp.StatusCode != 201 || s.ID == "" {
		t.Fatalf("create session: %d %+v", resp.StatusCode, s)
	}
	turn1 := `{"session_id":"` + s.ID + `","messages":[{"role":"user","content":"first"}]}`
	var c1 completion
	decode(t, post(t, ts.URL+"/v1/chat/completions", turn1).Body, &c1)
	// A stateless request in between uses the slot's session, not ours.
	post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"other"}]}`)
	turn2 := `{"session_id":"` + s.ID + `","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"You said: first"},{"role":"user","content":"second"}]}`
	var c2 completion
	decode(t, post(t, ts.URL+"/v1/chat/completions", turn2).Body, &c2)
	if c2.Usage.PromptTokensDetails.CachedTokens < c1.Usage.PromptTokens-1 {
		t.Errorf("session lost its cache: turn 1 prompt %d, turn 2 cached %d", c1.Usage.PromptTokens, c2.Usage.PromptTokensDetails.CachedTokens)
	}

	req, _ := http.NewRequest("DELETE", ts.URL+"/api/sessions/"+s.ID, nil)
	dr, err := http.DefaultClient.Do(req)
	if err != nil || dr.StatusCode != 204 {
		t.Fatalf("delete: %v %v", err, dr.Status)
	}
	resp = post(t, ts.URL+"/v1/chat/completions", turn1)
	if resp.StatusCode != 404 {
		t.Errorf("deleted session still usable: %d", resp.StatusCode)
	}
}

func TestSessionBusy(t *testing.T) {
	e := &servertest.Engine{TokenDelay: 5 * time.Millisecond}
	ts := start(t, e, server.Config{Slots: 2, SessionWait: 50 * time.Millisecond})
	var s struct{ ID string }
	decode(t, post(t, ts.URL+"/api/sessions", ``).Body, &s)
	_, stop := startStream(t, ts.URL, `{"stream":true,"session_id":"`+s.ID+`","messages":[{"role":"user","content":"count 100000"}]}`)
	defer stop()
	resp := post(t, ts.URL+"/v1/chat/completions", `{"session_id":"`+s.ID+`","messages":[{"role":"user","content":"x"}]}`)
	var eb apiErr
	decode(t, resp.Body, &eb)
	if resp.StatusCode != 409 || deref(eb.Error.Code) != "session_busy" {
		t.Errorf("second generation on a busy session: %d %+v", resp.StatusCode, eb.Error)
	}
}

func TestGracefulShutdown(t *testing.T) {
	e := &servertest.Engine{TokenDelay: 5 * time.Millisecond}
	srv := server.New(e, server.Config{ShutdownGrace: 100 * time.Millisecond, Logger: quietLogger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()

	// A short stream finishes within the grace period; a long one is cut.
	var wg sync.WaitGroup
	var rest []byte
	var readErr error
	lines, closeLong := startStream(t, url, `{"stream":true,"messages":[{"role":"user","content":"count 100000"}]}`)
	defer closeLong()
	wg.Add(1)
	go func() {
		defer wg.Done()
		rest, readErr = io.ReadAll(lines)
	}()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	wg.Wait()
	if readErr != nil {
		t.Fatalf("reading the cut stream: %v", readErr)
	}
	longEvents := sseEvents(t, strings.NewReader(string(rest)))
	n := len(longEvents)
	if n < 2 || longEvents[n-1] != "[DONE]" || !strings.Contains(longEvents[n-2], `"shutting_down"`) {
		t.Errorf("cut stream did not end with an error event and [DONE]: %q", longEvents[max(0, n-3):])
	}
	if c := e.Counters(); c.Active != 0 || c.Cancelled != 1 {
		t.Errorf("engine after shutdown: %+v", c)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("server still accepts connections after shutdown")
	}
}

func TestWebPage(t *testing.T) {
	ts := start(t, &servertest.Engine{}, server.Config{})
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/", "text/html", `<script src="app.js"`},
		{"/app.js", "text/javascript", "SafeMarkdown.render"},
		{"/markdown.js", "text/javascript", "createTextNode"},
		{"/style.css", "text/css", ".markdown pre"},
	} {
		resp, err := http.Get(ts.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(b), tc.contains) {
			t.Errorf("GET %s: %d %q, body has %q: %v", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.contains, strings.Contains(string(b), tc.contains))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: weak or no CSP %q", tc.path, csp)
		}
		// Model text must never reach an HTML parser.
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", tc.path, bad)
			}
		}
	}
	// The API alone: no page.
	api := start(t, &servertest.Engine{}, server.Config{DisableUI: true})
	resp, err := http.Get(api.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("DisableUI: GET / is %d", resp.StatusCode)
	}
}

// A conversation whose client hung up is usable again at once: the next
// request waits for the old generation to wind down instead of failing.
func TestSessionReuseRightAfterHangUp(t *testing.T) {
	e := &servertest.Engine{TokenDelay: 5 * time.Millisecond}
	ts := start(t, e, server.Config{})
	var s struct{ ID string }
	decode(t, post(t, ts.URL+"/api/sessions", ``).Body, &s)
	for i := range 3 {
		_, hangUp := startStream(t, ts.URL, `{"stream":true,"session_id":"`+s.ID+`","messages":[{"role":"user","content":"count 100000"}]}`)
		hangUp()
		resp := post(t, ts.URL+"/v1/chat/completions", `{"session_id":"`+s.ID+`","messages":[{"role":"user","content":"count 3"}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("round %d: request right after a hang-up: status %d", i, resp.StatusCode)
		}
	}
	if c := e.Counters(); c.Cancelled != 3 || c.Overlaps != 0 {
		t.Errorf("counters %+v", c)
	}
}

func httpGet(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func TestCrossOriginRequestsRefused(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	for _, tc := range []struct {
		origin string
		status int
	}{
		{"http://evil.example", 403},
		{"null", 403},
		{ts.URL, 200}, // the chat page itself
		{"", 200},     // API clients send no Origin
	} {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "text/plain")
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Origin %q: status %d, want %d", tc.origin, resp.StatusCode, tc.status)
		}
	}
	if c := e.Counters(); c.Calls != 2 {
		t.Errorf("engine ran %d generations, want 2", c.Calls)
	}
}

func TestLoopbackServerRefusesOtherHosts(t *testing.T) {
	srv := server.New(&servertest.Engine{}, server.Config{Logger: quietLogger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"127.0.0.1:" + port, 200},
		{"localhost:" + port, 200},
		{"localhost", 200},
		{"[::1]:" + port, 200},
		{"evil.example:" + port, 403},
		{"192.168.1.10:" + port, 403},
	} {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/health", nil)
		req.Host = tc.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Host %q: status %d, want %d", tc.host, resp.StatusCode, tc.status)
		}
	}
}

// Issue 39's real clients: the server has one model and every endpoint
// serves it under any name, as llama-server does (LangChain's
// OpenAIEmbeddings sends text-embedding-3-small, the AI SDK
// rerank-english-v3.0, Codex its own default), GET /v1/models/{name}
// included. With ModelAliases set, only those names and the engine's are
// served.
func TestModelNames(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}],"max_tokens":2`
	any := start(t, &servertest.Engine{Name: "smol"}, server.Config{})
	strict := start(t, &servertest.Engine{Name: "smol"}, server.Config{ModelAliases: []string{"gpt-4o"}})
	for _, c := range []struct {
		url, method, path, body string
		status                  int
	}{
		{any.URL, "GET", "/v1/models/gpt-4", ``, 200},
		{any.URL, "GET", "/v1/models/smol", ``, 200},
		{any.URL, "POST", "/v1/chat/completions", `{"model":"gpt-5-codex",` + msgs + `}`, 200},
		{any.URL, "POST", "/v1/responses", `{"model":"gpt-5-codex","input":"hi","max_output_tokens":2}`, 200},
		{any.URL, "POST", "/v1/messages", `{"model":"claude-x",` + msgs + `}`, 200},
		{strict.URL, "GET", "/v1/models/gpt-4", ``, 404},
		{strict.URL, "GET", "/v1/models/gpt-4o", ``, 200},
		{strict.URL, "POST", "/v1/chat/completions", `{"model":"gpt-4",` + msgs + `}`, 404},
		{strict.URL, "POST", "/v1/chat/completions", `{"model":"gpt-4o",` + msgs + `}`, 200},
		{strict.URL, "POST", "/v1/responses", `{"model":"gpt-4","input":"hi"}`, 404},
		{strict.URL, "POST", "/v1/messages", `{"model":"claude-x",` + msgs + `}`, 404},
		{strict.URL, "POST", "/v1/completions", `{"model":"gpt-4","prompt":"hi"}`, 404},
	} {
		req, _ := http.NewRequest(c.method, c.url+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s %s (aliases %v): %d %.200s, want %d", c.method, c.path, c.body, c.url == strict.URL, resp.StatusCode, b, c.status)
		}
		if c.status == 200 && c.method == "GET" && !strings.Contains(string(b), `"id":"smol"`) {
			t.Errorf("GET %s: %s, want the served model", c.path, b)
		}
	}
}
