package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
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

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/server"
)

// widenedModel writes a copy of the tiny llama-family golden model whose
// feed-forward layers are ffn wide, with random weights: a chat model of
// about 6 × 256 × ffn bytes (F32, two layers) whose file is most of its
// memory, for measuring what the Router's memory bound does to the RSS.
func widenedModel(t testing.TB, dir, name string, ffn int, seed uint64) string {
	t.Helper()
	src, err := gguf.Open(sharedtest.Path(t, "golden-families/models/llama32-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	kv := append([]gguf.KV(nil), src.KV...)
	for i := range kv {
		switch kv[i].Key {
		case "llama.feed_forward_length":
			kv[i].Value = uint32(ffn)
		case "general.name":
			kv[i].Value = name
		}
	}
	var ts []gguf.WriterTensor
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		wt := gguf.WriterTensor{Name: ti.Name, Dims: append([]uint64(nil), ti.Dims...), Type: ti.Type, Data: src.TensorData(ti)}
		switch {
		case strings.HasSuffix(ti.Name, "ffn_gate.weight"), strings.HasSuffix(ti.Name, "ffn_up.weight"):
			wt.Dims[1] = uint64(ffn)
		case strings.HasSuffix(ti.Name, "ffn_down.weight"):
			wt.Dims[0] = uint64(ffn)
		default:
			ts = append(ts, wt)
			continue
		}
		n := int(wt.Dims[0] * wt.Dims[1])
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		wt.Data, wt.Write = nil, func(w io.Writer) error {
			bw := bufio.NewWriter(w)
			var b [4]byte
			for range n {
				binary.LittleEndian.PutUint32(b[:], math.Float32bits(float32(rng.NormFloat64()*0.02)))
				bw.Write(b[:])
			}
			return bw.Flush()
		}
		ts = append(ts, wt)
	}
	path := filepath.Join(dir, name+".gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(f, kv, ts); err != nil {
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

// TestMemoryBoundHoldsInRSS serves four chat models of 48 MiB each (their
// files) under a bound of 120 MiB, so that at most two are loaded at once,
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
	var files []modelFile
	for i := range 4 {
		name := fmt.Sprintf("wide%d", i)
		files = append(files, modelFile{name: name, path: widenedModel(t, dir, name, 8192, uint64(i))})
	}
	const mib = 1 << 20
	const bound = 120 * mib
	bounded := rssRun(t, files, bound)
	unbounded := rssRun(t, files, 0)
	t.Logf("4 models of %d MiB: peak RSS above the baseline %d MiB with a %d MiB bound (models counted at most %d MiB), %d MiB without",
		bounded.file>>20, bounded.peak>>20, bound>>20, bounded.counted>>20, unbounded.peak>>20)
	if bounded.counted > bound {
		t.Errorf("the router counted %d MiB, over the bound", bounded.counted>>20)
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
			}
			json.Unmarshal([]byte(get(t, ts.URL+"/health")), &h)
			fig.counted = max(fig.counted, h.Memory)
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
	return fig
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
