package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTTFT measures the time to the first token of a prompt whose first
// 2,000 tokens were computed before: cold (a fresh server, nothing cached),
// warm in memory (the same server again), and warm from disk (a new
// process over the same -prompt-cache-dir: a restart). It runs the webchat
// binary on the model SMOLGO_TTFT_MODEL names (docs/serving.md used the
// synthetic Qwen3-0.6B shape: go run ./internal/synth/cmd/synth -preset
// qwen3-0.6b -type Q4_K_M -o /tmp/q06.gguf), through /v1/completions with
// token ids, streaming, and logs the figures.
func TestTTFT(t *testing.T) {
	model := os.Getenv("SMOLGO_TTFT_MODEL")
	if model == "" {
		t.Skip("set SMOLGO_TTFT_MODEL to a GGUF file to measure the time to first token with the prompt cache on disk")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "webchat")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cache := filepath.Join(dir, "cache")
	args := []string{"-model", model, "-ctx", "4096", "-slots", "1", "-prompt-cache-dir", cache, "-drain-timeout", "60s"}
	const prefix, suffix = 2000, 16
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = 1000 + rng.IntN(50000)
		}
		return out
	}
	ttft := func(addr string, prompt []int) (time.Duration, int) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 2, "stream": true,
			"stream_options": map[string]any{"include_usage": true}, "temperature": 0})
		start := time.Now()
		resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var first time.Duration
		cached := -1
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || line == "[DONE]" {
				continue
			}
			if first == 0 {
				first = time.Since(start)
			}
			var ev struct {
				Usage *struct {
					Details struct {
						Cached int `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
				} `json:"usage"`
			}
			json.Unmarshal([]byte(line), &ev)
			if ev.Usage != nil {
				cached = ev.Usage.Details.Cached
			}
		}
		if resp.StatusCode != 200 || first == 0 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return first, cached
	}
	type row struct {
		what   string
		d      time.Duration
		cached int
	}
	var rows []row
	for round := range 2 {
		shared := tokens(prefix)
		ask := func(r *replica, what string) {
			d, cached := ttft(r.addr, append(append([]int(nil), shared...), tokens(suffix)...))
			rows = append(rows, row{fmt.Sprintf("round %d, %s", round+1, what), d, cached})
			t.Logf("round %d, %-28s %8.3f s, %4d of %d prompt tokens cached", round+1, what, d.Seconds(), cached, prefix+suffix)
		}
		r := startReplica(t, bin, "ttft", args...)
		ask(r, "cold")
		ask(r, "warm in memory")
		ask(r, "warm in memory")
		// A restart: SIGTERM (the snapshots are on disk once it exits).
		r.cmd.Process.Signal(syscall.SIGTERM)
		if err := r.wait(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		r = startReplica(t, bin, "ttft", args...)
		ask(r, "warm from disk (restarted)")
		ask(r, "then warm in memory")
		r.cmd.Process.Signal(syscall.SIGTERM)
		r.wait(2 * time.Minute)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*", "*.kvc"))
	var size int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			size += st.Size()
		}
	}
	t.Logf("%d snapshot files, %d bytes on disk", len(files), size)
	for _, r := range rows {
		if strings.Contains(r.what, "disk") && r.cached < prefix {
			t.Errorf("%s: %d tokens cached, want the %d-token prefix from disk", r.what, r.cached, prefix)
		}
	}
}
