package server_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// The end-to-end tests run the Node scripts in e2e/ against a server on
// 127.0.0.1: the official openai client, and headless Chromium driven by
// playwright-core. They need node, the npm packages (server/e2e/setup.sh
// installs them) and, for the browser, Debian's chromium. Without them the
// tests skip, except under CI=true, where they fail: CI must run them.

const chromiumPath = "/usr/bin/chromium"

func needE2E(t *testing.T, browser bool) string {
	t.Helper()
	var missing []string
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node")
	}
	for _, pkg := range []string{"openai", "playwright-core"} {
		if _, err := os.Stat(filepath.Join("e2e", "node_modules", pkg, "package.json")); err != nil {
			missing = append(missing, "npm package "+pkg+" (run server/e2e/setup.sh)")
		}
	}
	if browser {
		if _, err := os.Stat(chromiumPath); err != nil {
			missing = append(missing, chromiumPath+" (apt-get install chromium)")
		}
	}
	if len(missing) > 0 {
		msg := "end-to-end test needs " + strings.Join(missing, ", ")
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}

func runNode(t *testing.T, node, script string, timeout time.Duration, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = "e2e"
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	return string(out)
}

func TestOpenAINodeClient(t *testing.T) {
	node := needE2E(t, false)
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	out := runNode(t, node, "openai.mjs", time.Minute, "SMOLGO_URL="+ts.URL, "EXPECT_ECHO=1")
	var res struct {
		OK bool `json:"ok"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || !res.OK {
		t.Fatalf("openai.mjs output: %s", out)
	}
	t.Logf("openai client: %s", lines[len(lines)-1])
}

func TestBrowserChat(t *testing.T) {
	node := needE2E(t, true)
	e := &servertest.Engine{TokenDelay: 15 * time.Millisecond}
	ts := start(t, e, server.Config{Slots: 1})
	shot := os.Getenv("SMOLGO_SCREENSHOT_DIR")
	if shot == "" {
		shot = t.TempDir()
	}
	out := runNode(t, node, "browser.mjs", 2*time.Minute, "SMOLGO_URL="+ts.URL,
		"CHROMIUM="+chromiumPath, "SCREENSHOT_DIR="+shot, "USER_DATA_DIR="+t.TempDir())
	t.Logf("browser.mjs:\n%s", out)
	if !strings.Contains(out, "browser test passed") {
		t.Fatalf("browser test did not pass:\n%s", out)
	}
	c := e.Counters()
	if c.Cancelled < 1 {
		t.Errorf("the stop button did not cancel the generation on the server: %+v", c)
	}
	if c.Active != 0 || c.Overlaps != 0 {
		t.Errorf("engine counters after the browser test: %+v", c)
	}
}

// TestOpenAINodeToolCalls runs e2e/tools.mjs: a tool-call round trip (tools,
// tool_calls with and without streaming, the tool's result sent back) through
// the official openai client, with the fake engine answering "call NAME
// {json}" with a call and a tool result with "The tool returned: …".
func TestOpenAINodeToolCalls(t *testing.T) {
	node := needE2E(t, false)
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	out := runNode(t, node, "tools.mjs", time.Minute, "SMOLGO_URL="+ts.URL)
	var res struct {
		OK     bool   `json:"ok"`
		Answer string `json:"answer"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || !res.OK {
		t.Fatalf("tools.mjs output: %s", out)
	}
	if want := `The tool returned: {"temperature":18,"sky":"clear"}`; res.Answer != want {
		t.Errorf("final answer %q, want %q", res.Answer, want)
	}
	t.Logf("openai client tool round trip: %s", lines[len(lines)-1])
}
