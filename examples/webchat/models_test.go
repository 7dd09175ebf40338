package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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

// link makes dst a symbolic link to src, making dst's folder.
func link(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(src, dst); err != nil {
		t.Fatal(err)
	}
}

// TestModelsDirFolders serves a directory laid out as llama-server's router
// reads one: a vision model in its own folder with its mmproj file, a model
// with its draft (draft-*.gguf) in its folder, and a plain file. The
// projector and draft files are not models; the vision model answers a
// chat with an image, the drafted model drafts and answers with the text
// its model writes alone (served beside it without the draft).
func TestModelsDirFolders(t *testing.T) {
	vis := "golden-vision/models/"
	gemma, mmGemma := sharedtest.Path(t, vis+"gemma3-text-F32.gguf"), sharedtest.Path(t, vis+"mmproj-gemma3-F32.gguf")
	mmIdefics := sharedtest.Path(t, vis+"mmproj-idefics3-F32.gguf")
	stories := "realmodels/stories260K/"
	q8, q4 := sharedtest.Path(t, stories+"stories260K-Q8_0.gguf"), sharedtest.Path(t, stories+"stories260K-Q4_0.gguf")
	dir := t.TempDir()
	link(t, gemma, filepath.Join(dir, "gemma3-vision", "gemma3-text-F32.gguf"))
	link(t, mmGemma, filepath.Join(dir, "gemma3-vision", "mmproj-gemma3-F32.gguf"))
	link(t, q8, filepath.Join(dir, "stories-drafted", "stories260K-Q8_0.gguf"))
	link(t, q4, filepath.Join(dir, "stories-drafted", "draft-stories260K-Q4_0.gguf"))
	link(t, q8, filepath.Join(dir, "stories260K-Q8_0.gguf"))
	link(t, mmIdefics, filepath.Join(dir, "mmproj-idefics3-F32.gguf"))   // a projector alone: not a model
	link(t, q4, filepath.Join(dir, "draft-stories260K-Q4_0.gguf"))       // a draft alone: not a model
	link(t, q8, filepath.Join(dir, "mismatch", "stories260K-Q8_0.gguf")) // gemma3's projector makes rows of gemma3's width
	link(t, mmGemma, filepath.Join(dir, "mismatch", "mmproj-gemma3-F32.gguf"))
	link(t, q8, filepath.Join(dir, "two", "a.gguf"))
	link(t, q4, filepath.Join(dir, "two", "b.gguf"))
	link(t, q4, filepath.Join(dir, "sidecar", "mtp-stories.gguf")) // llama-server's MTP head: not used
	link(t, q8, filepath.Join(dir, "sidecar", "stories.gguf"))

	ctx, cancel := context.WithCancel(context.Background())
	var out, logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-models-dir", dir, "-threads", "1", "-ctx", "1024", "-draft-max", "4", "-addr", "127.0.0.1:0"}, &out, &logs)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d: %s", code, logs.String())
		}
	}()
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; time.Sleep(10 * time.Millisecond) {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			url = "http://" + m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("webchat did not start: %s %s", out.String(), logs.String())
		}
	}
	for _, want := range []string{
		"gemma3-vision                    chat, 3.5 MiB, takes images",
		"stories-drafted                  chat, 640.8 KiB, draft draft-stories260K-Q4_0.gguf",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("start-up lines lack %q:\n%s", want, out.String())
		}
	}
	for _, want := range []string{
		`msg="skipping a file that goes with a model: it belongs in its model's folder" file=` + filepath.Join(dir, "draft-stories260K-Q4_0.gguf") + " is=draft",
		`file=` + filepath.Join(dir, "mmproj-idefics3-F32.gguf") + " is=mmproj",
		"the projector makes rows 256 wide (clip.vision.projection_dim) and the model's embedding is 64 wide",
		"holds 2 model files (" + filepath.Join(dir, "two", "a.gguf") + ", " + filepath.Join(dir, "two", "b.gguf") + ")",
		`msg="not using llama-server's draft head`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logs.String())
		}
	}

	var list struct {
		Data []struct {
			ID              string
			InputModalities []string `json:"input_modalities"`
		}
	}
	if err := json.Unmarshal([]byte(get(t, url+"/v1/models")), &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range list.Data {
		got[m.ID] = strings.Join(m.InputModalities, "+")
	}
	want := map[string]string{"gemma3-vision": "text+image", "sidecar": "text", "stories-drafted": "text", "stories260K-Q8_0": "text"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("/v1/models: %v; want %v", got, want)
	}

	img, err := os.ReadFile(sharedtest.Path(t, "golden-vision/images/gradient-64x64.png"))
	if err != nil {
		t.Fatal(err)
	}
	withImage := `{"max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"What is it? "},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(img) + `"}}]}]}`
	if status, body, err := askModel(url, "/v1/chat/completions", "gemma3-vision", withImage); err != nil || status != 200 || !strings.Contains(body, `"completion_tokens":4`) {
		t.Errorf("chat with an image: %d %v %s", status, err, body)
	}
	if status, body, _ := askModel(url, "/v1/chat/completions", "stories260K-Q8_0", withImage); status != 400 || !strings.Contains(body, "image") {
		t.Errorf("an image to a text model: %d %s", status, body)
	}

	type completion struct {
		Choices []struct{ Text string }
		Timings struct {
			DraftN         int `json:"draft_n"`
			DraftAcceptedN int `json:"draft_n_accepted"`
		}
	}
	complete := func(model string) completion {
		t.Helper()
		status, b, err := askModel(url, "/v1/completions", model, `{"prompt":"Once upon a time","max_tokens":48,"temperature":0}`)
		var c completion
		if err != nil || status != 200 || json.Unmarshal([]byte(b), &c) != nil || len(c.Choices) != 1 {
			t.Fatalf("completion on %s: %d %v %s", model, status, err, b)
		}
		return c
	}
	alone, drafted := complete("stories260K-Q8_0"), complete("stories-drafted")
	if drafted.Choices[0].Text != alone.Choices[0].Text {
		t.Errorf("with the folder's draft %q\nwithout %q", drafted.Choices[0].Text, alone.Choices[0].Text)
	}
	if alone.Timings.DraftN != 0 || drafted.Timings.DraftN == 0 || drafted.Timings.DraftAcceptedN == 0 {
		t.Errorf("drafted tokens: %+v without the draft, %+v with it", alone.Timings, drafted.Timings)
	}
}

// TestModelFolders checks how a model's folder is read, and what is said
// when it is wrong, for -models-dir and for -model [NAME=]DIR.
func TestModelFolders(t *testing.T) {
	dir := t.TempDir()
	touch := func(i int, names ...string) string {
		sub := filepath.Join(dir, fmt.Sprint("folder", i))
		for _, n := range names {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, n), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return sub
	}
	tests := []struct {
		files              []string
		model, mmproj, dft string
		err                string
	}{
		{files: []string{"m.gguf"}, model: "m.gguf"},
		{files: []string{"m.gguf", "mmproj-F16.gguf", "README.md"}, model: "m.gguf", mmproj: "mmproj-F16.gguf"},
		{files: []string{"gemma-mmproj.GGUF", "gemma.gguf"}, model: "gemma.gguf", mmproj: "gemma-mmproj.GGUF"},
		{files: []string{"draft-small.gguf", "big.gguf"}, model: "big.gguf", dft: "draft-small.gguf"},
		{files: []string{"big.gguf", "mtp-big.gguf"}, model: "big.gguf"},
		{files: []string{"mmproj.gguf"}, err: "holds no model file"},
		{files: []string{"a.gguf", "b.gguf"}, err: "holds 2 model files"},
		{files: []string{"a.gguf", "mmproj-a.gguf", "mmproj-b.gguf"}, err: "holds 2 projectors"},
		{files: []string{"a.gguf", "draft-a.gguf", "draft-b.gguf"}, err: "holds 2 drafts"},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, tc := range tests {
		sub := touch(i, tc.files...)
		for _, named := range []bool{false, true} {
			arg, name := sub, filepath.Base(sub)
			if named {
				arg, name = "x="+sub, "x"
			}
			files, err := modelFiles(log, []string{arg}, "")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "-model "+sub) {
					t.Errorf("%v: error %v; want one with %q", tc.files, err, tc.err)
				}
				continue
			}
			join := func(f string) string {
				if f == "" {
					return ""
				}
				return filepath.Join(sub, f)
			}
			want := modelFile{name: name, path: join(tc.model), mmproj: join(tc.mmproj), draft: join(tc.dft), explicit: true}
			if err != nil || len(files) != 1 || files[0] != want {
				t.Errorf("-model %s: %+v %v; want %+v", arg, files, err, want)
			}
		}
	}
	// The same folders in a -models-dir: the good ones are models, the bad
	// ones skipped.
	files, err := modelFiles(log, nil, dir)
	if err != nil || len(files) != 5 {
		t.Errorf("-models-dir: %d models %v; want 5", len(files), err)
	}
	for _, f := range files {
		if f.explicit {
			t.Errorf("%s is explicit", f.name)
		}
	}
}
