package server_test

import (
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
