package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smolgo/smolgo/internal/synth"
	"github.com/smolgo/smolgo/server"
)

// rssModel writes a random-weight Qwen3-shaped chat model in Q4_0
// (internal/synth): 8 layers of hidden 1024 and FFN 3072 with the tiny
// built-in vocabulary, so that its file (57 MiB) is nearly all its memory,
// as with a real model. (Q4_K_M, whose matrices get an interleaved copy at
// load in place of the file's pages, measures the same but takes five
// times longer to write.)
func rssModel(t testing.TB, dir, name string, seed uint64) string {
	t.Helper()
	m := synth.Model{Name: name, Seed: seed, Shape: synth.Shape{Arch: synth.ArchQwen3, Layers: 8, Embd: 1024, FFN: 3072,
		Heads: 16, KVHeads: 8, HeadDim: 64, Context: 4096, RopeBase: 1e6, RMSEps: 1e-6}}
	path := filepath.Join(dir, name+".gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.Write(context.Background(), f, m, synth.Options{Mix: "Q4_0"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// rssBytes reads the process's resident set from /proc/self/status.
func rssBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}

// TestMemoryBoundHoldsInRSS serves four chat models of about 50 MiB each
// (their files) under a bound of 120 MiB, so that at most two are loaded at once,
// and asks them in turn from two clients while sampling the process's RSS.
// The peak RSS above the baseline must stay under the bound plus what the
// bound does not count (per loaded model, the forward pass's work buffers
// and the tokenizer; the Go heap's garbage), and far under what the same
// traffic takes with no bound (all four loaded). docs/multi-model.md has
// the figures.
func TestMemoryBoundHoldsInRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MB of models")
	}
	if raceDetector {
		t.Skip("the race detector's shadow memory is in the RSS")
	}
	if _, err := rssBytes(); err != nil {
		t.Skip("no /proc/self/status: ", err)
	}
	dir := t.TempDir()
	first := rssModel(t, dir, "q0", 1)
	files := []modelFile{{name: "q0", path: first}}
	for i := 1; i < 4; i++ { // copies: distinct files, so distinct pages
		name := fmt.Sprintf("q%d", i)
		files = append(files, modelFile{name: name, path: copyFile(t, first, filepath.Join(dir, name+".gguf"))})
	}
	const mib = 1 << 20
	const bound = 120 * mib
	bounded := rssRun(t, files, bound)
	unbounded := rssRun(t, files, 0)
	t.Logf("4 models of %d MiB: peak RSS above the baseline %d MiB with a %d MiB bound (models counted at most %d MiB, files %d MiB; %d loads of %.0f ms on average), %d MiB without (%d loads)",
		bounded.file>>20, bounded.peak>>20, bound>>20, bounded.counted>>20, bounded.files>>20, bounded.loads,
		1000*bounded.loadSeconds/float64(bounded.loads+1), unbounded.peak>>20, unbounded.loads)
	if bounded.files > bound {
		t.Errorf("the loaded models' files took %d MiB, over the bound", bounded.files>>20)
	}
	if slack := int64(48 * mib); bounded.peak > bound+slack {
		t.Errorf("peak RSS %d MiB above the baseline: over the bound (%d MiB) by more than the %d MiB it does not count",
			bounded.peak>>20, bound>>20, slack>>20)
	}
	if unbounded.peak < bounded.peak+bounded.file {
		t.Errorf("without a bound the peak is %d MiB, with one %d MiB: the bound did not unload anything", unbounded.peak>>20, bounded.peak>>20)
	}
}

type rssFigures struct {
	file, peak, counted int64 // one model's file; the peak RSS above the baseline; the most the Router counted
	files               int64 // the most the loaded models' files took
	loads               int   // model loads during the run
	loadSeconds         float64
}

// rssRun serves the files under a bound (0: none), asks every model three
// times in turn from two clients, and reports the peak RSS.
func rssRun(t *testing.T, files []modelFile, bound int64) rssFigures {
	log := slog.New(slog.DiscardHandler)
	specs, err := modelSpecs(log, io.Discard, files, nil, loadSettings{ctxLen: 2048, threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := server.NewRouter(specs, server.RouterConfig{MaxBytes: bound, Server: server.Config{Logger: log, Slots: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(rt)
	defer func() {
		ts.Close()
		rt.Close()
	}()
	ask := func(model string) {
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(
			`{"model":"`+model+`","messages":[{"role":"user","content":"Hello"}],"max_tokens":4}`))
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %d %s", model, resp.StatusCode, b)
		}
	}
	// Warm up: one load and unload, so that the baseline has the code and
	// the heap of a served request.
	ask(files[0].name)
	http.Post(ts.URL+"/models/unload", "application/json", strings.NewReader(`{"model":"`+files[0].name+`"}`))
	for !strings.Contains(get(t, ts.URL+"/v1/models/"+files[0].name), `"state":"unloaded"`) {
		time.Sleep(time.Millisecond)
	}
	debug.FreeOSMemory()
	base, _ := rssBytes()

	var fig rssFigures
	fig.file = specs[0].Bytes
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r, err := rssBytes(); err == nil {
				fig.peak = max(fig.peak, r-base)
			}
			var h struct {
				Memory int64 `json:"memory_bytes"`
				Models []struct {
					File   int64 `json:"file_bytes"`
					Memory int64 `json:"memory_bytes"`
				}
			}
			json.Unmarshal([]byte(get(t, ts.URL+"/health")), &h)
			fig.counted = max(fig.counted, h.Memory)
			var files int64
			for _, m := range h.Models {
				if m.Memory > 0 { // loaded, unloading, or loading with room made
					files += m.File
				}
			}
			fig.files = max(fig.files, files)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 * len(files) {
				ask(files[(i+2*c)%len(files)].name)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	for line := range strings.SplitSeq(get(t, ts.URL+"/metrics"), "\n") {
		var name, model string
		var v float64
		if n, _ := fmt.Sscanf(strings.NewReplacer("{", " ", "}", " ", `model="`, "", `"`, "").Replace(line), "%s %s %g", &name, &model, &v); n == 3 {
			switch name {
			case "smolgo_model_loads_total":
				fig.loads += int(v)
			case "smolgo_model_load_seconds_total":
				fig.loadSeconds += v
			}
		}
	}
	fig.loads-- // the warm-up's
	return fig
}

func copyFile(t *testing.T, from, to string) string {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

func get(t *testing.T, url string) string {
	resp, err := http.Get(url)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
