package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/server"
)

// realVocabEngine serves the tiny random-weight SmolLM3 with SmolLM3's real
// vocabulary (golden/realvocab).
func realVocabEngine(t *testing.T, opts ...engine.Option) server.Engine {
	t.Helper()
	m, err := engine.Open(sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf"), append([]engine.Option{engine.WithThreads(2)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := server.FromModel(m, server.ModelOptions{Name: "tiny-realvocab"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestForcedCallNearTheBudget is bug 8: a forced tool call whose budget is
// within a few tokens of the shortest call either completes (tool_calls)
// or is not started (length, no text): never a broken call as text.
func TestForcedCallNearTheBudget(t *testing.T) {
	ts := start(t, realVocabEngine(t), server.Config{})
	tools := `[{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"utc":{"type":"boolean"}},"required":["utc"],"additionalProperties":false}}}]`
	completed, refused := 0, 0
	for maxTokens := 8; maxTokens <= 30; maxTokens++ {
		for seed := range 2 {
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Time?"}],"tools":%s,"tool_choice":"required","seed":%d,"max_tokens":%d}`, tools, seed, maxTokens)
			var c toolCompletion
			resp := post(t, ts.URL+"/v1/chat/completions", body)
			decode(t, resp.Body, &c)
			if resp.StatusCode != 200 || len(c.Choices) != 1 {
				t.Fatalf("max_tokens %d: status %d", maxTokens, resp.StatusCode)
			}
			ch := c.Choices[0]
			switch {
			case ch.FinishReason == "tool_calls" && len(ch.Message.ToolCalls) == 1 && ch.Message.Content == "":
				var args map[string]bool
				if err := json.Unmarshal([]byte(ch.Message.ToolCalls[0].Function.Arguments), &args); err != nil || len(args) != 1 {
					t.Errorf("max_tokens %d seed %d: arguments %q", maxTokens, seed, ch.Message.ToolCalls[0].Function.Arguments)
				}
				completed++
			case ch.FinishReason == "length" && len(ch.Message.ToolCalls) == 0 && ch.Message.Content == "":
				refused++
			default:
				t.Errorf("max_tokens %d seed %d: finish %q, %d calls, content %q", maxTokens, seed, ch.FinishReason, len(ch.Message.ToolCalls), ch.Message.Content)
			}
			if strings.Contains(ch.Message.Content, "tool_call") {
				t.Errorf("max_tokens %d seed %d: a call as text: %q", maxTokens, seed, ch.Message.Content)
			}
		}
	}
	if completed == 0 || refused == 0 {
		t.Errorf("%d calls completed, %d not started: the budgets tried should give both", completed, refused)
	}
}

// TestTruncatedModelFile is the attack's "cp new.gguf model.gguf": the
// file under a loaded model is truncated. A request then fails with an
// error that says what happened, instead of the process dying of SIGBUS,
// and the server keeps answering.
func TestTruncatedModelFile(t *testing.T) {
	src := sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := engine.Open(path, engine.WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if _, err := m.Format().Tokenizer(); err != nil {
		t.Fatal(err)
	}
	e, err := server.FromModel(m, server.ModelOptions{Name: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, e, server.Config{})
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)
	text := readAll(t, resp)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(text, "replace model files with mv") {
		t.Errorf("status %d: %s", resp.StatusCode, text)
	}
	if resp, err := http.Get(ts.URL + "/health"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("health after the fault: %v", err)
	}
}
