package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/server"
)

// With a model-wide prompt cache (engine.WithPromptCache), a request in a
// fresh session reuses the system prompt another session computed, and
// usage.prompt_tokens_details.cached_tokens says so.
func TestPromptCacheAcrossSessions(t *testing.T) {
	e := tinyEngine(t, 1024, engine.WithPromptCache(32<<20))
	ts := start(t, e, server.Config{})
	system := strings.Repeat("You answer briefly and kindly. ", 4) + "/system_override"
	ask := func(session, question string) completion {
		t.Helper()
		body := `{"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"` + question +
			`"}],"max_tokens":2,"chat_template_kwargs":{"enable_thinking":false}` + session + `}`
		resp := post(t, ts.URL+"/v1/chat/completions", body)
		var c completion
		decode(t, resp.Body, &c)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %+v", resp.StatusCode, c)
		}
		return c
	}
	first := ask("", "What is the capital of France?")
	if first.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("first request: usage %+v", first.Usage)
	}
	var sess struct {
		ID string `json:"id"`
	}
	resp := post(t, ts.URL+"/api/sessions", `{}`)
	decode(t, resp.Body, &sess)
	second := ask(`,"session_id":"`+sess.ID+`"`, "Name a prime number.")
	u := second.Usage
	t.Logf("new session, same system prompt: %d of %d prompt tokens cached", u.PromptTokensDetails.CachedTokens, u.PromptTokens)
	if u.PromptTokensDetails.CachedTokens < 80 || u.PromptTokensDetails.CachedTokens >= u.PromptTokens {
		t.Errorf("new session with a shared system prompt: usage %+v, want the system prompt cached", u)
	}
}

// With the prompt cache on disk (engine.WithPromptCacheDir) a restarted
// server's first request reuses what the last one computed, and
// cached_tokens says so.
func TestPromptCacheDiskRestart(t *testing.T) {
	dir := t.TempDir()
	system := strings.Repeat("You answer briefly and kindly. ", 6)
	ask := func(ts string, question string) completion {
		t.Helper()
		body := `{"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"` + question +
			`"}],"max_tokens":2,"chat_template_kwargs":{"enable_thinking":false}}`
		resp := post(t, ts+"/v1/chat/completions", body)
		var c completion
		decode(t, resp.Body, &c)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %+v", resp.StatusCode, c)
		}
		return c
	}
	opts := []engine.Option{engine.WithContext(1024), engine.WithPromptCache(32 << 20), engine.WithPromptCacheDir(dir, 64<<20)}
	m := tinyModel(t, opts...)
	e, _ := server.FromModel(m, server.ModelOptions{Name: "tiny"})
	ts := start(t, e, server.Config{})
	if c := ask(ts.URL, "What is the capital of France?"); c.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Fatalf("cold: %+v", c.Usage)
	}
	ts.Close()
	m.Close() // the snapshot is on disk once the model is closed

	m2 := tinyModel(t, opts...)
	e2, _ := server.FromModel(m2, server.ModelOptions{Name: "tiny"})
	ts2 := start(t, e2, server.Config{})
	u := ask(ts2.URL, "Name a prime number.").Usage
	t.Logf("after a restart: %d of %d prompt tokens read from disk", u.PromptTokensDetails.CachedTokens, u.PromptTokens)
	if u.PromptTokensDetails.CachedTokens < 60 || u.PromptTokensDetails.CachedTokens >= u.PromptTokens {
		t.Errorf("after a restart: usage %+v, want the system prompt from disk", u)
	}
	resp, err := http.Get(ts2.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "smolgo_prompt_cache_disk_hits_total 1") {
		t.Errorf("metrics do not count the disk hit:\n%s", body)
	}
}
