package server_test

import (
	"bufio"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

var (
	promSample  = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*)?\})? (\S+)$`)
	promComment = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$`)
)

// scrape reads /metrics, checks every line against the text exposition
// format (each sample's family declared by a TYPE line before it, values
// that parse) and returns the samples by name with labels.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	types := map[string]string{}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if m := promComment.FindStringSubmatch(line); m != nil {
			if m[1] == "TYPE" {
				if _, dup := types[m[2]]; dup {
					t.Errorf("family %s declared twice", m[2])
				}
				types[m[2]] = m[3]
			}
			continue
		}
		m := promSample.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line is not in the exposition format: %q", line)
			continue
		}
		family := m[1]
		if types[family] == "" {
			family = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(family, "_bucket"), "_sum"), "_count")
		}
		if types[family] == "" {
			t.Errorf("sample %s has no TYPE line before it", m[1])
		}
		v, err := strconv.ParseFloat(m[len(m)-1], 64)
		if err != nil {
			t.Errorf("value of %q: %v", line, err)
		}
		out[m[1]+m[2]] = v
	}
	return out
}

func TestMetrics(t *testing.T) {
	ts := start(t, &servertest.Engine{}, server.Config{})
	before := scrape(t, ts.URL)
	if before["smolgo_generated_tokens_total"] != 0 || before["smolgo_slots"] != 1 {
		t.Errorf("fresh server: %v", before)
	}
	resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"count 5"}]}`)
	io.Copy(io.Discard, resp.Body)
	resp = post(t, ts.URL+"/v1/chat/completions", `{"messages":[]}`)
	io.Copy(io.Discard, resp.Body)
	http.Get(ts.URL + "/no/such/page")

	after := scrape(t, ts.URL)
	for name, want := range map[string]float64{
		`smolgo_http_requests_total{endpoint="/v1/chat/completions",status="200"}`: 1,
		`smolgo_http_requests_total{endpoint="/v1/chat/completions",status="400"}`: 1,
		`smolgo_http_requests_total{endpoint="other",status="404"}`:                1,
		`smolgo_http_requests_total{endpoint="/metrics",status="200"}`:             1, // the first scrape
		`smolgo_generations_total{endpoint="chat",stop_reason="stop"}`:             1,
		`smolgo_time_to_first_token_seconds_count`:                                 1,
		`smolgo_time_to_first_token_seconds_bucket{le="+Inf"}`:                     1,
		`smolgo_slots_busy`:   0,
		`smolgo_queue_length`: 0,
	} {
		if got, ok := after[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if after["smolgo_generated_tokens_total"] < 5 || after["smolgo_prompt_tokens_total"] == 0 || after["smolgo_decode_seconds_total"] <= 0 {
		t.Errorf("token counters did not move: %v", after)
	}
}

// TestMetricsTinyModel: with a real model, the batch and prompt-cache
// families are there and move.
func TestMetricsTinyModel(t *testing.T) {
	ts := start(t, tinyEngine(t, 2048, engine.WithPromptCache(8<<20)), server.Config{})
	for range 2 {
		resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":3}`)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	}
	m := scrape(t, ts.URL)
	if m["smolgo_batch_steps_total"] == 0 || m["smolgo_batch_sequences_max"] == 0 {
		t.Errorf("batch metrics: steps %v, max %v", m["smolgo_batch_steps_total"], m["smolgo_batch_sequences_max"])
	}
	if _, ok := m["smolgo_prompt_cache_bytes"]; !ok || m["smolgo_prompt_cache_max_bytes"] != 8<<20 {
		t.Errorf("prompt cache metrics missing: %v", m)
	}
	if m["smolgo_cached_prompt_tokens_total"] == 0 {
		t.Errorf("the repeated prompt reused no cached tokens")
	}
}

// TestMetricsDraftModel: with a draft model (here the tiny model drafting
// for itself), /metrics counts the drafted and accepted tokens.
func TestMetricsDraftModel(t *testing.T) {
	draft := tinyModel(t, engine.WithContext(2048))
	ts := start(t, tinyEngine(t, 2048, engine.WithDraft(draft)), server.Config{})
	resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":12,"temperature":0}`)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	m := scrape(t, ts.URL)
	drafted, accepted := m["smolgo_draft_tokens_total"], m["smolgo_draft_accepted_tokens_total"]
	if drafted == 0 || accepted == 0 || accepted > drafted {
		t.Errorf("%v of %v drafted tokens accepted; answer %s", accepted, drafted, b)
	}
}
