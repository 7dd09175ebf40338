package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestNoModelExplainsWhereToGetOne(t *testing.T) {
	// The package directory has no testdata/ demo model.
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{"ggml-org/SmolLM3-3B-GGUF", "-model", demoModel, "-fake"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("help does not mention %q:\n%s", want, errOut.String())
		}
	}
}

func TestBadArguments(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-h"}, 0, "usage"},
		{[]string{"-nope"}, 2, "flag provided but not defined"},
		{[]string{"extra"}, 2, "usage"},
		{[]string{"-model", "/does/not/exist.gguf"}, 1, "exist.gguf"},
		{[]string{"-fake", "-addr", "256.0.0.1:99999"}, 1, "webchat:"},
		{[]string{"-models-dir", ".", "-mmproj", "p.gguf"}, 2, "-mmproj, -draft-model and -mtp are for one model"},
		{[]string{"-model", "a=x.gguf", "-model", "b=y.gguf", "-draft-model", "d.gguf"}, 2, "put a model's projector (*mmproj*.gguf) or draft (draft-*.gguf) beside it in its own folder"},
		{[]string{"-models-dir", ".", "-mtp"}, 2, "-mmproj, -draft-model and -mtp are for one model"},
		{[]string{"-models-dir", ".", "-chat-template-file", "t.jinja"}, 2, "-chat-template-file is for one model"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", tc.args, code, tc.code, errOut.String(), tc.want)
		}
	}
}

var listening = regexp.MustCompile(`at http://([0-9.:]+)/`)

// serve runs webchat with args until the test ends and returns its URL.
func serve(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := serveOut(t, args...)
	return url
}

// serveOut is serve that also returns what webchat prints.
func serveOut(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append(args, "-addr", "127.0.0.1:0"), &out, &errOut) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("webchat exited %d after Ctrl-C; stderr:\n%s", code, errOut.String())
			}
		case <-time.After(15 * time.Second):
			t.Error("webchat did not shut down")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			return "http://" + m[1], &out
		}
		select {
		case code := <-done:
			t.Fatalf("webchat exited %d: %s %s", code, out.String(), errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("webchat did not start: %s %s", out.String(), errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func chat(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"Hello"}],"max_tokens":8,"chat_template_kwargs":{"enable_thinking":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"object":"chat.completion"`) {
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

func TestFakeEngine(t *testing.T) {
	url := serve(t, "-fake")
	if body := chat(t, url); !strings.Contains(body, "You said: Hello") {
		t.Errorf("fake engine answer: %s", body)
	}
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestTinyModel(t *testing.T) {
	path := "../../testdata/smollm3-tinyq-Q4_K_M.gguf"
	if _, err := os.Stat(path); err != nil {
		path = sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	}
	url := serve(t, "-model", path, "-threads", "2")
	body := chat(t, url)
	if !strings.Contains(body, `"model":"smollm3-tinyq-Q4_K_M"`) || !strings.Contains(body, `"completion_tokens":8`) {
		t.Errorf("tiny model answer: %s", body)
	}
}

// TestVisionModel serves golden-vision's tiny Gemma 3 with its projector
// (-mmproj): /v1/models says it takes images, and a chat with a photo-sized
// PNG (a body over the server's default 1 MiB limit) is answered.
func TestVisionModel(t *testing.T) {
	url := serve(t, "-model", sharedtest.Path(t, "golden-vision/models/gemma3-text-F32.gguf"),
		"-mmproj", sharedtest.Path(t, "golden-vision/models/mmproj-gemma3-F32.gguf"), "-threads", "2")
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"input_modalities":["text","image"]`) {
		t.Errorf("/v1/models: %s", b)
	}
	img := image.NewNRGBA(image.Rect(0, 0, 640, 640))
	seed := uint32(1)
	for i := range img.Pix {
		seed = seed*1664525 + 1013904223
		img.Pix[i] = byte(seed >> 24)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if buf.Len() < 1<<20 {
		t.Fatalf("the PNG is %d bytes; the test wants one over 1 MiB", buf.Len())
	}
	body := `{"max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"What is it? "},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(buf.Bytes()) + `"}}]}]}`
	resp, err = http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"completion_tokens":4`) {
		t.Errorf("chat with an image: %d %s", resp.StatusCode, b)
	}
}

// A -ctx above the model's trained context is served, and said at start
// (it used to be capped silently).
func TestContextAboveTheModels(t *testing.T) {
	path := "../../testdata/smollm3-tinyq-Q4_K_M.gguf"
	if _, err := os.Stat(path); err != nil {
		path = sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	}
	url, out := serveOut(t, "-model", path, "-threads", "1", "-ctx", "16384")
	if !strings.Contains(out.String(), "-ctx 16384 is above the 4096 tokens") {
		t.Errorf("no note about the context:\n%s", out.String())
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"context_length":16384`) {
		t.Errorf("/v1/models: %s", b)
	}
}

// The default model is the demo in testdata/, relative to the working
// directory (the repository root for `go run ./examples/webchat`).
func TestDefaultDemoModel(t *testing.T) {
	src := "../../testdata/smollm3-tinyq-Q4_K_M.gguf"
	if _, err := os.Stat(src); err != nil {
		src = sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(dir+"/testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, dir+"/"+demoModel); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-threads", "1"}, &out, &errOut) }()
	deadline := time.Now().Add(30 * time.Second)
	for !listening.MatchString(out.String()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "tiny random-weight demo model") {
		t.Errorf("no demo note in output:\n%s", out.String())
	}
}

// stories260K, a trained TinyStories llama from llama2.c's converter
// (../shared/realmodels), serves text in and text out: a completion is
// llama.cpp's greedy continuation word for word, and a chat (the file has
// no template: llama.cpp's built-in ChatML) gets a story.
func TestStories260K(t *testing.T) {
	dir := "realmodels/stories260K/"
	b, err := os.ReadFile(sharedtest.Path(t, dir+"llamacpp/greedy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string][]struct{ Prompt, Text string }
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	url := serve(t, "-model", sharedtest.Path(t, dir+"stories260K.gguf"), "-threads", "2")
	p := ref["F32"][0]
	status, body, err := askModel(url, "/v1/completions", "stories260K", `{"prompt":`+quote(p.Prompt)+`,"max_tokens":64,"temperature":0}`)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Choices []struct{ Text string }
	}
	if status != 200 || json.Unmarshal([]byte(body), &c) != nil || len(c.Choices) != 1 {
		t.Fatalf("completion: %d %s", status, body)
	}
	if want := strings.TrimPrefix(p.Text, " "+p.Prompt); c.Choices[0].Text != want {
		t.Errorf("completion %q\nllama.cpp %q", c.Choices[0].Text, want)
	}
	status, body, err = askModel(url, "/v1/chat/completions", "stories260K", `{"messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":32}`)
	var chat struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err != nil || status != 200 || json.Unmarshal([]byte(body), &chat) != nil || len(chat.Choices) != 1 || len(strings.Fields(chat.Choices[0].Message.Content)) < 3 {
		t.Fatalf("chat: %d %v %s", status, err, body)
	}
}

// -draft-model: stories260K in Q8_0 drafted by its Q4_0 file answers a
// greedy completion with the text it writes alone, and the timings count
// the drafted and accepted tokens.
func TestStories260KDraftModel(t *testing.T) {
	dir := "realmodels/stories260K/"
	target, draft := sharedtest.Path(t, dir+"stories260K-Q8_0.gguf"), sharedtest.Path(t, dir+"stories260K-Q4_0.gguf")
	body := `{"prompt":"Once upon a time","max_tokens":48,"temperature":0}`
	type completion struct {
		Choices []struct{ Text string }
		Timings struct {
			DraftN         int `json:"draft_n"`
			DraftAcceptedN int `json:"draft_n_accepted"`
		}
	}
	complete := func(url string) completion {
		t.Helper()
		status, b, err := askModel(url, "/v1/completions", "stories260K-Q8_0", body)
		var c completion
		if err != nil || status != 200 || json.Unmarshal([]byte(b), &c) != nil || len(c.Choices) != 1 {
			t.Fatalf("completion: %d %v %s", status, err, b)
		}
		return c
	}
	alone := complete(serve(t, "-model", target, "-threads", "2"))
	drafted := complete(serve(t, "-model", target, "-draft-model", draft, "-draft-max", "4", "-threads", "2"))
	if drafted.Choices[0].Text != alone.Choices[0].Text {
		t.Errorf("with -draft-model %q\nwithout %q", drafted.Choices[0].Text, alone.Choices[0].Text)
	}
	if alone.Timings.DraftN != 0 || drafted.Timings.DraftN == 0 || drafted.Timings.DraftAcceptedN == 0 {
		t.Errorf("drafted tokens: %+v without the draft, %+v with it", alone.Timings, drafted.Timings)
	}
}

// A draft model of another vocabulary is refused at start, saying so.
func TestDraftModelOtherVocabulary(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-model", sharedtest.Path(t, "realmodels/stories260K/stories260K-Q8_0.gguf"),
		"-draft-model", sharedtest.Path(t, "golden-families/models/qwen3-tiny-Q8_0.gguf"), "-threads", "1", "-addr", "127.0.0.1:0"}
	if code := run(context.Background(), args, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "draft model") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// -mtp drafts with the model's own MTP block (the tiny Qwen3.5 file with
// one added): the same text as without, and the timings count the drafts.
// A file without the block is refused at start.
func TestMTPFlag(t *testing.T) {
	src, err := gguf.Open(sharedtest.Path(t, "golden-next/models/qwen35-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var buf bytes.Buffer
	if err := synth.WriteMTP(&buf, src, 1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "qwen35-mtp.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	body := `{"prompt":"a b c","max_tokens":16,"temperature":0}`
	type completion struct {
		Choices []struct{ Text string }
		Timings struct {
			DraftN int `json:"draft_n"`
		}
	}
	complete := func(url string) completion {
		t.Helper()
		status, b, err := askModel(url, "/v1/completions", "qwen35-mtp", body)
		var c completion
		if err != nil || status != 200 || json.Unmarshal([]byte(b), &c) != nil || len(c.Choices) != 1 {
			t.Fatalf("completion: %d %v %s", status, err, b)
		}
		return c
	}
	alone := complete(serve(t, "-model", path, "-threads", "2", "-ctx", "256"))
	drafted := complete(serve(t, "-model", path, "-mtp", "-draft-max", "3", "-threads", "2", "-ctx", "256"))
	if drafted.Choices[0].Text != alone.Choices[0].Text {
		t.Errorf("with -mtp %q\nwithout %q", drafted.Choices[0].Text, alone.Choices[0].Text)
	}
	if alone.Timings.DraftN != 0 || drafted.Timings.DraftN == 0 {
		t.Errorf("drafted tokens: %+v without -mtp, %+v with it", alone.Timings, drafted.Timings)
	}
	var out, errOut bytes.Buffer
	args := []string{"-model", sharedtest.Path(t, "golden-next/models/qwen35-tiny-Q8_0.gguf"), "-mtp", "-threads", "1", "-addr", "127.0.0.1:0"}
	if code := run(context.Background(), args, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "multi-token-prediction") {
		t.Errorf("-mtp without the block: exit %d, stderr %q", code, errOut.String())
	}
}
