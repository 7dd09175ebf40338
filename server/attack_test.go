package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// The attack findings of issue 30 that the server answers; the grammar's
// and the engine's have their tests in those packages.

// TestTokenizeTakesASlot: /tokenize and /detokenize wait in the
// generations' line (16 requests of 1 MB were 24 CPU-seconds beside it),
// and their input is bounded.
func TestTokenizeTakesASlot(t *testing.T) {
	e := &servertest.Engine{TokenDelay: 20 * time.Millisecond}
	ts := start(t, e, server.Config{Slots: 1, MaxQueue: -1, MaxPromptBytes: 1000})
	_, disconnect := startStream(t, ts.URL, `{"stream":true,"messages":[{"role":"user","content":"count 1000"}]}`)
	defer disconnect()
	waitFor(t, "the generation to run", func() bool { return e.Counters().Active == 1 })
	for _, tc := range []struct{ path, body string }{
		{"/tokenize", `{"content":"hello"}`},
		{"/detokenize", `{"tokens":[104]}`},
		{"/apply-template", `{"messages":[{"role":"user","content":"hi"}]}`},
	} {
		resp := post(t, ts.URL+tc.path, tc.body)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s with every slot busy and no queue: status %d, want 503", tc.path, resp.StatusCode)
		}
	}
	resp := post(t, ts.URL+"/tokenize", `{"content":"`+strings.Repeat("x", 1001)+`"}`)
	var e4 apiErr
	decode(t, resp.Body, &e4)
	if resp.StatusCode != http.StatusBadRequest || deref(e4.Error.Param) != "content" {
		t.Errorf("content over the bound: status %d, %+v", resp.StatusCode, e4.Error)
	}
}

// TestSessionsSurviveACreationLoop: creating sessions in a loop evicts the
// ones never used, not the conversations people are having.
func TestSessionsSurviveACreationLoop(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{MaxSessions: 4})
	newSession := func() (string, int) {
		resp := post(t, ts.URL+"/api/sessions", `{}`)
		var s struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&s)
		return s.ID, resp.StatusCode
	}
	var kept []string
	for range 3 {
		id, _ := newSession()
		if resp := post(t, ts.URL+"/v1/chat/completions", `{"session_id":"`+id+`","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
			t.Fatalf("chat in a new session: %d", resp.StatusCode)
		}
		kept = append(kept, id)
	}
	refused := 0
	for range 20 {
		if _, status := newSession(); status != http.StatusCreated {
			refused++
		}
	}
	for _, id := range kept {
		resp := post(t, ts.URL+"/v1/chat/completions", `{"session_id":"`+id+`","messages":[{"role":"user","content":"again"}]}`)
		if resp.StatusCode != 200 {
			t.Errorf("session %s after the loop: status %d", id, resp.StatusCode)
		}
	}
	if refused != 0 {
		t.Errorf("%d of the loop's sessions refused; the unused ones make room for each other", refused)
	}
}

// TestLogitBias: logit_bias is applied (-100 bans a token), not ignored.
func TestLogitBias(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	ids, _ := e.Tokenize("You ", false)
	for _, tc := range []struct{ bias, want string }{
		{``, "You "},
		{fmt.Sprintf(`,"logit_bias":{"%d":-100}`, ids[0]), ""}, // anything else
	} {
		resp := post(t, ts.URL+"/v1/chat/completions", `{"max_tokens":1,"chat_template_kwargs":{"enable_thinking":false},"messages":[{"role":"user","content":"hi"}]`+tc.bias+`}`)
		var c toolCompletion
		text := readAll(t, resp)
		json.Unmarshal([]byte(text), &c)
		if len(c.Choices) != 1 || c.Choices[0].Message.Content == "You " != (tc.bias == "") {
			t.Errorf("bias %s: %s", tc.bias, text)
		}
	}
}
