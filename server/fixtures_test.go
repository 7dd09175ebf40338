package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// TestClientFixtures replays the requests the real clients sent
// (testdata/clients, recorded by TestRealClients with SMOLGO_RECORD=1)
// against the echo engine: every one must be accepted, and every answer
// must be what the client's own SDK reads (the Go SDKs' types and stream
// accumulators stand in for the clients'). Later requests that refer to
// stored responses get the replay's ids.
func TestClientFixtures(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "clients", "*"))
	if len(dirs) == 0 {
		t.Fatal("no fixtures in testdata/clients")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			e := &servertest.Engine{Name: "fake-echo", Context: 65536}
			ts := start(t, e, server.Config{DefaultMaxTokens: 256})
			ids := map[string]string{} // recorded id → the replay's
			for _, file := range files {
				raw, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				var f fixture
				if err := json.Unmarshal(raw, &f); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				body := string(f.Body)
				for old, new := range ids {
					body = strings.ReplaceAll(body, old, new)
				}
				resp := post(t, ts.URL+f.Path, body)
				text := readAll(t, resp)
				name := filepath.Base(file)
				if resp.StatusCode != 200 {
					t.Errorf("%s: status %d: %s", name, resp.StatusCode, tail(text, 500))
					continue
				}
				var req struct{ Stream bool }
				json.Unmarshal(f.Body, &req)
				checkAnswer(t, name, f.Path, req.Stream, text)
				old, new := uniqueIDs(f.Response), uniqueIDs(text)
				if len(old) == len(new) {
					for i := range old {
						ids[old[i]] = new[i]
					}
				}
			}
			t.Logf("%d requests replayed", len(files))
		})
	}
}

// uniqueIDs lists the stored-response ids in s, each once, in order.
func uniqueIDs(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range storedID.FindAllString(s, -1) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// checkAnswer reads an answer with the Go SDK of its API.
func checkAnswer(t *testing.T, name, path string, stream bool, text string) {
	t.Helper()
	fail := func(format string, args ...any) { t.Errorf(name+": "+format, args...) }
	switch {
	case path == "/v1/responses" && stream:
		var acc responses.ResponseAccumulator
		parts := partTracker{}
		for _, d := range sseData(t, text) {
			checkResponseEvent(t, d)
			parts.check(t, d)
			var ev responses.ResponsesServerEventUnion
			if err := json.Unmarshal([]byte(d), &ev); err != nil {
				fail("%v: %s", err, d)
				return
			}
			if err := acc.AddEvent(ev); err != nil {
				fail("the Go SDK's accumulator: %v", err)
			}
		}
		if acc.Snapshot().TerminalEvent == "" {
			fail("no final event: %s", tail(text, 300))
		}
	case path == "/v1/responses":
		var r responses.Response
		if err := json.Unmarshal([]byte(text), &r); err != nil || len(r.Output) == 0 {
			fail("%v: %s", err, tail(text, 300))
		}
	case path == "/v1/messages" && stream:
		var msg anthropic.Message
		for _, d := range sseData(t, text) {
			var ev anthropic.MessageStreamEventUnion
			if err := json.Unmarshal([]byte(d), &ev); err != nil {
				fail("%v: %s", err, d)
				return
			}
			if err := msg.Accumulate(ev); err != nil {
				fail("the Go SDK's Accumulate: %v (%s)", err, d)
				return
			}
		}
		if msg.StopReason == "" {
			fail("no stop reason: %s", tail(text, 300))
		}
	case path == "/v1/messages":
		var m anthropic.Message
		if err := json.Unmarshal([]byte(text), &m); err != nil || m.StopReason == "" {
			fail("%v: %s", err, tail(text, 300))
		}
	case path == "/v1/messages/count_tokens":
		var c struct {
			InputTokens int `json:"input_tokens"`
		}
		if json.Unmarshal([]byte(text), &c); c.InputTokens == 0 {
			fail("%s", text)
		}
	case path == "/v1/chat/completions" && stream:
		var acc openai.ChatCompletionAccumulator
		for _, d := range sseData(t, text) {
			if d == "[DONE]" {
				continue
			}
			var c openai.ChatCompletionChunk
			if err := json.Unmarshal([]byte(d), &c); err != nil {
				fail("%v: %s", err, d)
				return
			}
			acc.AddChunk(c)
		}
		if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
			fail("no finished choice: %s", tail(text, 300))
		}
	case path == "/v1/chat/completions":
		var c openai.ChatCompletion
		if err := json.Unmarshal([]byte(text), &c); err != nil || len(c.Choices) == 0 {
			fail("%v: %s", err, tail(text, 300))
		}
	}
}
