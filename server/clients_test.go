package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// The real clients of issue 30: Codex CLI (@openai/codex, the Responses
// API), Claude Code (@anthropic-ai/claude-code, Anthropic's Messages API)
// and the agent SDKs' scripts in e2e/clients (the OpenAI Agents SDK,
// Mastra, LlamaIndex, the AI SDK, the openai package's responses.stream()),
// run against the server as a user would, with no flags.
//
// They are opt-in: SMOLGO_CLIENTS=1 runs them (e2e/clients/setup.sh
// installs the pinned versions first), with SMOLGO_CLIENTS=codex,claude
// (or sdk) choosing some. SMOLGO_RECORD=1 also writes every request they
// send, and what the server answered, to testdata/clients/<scenario>/;
// TestClientFixtures replays those in every `go test ./...`.

// clientScenario is one run of a real client.
type clientScenario struct {
	name   string
	client string // codex, claude or sdk: what SMOLGO_CLIENTS selects
	model  string // "fake" (servertest's echo engine) or "realvocab"
	// run runs the client against url (the server's base URL) in dir and
	// returns its output.
	run func(t *testing.T, url, dir string) string
	// want are strings the output must hold.
	want []string
	// cut is what the client says when the answer is cut at its budget;
	// the random-weight model's answers always are (it almost never
	// writes an end of turn), and the clients report that as an error
	// after showing the answer, which is then what the run checks.
	cut string
}

var clientScenarios = []clientScenario{
	{name: "codex-tools", client: "codex", model: "fake", want: []string{"The tool returned", "hello-from-tool"},
		run: func(t *testing.T, url, dir string) string {
			return codex(t, url, dir, `call exec_command {"cmd": "echo hello-from-tool"}`)
		}},
	{name: "codex-realvocab", client: "codex", model: "realvocab", cut: "Incomplete response returned, reason: max_output_tokens",
		run: func(t *testing.T, url, dir string) string { return codex(t, url, dir, "Say hi.") }},
	{name: "claude-tools", client: "claude", model: "fake", want: []string{"The tool returned: hello-from-tool"},
		run: func(t *testing.T, url, dir string) string {
			return claude(t, url, dir, `call Bash {"command": "echo hello-from-tool", "description": "Print a greeting"}`)
		}},
	{name: "claude-realvocab", client: "claude", model: "realvocab", cut: "response exceeded the 200 output token maximum",
		run: func(t *testing.T, url, dir string) string { return claude(t, url, dir, "Say hi.") }},
	{name: "sdks", client: "sdk", model: "fake", want: []string{`"ok":true`},
		run: func(t *testing.T, url, dir string) string {
			return clientCmd(t, dir, nil, "node", "sdks.mjs", "SMOLGO_URL="+url)
		}},
}

// cutText is the running scenario's cut (see clientScenario): clientCmd
// accepts a failure that says it.
var cutText string

// clientsDir holds the clients' npm packages and the SDK scripts.
const clientsDir = "e2e/clients"

func TestRealClients(t *testing.T) {
	sel := os.Getenv("SMOLGO_CLIENTS")
	if sel == "" {
		t.Skip("real clients are opt-in: SMOLGO_CLIENTS=1 (after e2e/clients/setup.sh)")
	}
	if _, err := os.Stat(filepath.Join(clientsDir, "node_modules")); err != nil {
		t.Fatalf("the clients are not installed: run %s/setup.sh", clientsDir)
	}
	record := os.Getenv("SMOLGO_RECORD") != ""
	for _, sc := range clientScenarios {
		if sel != "1" && !slices.Contains(strings.Split(sel, ","), sc.client) {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			e := clientEngine(t, sc.model)
			rec := &recorder{}
			ts := httptest.NewServer(rec.wrap(server.New(e, server.Config{Logger: quietLogger(), Sampler: sample.SmolLM3Defaults(),
				DefaultMaxTokens: 256})))
			t.Cleanup(ts.Close)
			cutText = sc.cut
			out := sc.run(t, ts.URL, t.TempDir())
			for _, w := range sc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not say %q:\n%s", w, tail(out, 3000))
				}
			}
			if bad := rec.failures(); len(bad) > 0 {
				t.Errorf("the server refused requests: %s", strings.Join(bad, "; "))
			}
			t.Logf("%d requests; output ends:\n%s", len(rec.calls), tail(out, 600))
			if record && !t.Failed() {
				rec.save(t, filepath.Join("testdata", "clients", sc.name))
			}
		})
	}
}

// clientEngine is the engine a scenario runs on: the echo engine, whose
// answers follow the prompts ("call NAME {json}" makes a call), or the tiny
// model with SmolLM3's real vocabulary at a 32K context (random weights:
// its answers are gibberish, but they are real tokens of a real template).
func clientEngine(t *testing.T, model string) server.Engine {
	if model == "fake" {
		return &servertest.Engine{Name: "fake-echo", Context: 65536}
	}
	m, err := engine.Open(sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf"),
		engine.WithThreads(2), engine.WithContext(32768), engine.WithPromptCache(256<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := server.FromModel(m, server.ModelOptions{Name: "smollm3-realvocab"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// codex runs `codex exec` with a model provider pointed at url.
func codex(t *testing.T, url, dir, prompt string) string {
	home := filepath.Join(dir, "codex-home")
	os.MkdirAll(home, 0o755)
	config := fmt.Sprintf("model = \"smollm3\"\nmodel_provider = \"smolgo\"\n\n[model_providers.smolgo]\nname = \"smolgo\"\nbase_url = %q\nwire_api = \"responses\"\n", url+"/v1")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, _ := filepath.Abs(filepath.Join(clientsDir, "node_modules", ".bin", "codex"))
	return clientCmd(t, dir, nil, bin, "exec", "--skip-git-repo-check", prompt, "CODEX_HOME="+home)
}

// claude runs `claude -p` with ANTHROPIC_BASE_URL set to url.
func claude(t *testing.T, url, dir, prompt string) string {
	bin, _ := filepath.Abs(filepath.Join(clientsDir, "node_modules", ".bin", "claude"))
	// A random-weight model stops only when the budget does: Claude Code's
	// own setting for its answers' length keeps the run short.
	return clientCmd(t, dir, nil, bin, "-p", prompt, "HOME="+dir, "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=sk-unused",
		"CLAUDE_CODE_MAX_OUTPUT_TOKENS=200", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1")
}

// clientCmd runs a program (its arguments, then KEY=VALUE environment
// entries) in dir for at most 5 minutes and returns its output; a failure
// fails the test.
func clientCmd(t *testing.T, dir string, stdin io.Reader, name string, args ...string) string {
	t.Helper()
	var argv, env []string
	for _, a := range args {
		if k, _, ok := strings.Cut(a, "="); ok && k == strings.ToUpper(k) && !strings.ContainsAny(k, " {") {
			env = append(env, a)
		} else {
			argv = append(argv, a)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, argv...)
	cmd.Dir = dir
	if name == "node" {
		cmd.Dir = clientsDir
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil && (cutText == "" || !strings.Contains(string(out), cutText)) {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(argv, " "), err, tail(string(out), 4000))
	}
	return string(out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// recorder keeps the API requests a client sends and the answers.
type recorder struct {
	mu    sync.Mutex
	calls []fixture
}

// fixture is one recorded request, as testdata/clients keeps it.
type fixture struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body"`
	// Status is what the server answered; Response its answer (an event
	// stream as text), kept so that a replay can map the ids of stored
	// responses that later requests refer to.
	Status   int    `json:"status"`
	Response string `json:"response,omitempty"`
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		cw := &captureWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		f := fixture{Method: r.Method, Path: r.URL.Path, Status: cw.status, Response: cw.buf.String()}
		if json.Valid(body) {
			f.Body = body
		} else {
			f.Body, _ = json.Marshal(string(body))
		}
		rec.mu.Lock()
		rec.calls = append(rec.calls, f)
		rec.mu.Unlock()
	})
}

// failures lists the requests the server refused.
func (rec *recorder) failures() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for _, c := range rec.calls {
		if c.Status >= 400 {
			out = append(out, fmt.Sprintf("%s %d %s", c.Path, c.Status, tail(c.Response, 300)))
		}
	}
	return out
}

// save writes the requests to dir, replacing what was there.
func (rec *recorder) save(t *testing.T, dir string) {
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, c := range rec.calls {
		name := fmt.Sprintf("%03d%s.json", i, strings.ReplaceAll(c.Path, "/", "-"))
		b, err := json.MarshalIndent(c, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("recorded %d requests in %s", len(rec.calls), dir)
}

type captureWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (w *captureWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.buf.Len() < 4<<20 {
		w.buf.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

func (w *captureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// storedID matches the ids of stored responses and their items.
var storedID = regexp.MustCompile(`\b(?:resp|msg|fc|rs)_[0-9a-f]{24}\b`)
