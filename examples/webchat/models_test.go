package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

// tinyQ4 is the demo SmolLM3 of testdata/ (or its copy in ../shared).
func tinyQ4(t *testing.T) string {
	path := "../../testdata/smollm3-tinyq-Q4_K_M.gguf"
	if _, err := os.Stat(path); err != nil {
		path = sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// askModel posts body (with "model": model) to path and returns the status
// and the answer.
func askModel(url, path, model, body string) (int, string, error) {
	body = strings.Replace(body, "{", `{"model":"`+model+`",`, 1)
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

const chatBody = `{"messages":[{"role":"user","content":"Hello"}],"max_tokens":4,"chat_template_kwargs":{"enable_thinking":false}}`

// TestSeveralModels serves two chat models and an embedding model from one
// process, named by a directory and by -model NAME=FILE: each answers by
// its name, at the same time as the others.
func TestSeveralModels(t *testing.T) {
	qwen := sharedtest.Path(t, "golden-families/models/qwen3-tiny-Q8_0.gguf")
	smol := tinyQ4(t)
	bge := sharedtest.Path(t, "golden-families/models/bert-tiny-F32.gguf")
	dir := t.TempDir()
	for _, f := range []string{qwen, smol, bge} {
		if err := os.Symlink(f, filepath.Join(dir, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "broken.gguf"), []byte("GGUF but not really"), 0o644) // skipped, with a log line
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a model"), 0o644)           // not looked at

	for _, tc := range []struct {
		name               string
		args               []string
		chat1, chat2, embd string
	}{
		{"models-dir", []string{"-models-dir", dir}, "qwen3-tiny-Q8_0", "smollm3-tinyq-Q4_K_M", "bert-tiny-F32"},
		{"model NAME=FILE", []string{"-model", "qwen=" + qwen, "-model", "smol=" + smol, "-model", "bge=" + bge, "-pin", "bge"},
			"qwen", "smol", "bge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, out := serveOut(t, append(tc.args, "-threads", "1", "-ctx", "2048")...)
			if !strings.Contains(out.String(), "Serving 3 models at") {
				t.Errorf("start-up lines:\n%s", out.String())
			}
			var list struct {
				Data []struct{ ID, Kind, State string }
			}
			if err := json.Unmarshal([]byte(get(t, url+"/v1/models")), &list); err != nil {
				t.Fatal(err)
			}
			kinds := map[string]string{}
			for _, m := range list.Data {
				kinds[m.ID] = m.Kind
			}
			if want := map[string]string{tc.chat1: "chat", tc.chat2: "chat", tc.embd: "embedding"}; fmt.Sprint(kinds) != fmt.Sprint(want) {
				t.Errorf("/v1/models kinds %v; want %v", kinds, want)
			}

			var wg sync.WaitGroup
			for _, q := range []struct{ path, model, body, want string }{
				{"/v1/chat/completions", tc.chat1, chatBody, `"object":"chat.completion"`},
				{"/v1/chat/completions", tc.chat2, chatBody, `"object":"chat.completion"`},
				{"/v1/embeddings", tc.embd, `{"input":["Hello world","Bonjour"]}`, `"object":"embedding"`},
				{"/v1/chat/completions", tc.chat1, chatBody, `"object":"chat.completion"`},
				{"/v1/messages", tc.chat2, `{"max_tokens":4,"messages":[{"role":"user","content":"Hi"}]}`, `"type":"message"`},
			} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					status, body, err := askModel(url, q.path, q.model, q.body)
					if err != nil || status != 200 || !strings.Contains(body, q.want) || !strings.Contains(body, `"model":"`+q.model+`"`) {
						t.Errorf("%s %s: %d %v %s", q.path, q.model, status, err, body[:min(len(body), 300)])
					}
				}()
			}
			wg.Wait()
			if status, body, _ := askModel(url, "/v1/chat/completions", tc.embd, chatBody); status != 400 || !strings.Contains(body, "embedding model") {
				t.Errorf("chat with the embedding model: %d %s", status, body)
			}
			if status, body, _ := askModel(url, "/v1/chat/completions", "gpt-4o", chatBody); status != 404 || !strings.Contains(body, "model_not_found") {
				t.Errorf("an unknown model: %d %s", status, body)
			}
		})
	}
}

// TestSeveralModelsFlags checks how webchat reads the flags of several
// models, and what it says when they are wrong.
func TestSeveralModelsFlags(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.gguf")
	os.WriteFile(junk, []byte("nope"), 0o644)
	smol := tinyQ4(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-models-dir", "/does/not/exist"}, 2, "-models-dir: open /does/not/exist"},
		{[]string{"-models-dir", dir}, 1, "no model to serve: no supported GGUF file"},
		{[]string{"-model", "a=" + junk}, 1, "-model " + junk + ": "},
		{[]string{"-model", "a=" + smol, "-model", "a=" + smol}, 2, "two models are named a"},
		{[]string{"-model", "a=" + smol, "-pin", "b"}, 1, "-pin b: no such model (the models are a)"},
		{[]string{"-fake", "-models-dir", dir}, 2, "-fake serves one echo engine"},
		{[]string{"-model", "a=" + smol, "-kv", "q4"}, 2, "-kv:"},
		{[]string{"-model", "a=" + smol, "-models-mem", "1000", "-pin", "a"}, 2, "the pinned models' files take 1.9 MiB, more than the memory bound"},
	}
	for _, tc := range tests {
		var out, errOut syncBuffer
		if code := run(context.Background(), append(tc.args, "-addr", "127.0.0.1:0"), &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", tc.args, code, tc.code, errOut.String(), tc.want)
		}
	}
	// A file whose name has an "=" is still a file.
	eq := filepath.Join(dir, "a=b.gguf")
	if err := os.Symlink(smol, eq); err != nil {
		t.Fatal(err)
	}
	if routerMode([]string{eq}, "") {
		t.Errorf("-model %s (an existing file) was read as NAME=FILE", eq)
	}
	if !routerMode([]string{"x=" + eq}, "") || !routerMode([]string{smol, smol}, "") || !routerMode(nil, dir) || routerMode([]string{smol}, "") {
		t.Error("routerMode")
	}
}

// TestSeveralModelsUnderTraffic asks three real models at once from four
// clients while a memory bound that holds two of them, and the idle TTL,
// keep loading and unloading them: every request is answered by the model
// it names. (With -race it also checks the real engines' Close against
// requests in flight.)
func TestSeveralModelsUnderTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("several seconds of traffic")
	}
	qwen := sharedtest.Path(t, "golden-families/models/qwen3-tiny-Q8_0.gguf")
	llama := sharedtest.Path(t, "golden-families/models/llama32-tiny-Q4_K_M.gguf")
	bge := sharedtest.Path(t, "golden-families/models/bert-tiny-F32.gguf")
	// bge's 3.9 MiB and one chat model fit under 5 MiB, not all three.
	url, _ := serveOut(t, "-model", "qwen="+qwen, "-model", "llama="+llama, "-model", "bge="+bge,
		"-models-mem", "5242880", "-models-ttl", "1ms", "-prompt-cache", "0", "-threads", "1", "-ctx", "1024")
	queries := []struct{ path, model, body, want string }{
		{"/v1/chat/completions", "qwen", chatBody, `"object":"chat.completion"`},
		{"/v1/chat/completions", "llama", chatBody, `"object":"chat.completion"`},
		{"/v1/embeddings", "bge", `{"input":"Hello world"}`, `"object":"embedding"`},
	}
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	asked := 0
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; time.Now().Before(deadline); i++ {
				q := queries[i%len(queries)]
				status, body, err := askModel(url, q.path, q.model, q.body)
				if err != nil || status != 200 || !strings.Contains(body, q.want) || !strings.Contains(body, `"model":"`+q.model+`"`) {
					t.Errorf("%s %s: %d %v %s", q.path, q.model, status, err, body[:min(len(body), 300)])
				}
				mu.Lock()
				asked++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	metrics := get(t, url+"/metrics")
	loads := 0
	for line := range strings.SplitSeq(metrics, "\n") {
		var model string
		var n int
		if _, err := fmt.Sscanf(line, "smolgo_model_loads_total{model=%q} %d", &model, &n); err == nil {
			loads += n
		}
	}
	t.Logf("%d requests, %d loads", asked, loads)
	if loads <= len(queries) {
		t.Errorf("%d loads for %d models: the bound unloaded nothing", loads, len(queries))
	}
}
