package server_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/server"
)

// draftPair serves the tiny SmolLM3 in Q8_0 twice: alone, and drafted by
// its own weights in Q4_0 (docs/draft.md's realistic pair: the two agree
// often, not always, so drafts are both accepted and rejected).
func draftPair(t *testing.T) (alone, drafted string) {
	t.Helper()
	dir := "golden/models/"
	open := func(path string, opts ...engine.Option) *engine.Model {
		m, err := engine.Open(sharedtest.Path(t, dir+path), append([]engine.Option{engine.WithThreads(2), engine.WithContext(2048)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	serve := func(m *engine.Model) string {
		e, err := server.FromModel(m, server.ModelOptions{Name: "tiny"})
		if err != nil {
			t.Fatal(err)
		}
		return start(t, e, server.Config{Slots: 1}).URL
	}
	d := open("smollm3-tinyq-Q4_0.gguf")
	return serve(open("smollm3-tinyq-Q8_0.gguf")),
		serve(open("smollm3-tinyq-Q8_0.gguf", engine.WithDraft(d), engine.WithDraftLimits(4, 0, 0)))
}

// volatile are the answer's fields that differ between two servers giving
// the same answer: ids, clocks and timings.
var volatile = regexp.MustCompile(`^(id|.*_id|created|created_at|timings|system_fingerprint)$`)

// stable is an answer (a JSON body, or a stream's events, one JSON value
// per data line) without its volatile fields, for comparing two servers'.
func stable(t *testing.T, body string, stream bool) string {
	t.Helper()
	var scrub func(v any) any
	scrub = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if volatile.MatchString(k) {
					delete(v, k)
				} else {
					v[k] = scrub(x)
				}
			}
		case []any:
			for i, x := range v {
				v[i] = scrub(x)
			}
		}
		return v
	}
	one := func(s string) string {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("not JSON: %v: %s", err, s)
		}
		b, _ := json.Marshal(scrub(v))
		return string(b)
	}
	if !stream {
		return one(body)
	}
	var out []string
	for line := range strings.SplitSeq(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
			out = append(out, one(data))
		}
	}
	return strings.Join(out, "\n")
}

// draftCounters reads smolgo_draft_tokens_total and
// smolgo_draft_accepted_tokens_total from /metrics.
func draftCounters(t *testing.T, url string) (drafted, accepted int) {
	t.Helper()
	_, text := get(t, url+"/metrics")
	read := func(name string) int {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("/metrics has no %s", name)
		}
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return int(f)
	}
	return read("smolgo_draft_tokens_total"), read("smolgo_draft_accepted_tokens_total")
}

// TestDraftModelEveryAPI asks a server whose model has a draft (engine.
// WithDraft, webchat's -draft-model) through every API, streaming and not,
// with a forced tool call and with a JSON schema: every answer is the one
// the same model gives without the draft (greedy), event for event, and
// the draft drafted for each (the timings' draft_n and draft_n_accepted on
// chat completions and the Responses stream's last event, /metrics'
// counters everywhere).
func TestDraftModelEveryAPI(t *testing.T) {
	alone, drafted := draftPair(t)
	const (
		ask     = `[{"role":"user","content":"What is the weather in Paris? Answer briefly."}]`
		tools   = `[{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Rome","Oslo"]},"days":{"type":"integer"}},"required":["city"],"additionalProperties":false}}}]`
		respTls = `[{"type":"function","name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Rome","Oslo"]},"days":{"type":"integer"}},"required":["city"],"additionalProperties":false}}]`
		antTls  = `[{"name":"get_weather","description":"The weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Rome","Oslo"]},"days":{"type":"integer"}},"required":["city"],"additionalProperties":false}}]`
		schema  = `{"type":"object","properties":{"sky":{"type":"string","enum":["clear","cloudy","rain"]},"celsius":{"type":"integer"}},"required":["sky","celsius"],"additionalProperties":false}`
		greedy  = `"temperature":0,"max_tokens":40,"chat_template_kwargs":{"enable_thinking":false}`
		forced  = `"temperature":0,"max_tokens":200,"chat_template_kwargs":{"enable_thinking":false}` // a call takes more tokens of this vocabulary
	)
	// The Responses API names its budget max_output_tokens.
	respGreedy, respForced := strings.Replace(greedy, "max_tokens", "max_output_tokens", 1), strings.Replace(forced, "max_tokens", "max_output_tokens", 1)
	cases := []struct {
		name, path, body string
		want             string // in the answer: what says it is the kind asked for
		timings          string // the answers with timings: "always" (chat completions), "stream" (responses), ""
	}{
		{"chat", "/v1/chat/completions", `{"messages":` + ask + `,` + greedy + `}`, `"object":"chat.completion`, "always"},
		{"chat tools", "/v1/chat/completions", `{"messages":` + ask + `,"tools":` + tools + `,"tool_choice":"required",` + forced + `}`, `"finish_reason":"tool_calls"`, "always"},
		{"chat schema", "/v1/chat/completions", `{"messages":` + ask + `,"response_format":{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":` + schema + `}},` + greedy + `}`, `"finish_reason":"stop"`, "always"},
		{"responses", "/v1/responses", `{"input":` + ask + `,` + respGreedy + `}`, `"output_text"`, "stream"},
		{"responses tools", "/v1/responses", `{"input":` + ask + `,"tools":` + respTls + `,"tool_choice":"required",` + respForced + `}`, `"type":"function_call"`, "stream"},
		{"responses schema", "/v1/responses", `{"input":` + ask + `,"text":{"format":{"type":"json_schema","name":"weather","strict":true,"schema":` + schema + `}},` + respGreedy + `}`, `"output_text"`, "stream"},
		{"messages", "/v1/messages", `{"messages":` + ask + `,` + greedy + `}`, `"type":"text"`, ""},
		{"messages tools", "/v1/messages", `{"messages":` + ask + `,"tools":` + antTls + `,"tool_choice":{"type":"any"},` + forced + `}`, `"stop_reason":"tool_use"`, ""},
	}
	draftedAll, acceptedAll := 0, 0
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			name := tc.name
			body := tc.body
			if stream {
				name += " stream"
				body = strings.Replace(body, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1)
				if tc.path != "/v1/chat/completions" {
					body = strings.Replace(body, `"stream_options":{"include_usage":true},`, "", 1)
				}
			}
			t.Run(name, func(t *testing.T) {
				ask := func(url string) string {
					resp := post(t, url+tc.path, body)
					text := readAll(t, resp)
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("%s: status %d: %s", url, resp.StatusCode, text)
					}
					return text
				}
				d0, a0 := draftCounters(t, drafted)
				plain, withDraft := ask(alone), ask(drafted)
				d1, a1 := draftCounters(t, drafted)
				if !strings.Contains(strings.ReplaceAll(withDraft, `\"`, `"`), tc.want) {
					t.Errorf("the answer lacks %s:\n%s", tc.want, withDraft)
				}
				if got, want := stable(t, withDraft, stream), stable(t, plain, stream); got != want {
					t.Errorf("with the draft:\n%s\nwithout:\n%s", got, want)
				}
				if d1 <= d0 || a1 < a0 {
					t.Errorf("/metrics: drafted %d → %d, accepted %d → %d", d0, d1, a0, a1)
				}
				draftedAll, acceptedAll = draftedAll+d1-d0, acceptedAll+a1-a0
				if n, _ := draftCounters(t, alone); n != 0 {
					t.Errorf("the server without a draft counts %d drafted tokens", n)
				}
				if tc.timings == "" || tc.timings == "stream" && !stream {
					return
				}
				timings := regexp.MustCompile(`"draft_n":(\d+),"draft_n_accepted":(\d+)`).FindStringSubmatch(withDraft)
				if timings == nil {
					t.Fatalf("no draft_n, draft_n_accepted in the timings:\n%s", withDraft)
				}
				n, _ := strconv.Atoi(timings[1])
				acc, _ := strconv.Atoi(timings[2])
				if n != d1-d0 || acc != a1-a0 {
					t.Errorf("timings draft_n %d, draft_n_accepted %d; /metrics counted %d, %d", n, acc, d1-d0, a1-a0)
				}
				if strings.Contains(plain, `"draft_n"`) {
					t.Errorf("the answer without a draft has draft_n:\n%s", plain)
				}
			})
		}
	}
	// Both kinds of draft step ran: accepted tokens, and rejected ones
	// (whose KV rows and constraint states are rolled back).
	if acceptedAll == 0 || acceptedAll == draftedAll {
		t.Errorf("%d of %d drafted tokens accepted: the test wants some accepted and some rejected", acceptedAll, draftedAll)
	}
	t.Logf("%d of %d drafted tokens accepted", acceptedAll, draftedAll)
}
