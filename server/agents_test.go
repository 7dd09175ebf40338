package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// The tests in this file are the server bugs of issue 30 ("Agents work out
// of the box"), each in the shape the agent clients send it.

// grammarEngine is the fake engine that records the grammars the server
// builds for its requests (and then generates without them).
type grammarEngine struct {
	*servertest.Engine
	mu  sync.Mutex
	got []*grammar.Grammar
}

func (e *grammarEngine) NewConstraint(g *grammar.Grammar) (engine.Constraint, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, g)
	return nil, nil
}

func (e *grammarEngine) last(t *testing.T) *grammar.Grammar {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.got) == 0 {
		t.Fatal("the server built no grammar")
	}
	return e.got[len(e.got)-1]
}

const answerSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`

// TestToolsWithOutputFormat is bug 1: an agent with tools and an output
// type sends both; a turn is then either tool calls or the formatted final
// answer, in one grammar, and a forced call still forces a call.
func TestToolsWithOutputFormat(t *testing.T) {
	call := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	answer := `{"city": "Paris"}`
	chatFormat := `"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":` + answerSchema + `}}`
	respFormat := `"text":{"format":{"type":"json_schema","name":"a","schema":` + answerSchema + `}}`
	respTool := `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	for _, tc := range []struct {
		name, path, body string
		callOK, answerOK bool
	}{
		{"chat auto", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":` + weatherTool + `,` + chatFormat + `}`, true, true},
		{"chat required", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":` + weatherTool + `,"tool_choice":"required",` + chatFormat + `}`, true, false},
		{"chat named", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":` + weatherTool + `,"tool_choice":{"type":"function","function":{"name":"get_weather"}},` + chatFormat + `}`, true, false},
		{"chat none", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":` + weatherTool + `,"tool_choice":"none",` + chatFormat + `}`, false, true},
		{"responses auto", "/v1/responses", `{"input":"hi","tools":` + respTool + `,` + respFormat + `}`, true, true},
		{"responses required", "/v1/responses", `{"input":"hi","tools":` + respTool + `,"tool_choice":"required",` + respFormat + `}`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &grammarEngine{Engine: &servertest.Engine{}}
			ts := start(t, e, server.Config{})
			resp := post(t, ts.URL+tc.path, tc.body)
			if resp.StatusCode != http.StatusOK {
				var e apiErr
				decode(t, resp.Body, &e)
				t.Fatalf("status %d: %s", resp.StatusCode, e.Error.Message)
			}
			g := e.last(t)
			if _, ok := g.Match([]byte(call)); ok != tc.callOK {
				t.Errorf("the grammar takes the call %q: %v, want %v", call, ok, tc.callOK)
			}
			if _, ok := g.Match([]byte(answer)); ok != tc.answerOK {
				t.Errorf("the grammar takes the answer %q: %v, want %v", answer, ok, tc.answerOK)
			}
		})
	}
}

// TestSystemMessagesFolded is bug 2: more than one system or developer
// message is not a 400. Leading ones become one system prompt; a later one
// is folded into the user message after it.
func TestSystemMessagesFolded(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
		want             []engine.Message
	}{
		{"chat: two system messages", "/v1/chat/completions",
			`{"messages":[{"role":"system","content":"A"},{"role":"developer","content":"B"},{"role":"user","content":"hi"}]}`,
			[]engine.Message{{Role: "system", Content: "A\n\nB"}, {Role: "user", Content: "hi"}}},
		{"chat: a system message after an assistant turn", "/v1/chat/completions",
			`{"messages":[{"role":"system","content":"A"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"system","content":"Be brief."},{"role":"user","content":"why?"}]}`,
			[]engine.Message{{Role: "system", Content: "A"}, {Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}, {Role: "user", Content: "Be brief.\n\nwhy?"}}},
		{"chat: a system message last", "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"},{"role":"system","content":"Now answer."}]}`,
			[]engine.Message{{Role: "user", Content: "hi\n\nNow answer."}}},
		{"chat: a system message after a tool result", "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"42"},{"role":"system","content":"Be brief."}]}`,
			[]engine.Message{{Role: "user", Content: "hi"}, {Role: "assistant", ToolCalls: []engine.ToolCall{{ID: "c", Name: "f", Arguments: []byte("{}")}}}, {Role: "tool", Content: "42", ToolCallID: "c"}, {Role: "user", Content: "Be brief."}}},
		{"responses: instructions and a developer item", "/v1/responses",
			`{"instructions":"I","input":[{"type":"message","role":"developer","content":"D"},{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`,
			[]engine.Message{{Role: "system", Content: "I\n\nD"}, {Role: "user", Content: "hi"}}},
		{"messages: a system message inside the conversation", "/v1/messages",
			`{"max_tokens":50,"system":"S","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"system","content":"Note."},{"role":"user","content":"go"}]}`,
			[]engine.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}, {Role: "user", Content: "Note.\n\ngo"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, got := replyWith("ok")
			ts := start(t, e, server.Config{})
			resp := post(t, ts.URL+tc.path, tc.body)
			if resp.StatusCode != http.StatusOK {
				var e apiErr
				decode(t, resp.Body, &e)
				t.Fatalf("status %d: %s", resp.StatusCode, e.Error.Message)
			}
			if fmt.Sprint(got()) != fmt.Sprint(tc.want) {
				t.Errorf("engine got %q\nwant %q", got(), tc.want)
			}
		})
	}
}

// TestMaxTokensAboveContext is bug 3: a max_tokens larger than the free
// context is clamped to it (llama-server's behaviour), and an answer that
// fills the context ends with length / max_tokens.
func TestMaxTokensAboveContext(t *testing.T) {
	e := &servertest.Engine{Context: 64}
	ts := start(t, e, server.Config{})
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"count 500"}],"max_tokens":32000}`, `"finish_reason":"length"`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"count 500"}],"max_completion_tokens":32000}`, `"finish_reason":"length"`},
		{"/v1/messages", `{"messages":[{"role":"user","content":"count 500"}],"max_tokens":32000}`, `"stop_reason":"max_tokens"`},
		{"/v1/responses", `{"input":"count 500","max_output_tokens":32000}`, `"status":"incomplete"`},
	} {
		resp := post(t, ts.URL+tc.path, tc.body)
		var body strings.Builder
		if _, err := fmt.Fprint(&body, readAll(t, resp)); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(body.String(), tc.want) {
			t.Errorf("%s %s: status %d, %s; want 200 with %s", tc.path, tc.body, resp.StatusCode, body.String(), tc.want)
		}
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// TestResponsesToolsTheServerCannotRun is bug 4: hosted tool types are
// accepted, ignored and listed; namespace groups are flattened into
// functions.
func TestResponsesToolsTheServerCannotRun(t *testing.T) {
	var mu sync.Mutex
	var tools []json.RawMessage
	e := &servertest.Engine{}
	rec := &toolsEngine{Engine: e, record: func(ts []json.RawMessage) { mu.Lock(); tools = ts; mu.Unlock() }}
	ts := start(t, rec, server.Config{})
	body := `{"input":"hi","tools":[
		{"type":"web_search"},{"type":"file_search","vector_store_ids":["vs"]},{"type":"computer_use_preview","display_width":1,"display_height":1,"environment":"linux"},
		{"type":"image_generation"},{"type":"code_interpreter","container":{"type":"auto"}},
		{"type":"namespace","name":"mcp__files","description":"Files","tools":[{"type":"function","name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]},
		{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]}`
	resp := post(t, ts.URL+"/v1/responses", body)
	var r struct {
		Status       string   `json:"status"`
		IgnoredTools []string `json:"ignored_tools"`
	}
	text := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(text), &r) != nil {
		t.Fatalf("status %d: %s", resp.StatusCode, text)
	}
	if fmt.Sprint(r.IgnoredTools) != "[web_search file_search computer_use_preview image_generation code_interpreter]" {
		t.Errorf("ignored_tools %q", r.IgnoredTools)
	}
	mu.Lock()
	defer mu.Unlock()
	var names []string
	for _, t := range tools {
		var f struct {
			Function struct{ Name string } `json:"function"`
		}
		json.Unmarshal(t, &f)
		names = append(names, f.Function.Name)
	}
	if fmt.Sprint(names) != "[mcp__files__read shell]" {
		t.Errorf("the model was shown the functions %q", names)
	}
}

// toolsEngine records the tool definitions the engine is given.
type toolsEngine struct {
	*servertest.Engine
	record func([]json.RawMessage)
}

func (e *toolsEngine) NewSession() server.Session {
	return &toolsSession{Session: e.Engine.NewSession(), record: e.record}
}

type toolsSession struct {
	server.Session
	record func([]json.RawMessage)
}

func (s *toolsSession) Generate(ctx context.Context, msgs []engine.Message, opts engine.GenerateOptions) iter.Seq2[engine.Event, error] {
	s.record(opts.Tools)
	return s.Session.Generate(ctx, msgs, opts)
}

// TestResponsesStreamItems is bug 5: every streamed item has the fields
// the published schema requires (a message item's content list, even when
// empty), so that the SDKs' stream accumulators take them.
func TestResponsesStreamItems(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	for _, body := range []string{
		`{"input":"hello there","stream":true}`,
		`{"input":"call get_weather {\"city\": \"Paris\"}","stream":true,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`,
		`{"input":"count 50","stream":true,"max_output_tokens":5}`,
	} {
		resp := post(t, ts.URL+"/v1/responses", body)
		var acc responses.ResponseAccumulator
		var final string
		parts := partTracker{}
		for _, data := range sseData(t, readAll(t, resp)) {
			checkResponseEvent(t, data)
			parts.check(t, data)
			var ev responses.ResponsesServerEventUnion
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			if err := acc.AddEvent(ev); err != nil {
				t.Fatalf("the Go SDK's accumulator refuses %s: %v", data, err)
			}
			if strings.HasPrefix(ev.Type, "response.") && (ev.Type == "response.completed" || ev.Type == "response.incomplete") {
				final = ev.Type
			}
		}
		snap := acc.Snapshot()
		if final == "" || snap.TerminalEvent != final || len(snap.Output) == 0 {
			t.Errorf("%s: the accumulator saw %+v (final event %q)", body, snap, final)
		}
	}
}

// partTracker checks what the openai npm stream helper checks: a text
// delta (output or reasoning) goes to a content part that was announced
// (response.content_part.added) for its item.
type partTracker map[string]int // item id → content parts announced

func (p partTracker) check(t *testing.T, data string) {
	t.Helper()
	var ev struct {
		Type         string `json:"type"`
		ItemID       string `json:"item_id"`
		ContentIndex *int   `json:"content_index"`
	}
	json.Unmarshal([]byte(data), &ev)
	switch ev.Type {
	case "response.content_part.added":
		p[ev.ItemID]++
	case "response.output_text.delta", "response.reasoning_text.delta", "response.output_text.done", "response.reasoning_text.done":
		if ev.ContentIndex == nil || *ev.ContentIndex >= p[ev.ItemID] {
			t.Errorf("%s to a content part not announced: %s", ev.Type, data)
		}
	}
}

// sseData returns the data lines of an event stream.
func sseData(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// checkResponseEvent checks one streamed Responses event against the
// fields the OpenAI API reference lists as required for its type.
func checkResponseEvent(t *testing.T, data string) {
	t.Helper()
	var ev map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		t.Fatalf("event %s: %v", data, err)
	}
	var typ string
	json.Unmarshal(ev["type"], &typ)
	need := map[string][]string{
		"response.created":                       {"response", "sequence_number"},
		"response.in_progress":                   {"response", "sequence_number"},
		"response.completed":                     {"response", "sequence_number"},
		"response.incomplete":                    {"response", "sequence_number"},
		"response.failed":                        {"response", "sequence_number"},
		"response.output_item.added":             {"item", "output_index", "sequence_number"},
		"response.output_item.done":              {"item", "output_index", "sequence_number"},
		"response.content_part.added":            {"item_id", "output_index", "content_index", "part", "sequence_number"},
		"response.content_part.done":             {"item_id", "output_index", "content_index", "part", "sequence_number"},
		"response.output_text.delta":             {"item_id", "output_index", "content_index", "delta", "logprobs", "sequence_number"},
		"response.output_text.done":              {"item_id", "output_index", "content_index", "text", "logprobs", "sequence_number"},
		"response.reasoning_text.delta":          {"item_id", "output_index", "content_index", "delta", "sequence_number"},
		"response.reasoning_text.done":           {"item_id", "output_index", "content_index", "text", "sequence_number"},
		"response.function_call_arguments.delta": {"item_id", "output_index", "delta", "sequence_number"},
		"response.function_call_arguments.done":  {"item_id", "output_index", "arguments", "sequence_number"},
		"response.reasoning_summary_part.added":  {"item_id", "output_index", "summary_index", "part", "sequence_number"},
		"response.reasoning_summary_part.done":   {"item_id", "output_index", "summary_index", "part", "sequence_number"},
		"response.reasoning_summary_text.delta":  {"item_id", "output_index", "summary_index", "delta", "sequence_number"},
		"response.reasoning_summary_text.done":   {"item_id", "output_index", "summary_index", "text", "sequence_number"},
		"error":                                  {"code", "message", "sequence_number"},
	}[typ]
	if need == nil {
		t.Errorf("event type %q is not checked", typ)
	}
	for _, f := range need {
		if _, ok := ev[f]; !ok {
			t.Errorf("%s event without %q: %s", typ, f, data)
		}
	}
	if raw, ok := ev["item"]; ok {
		var it map[string]json.RawMessage
		json.Unmarshal(raw, &it)
		var itype string
		json.Unmarshal(it["type"], &itype)
		itemNeed := map[string][]string{
			"message":       {"id", "type", "role", "status", "content"},
			"reasoning":     {"id", "type", "summary"},
			"function_call": {"id", "type", "call_id", "name", "arguments", "status"},
		}[itype]
		for _, f := range itemNeed {
			if _, ok := it[f]; !ok {
				t.Errorf("%s item without %q in %s: %s", itype, f, typ, data)
			}
		}
	}
}

// TestItemReferences is bug 6: item_reference input items name output
// items this server stored (the AI SDK and Mastra send them in step 2 of
// every tool loop); they are resolved, not refused.
func TestItemReferences(t *testing.T) {
	e, got := replyWith("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
	ts := start(t, e, server.Config{})
	tool := `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	resp := post(t, ts.URL+"/v1/responses", `{"input":"Weather in Paris?","tools":`+tool+`}`)
	var first struct {
		Output []struct {
			Type   string
			ID     string
			CallID string `json:"call_id"`
		} `json:"output"`
	}
	text := readAll(t, resp)
	if err := json.Unmarshal([]byte(text), &first); err != nil || len(first.Output) != 1 || first.Output[0].Type != "function_call" {
		t.Fatalf("first turn: %s", text)
	}
	var ids struct {
		Output []struct{ ID string } `json:"output"`
	}
	json.Unmarshal([]byte(text), &ids)
	call := first.Output[0]
	body := fmt.Sprintf(`{"tools":%s,"input":[{"role":"user","content":"Weather in Paris?"},{"type":"item_reference","id":%q},{"type":"function_call_output","call_id":%q,"output":"sunny"}]}`,
		tool, ids.Output[0].ID, call.CallID)
	resp = post(t, ts.URL+"/v1/responses", body)
	if text := readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("second turn: status %d: %s", resp.StatusCode, text)
	}
	msgs := got()
	if len(msgs) != 3 || msgs[1].Role != "assistant" || len(msgs[1].ToolCalls) != 1 || msgs[1].ToolCalls[0].Name != "get_weather" ||
		msgs[1].ToolCalls[0].ID != call.CallID || msgs[2].Role != "tool" || msgs[2].Content != "sunny" {
		t.Errorf("engine got %+v", msgs)
	}
	resp = post(t, ts.URL+"/v1/responses", `{"input":[{"type":"item_reference","id":"fc_nope"}]}`)
	var ae apiErr
	decode(t, resp.Body, &ae)
	if resp.StatusCode != http.StatusBadRequest || deref(ae.Error.Param) != "input[0].id" {
		t.Errorf("an unknown reference: status %d param %q", resp.StatusCode, deref(ae.Error.Param))
	}
}

// TestDecimalBounds is bug 7 on the wire: zod's .min(0.5) makes a
// non-integer minimum, which must constrain the answer, not be a 400.
func TestDecimalBounds(t *testing.T) {
	e := &grammarEngine{Engine: &servertest.Engine{}}
	ts := start(t, e, server.Config{})
	schema := `{"type":"object","properties":{"x":{"type":"number","minimum":0.5,"exclusiveMaximum":2.25}},"required":["x"],"additionalProperties":false}`
	resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":`+schema+`}}}`)
	if text := readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, text)
	}
	g := e.last(t)
	for in, want := range map[string]bool{`{"x": 0.5}`: true, `{"x": 0.49}`: false, `{"x": 2.2}`: true, `{"x": 2.25}`: false, `{"x": 1}`: true} {
		if _, ok := g.Match([]byte(in)); ok != want {
			t.Errorf("%s: %v, want %v", in, ok, want)
		}
	}
}

// TestAnyModelName is bug 9: with one model loaded, any model name is
// served and the answer names the served model.
func TestAnyModelName(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"gpt-5-codex","input":"hi"}`},
		{"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		resp := post(t, ts.URL+tc.path, tc.body)
		var r struct{ Model string }
		text := readAll(t, resp)
		if json.Unmarshal([]byte(text), &r); resp.StatusCode != http.StatusOK || r.Model != e.ModelName() {
			t.Errorf("%s: status %d model %q: %s", tc.path, resp.StatusCode, r.Model, text)
		}
	}
}

// TestSmallerBugs is bug 10's list.
func TestSmallerBugs(t *testing.T) {
	e := &servertest.Engine{Context: 200}
	ts := start(t, e, server.Config{})

	t.Run("a message in an incomplete response is incomplete", func(t *testing.T) {
		text := readAll(t, post(t, ts.URL+"/v1/responses", `{"input":"count 50","max_output_tokens":5,"reasoning":{"effort":"none"}}`))
		var r struct {
			Status string
			Output []struct{ Type, Status string }
		}
		json.Unmarshal([]byte(text), &r)
		if r.Status != "incomplete" || len(r.Output) == 0 || r.Output[len(r.Output)-1].Status != "incomplete" {
			t.Errorf("%s", text)
		}
	})

	t.Run("message_start reports the input tokens", func(t *testing.T) {
		text := readAll(t, post(t, ts.URL+"/v1/messages", `{"max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hello there"}]}`))
		data := sseData(t, text)
		var start struct {
			Type    string
			Message struct {
				Usage struct {
					InputTokens int `json:"input_tokens"`
				}
			}
		}
		if len(data) == 0 || json.Unmarshal([]byte(data[0]), &start) != nil || start.Type != "message_start" || start.Message.Usage.InputTokens == 0 {
			t.Errorf("first event %q", data)
		}
	})

	t.Run("a prompt too long for /v1/messages says so as Claude Code expects", func(t *testing.T) {
		resp := post(t, ts.URL+"/v1/messages", `{"max_tokens":20,"messages":[{"role":"user","content":"`+strings.Repeat("word ", 300)+`"}]}`)
		text := readAll(t, resp)
		var r struct {
			Error struct{ Type, Message string }
		}
		json.Unmarshal([]byte(text), &r)
		if resp.StatusCode != http.StatusBadRequest || r.Error.Type != "invalid_request_error" ||
			!regexpMatch(`^prompt is too long: \d+ tokens > 199 maximum`, r.Error.Message) {
			t.Errorf("status %d: %s", resp.StatusCode, text)
		}
	})

	t.Run("a chat stream sends no empty content before tool_calls", func(t *testing.T) {
		text := readAll(t, post(t, ts.URL+"/v1/chat/completions", `{"stream":true,"chat_template_kwargs":{"enable_thinking":false},"tools":`+weatherTool+`,"messages":[{"role":"user","content":"call get_weather {\"city\": \"Paris\"}"}]}`))
		role, calls := false, false
		for _, d := range sseData(t, text) {
			var c struct {
				Choices []struct {
					Delta map[string]json.RawMessage
				}
			}
			if json.Unmarshal([]byte(d), &c) != nil || len(c.Choices) == 0 {
				continue
			}
			delta := c.Choices[0].Delta
			if _, ok := delta["role"]; ok {
				role = true
			}
			if content, ok := delta["content"]; ok && string(content) == `""` {
				t.Errorf("empty content delta: %s", d)
			}
			if _, ok := delta["tool_calls"]; ok {
				calls = true
			}
		}
		if !role || !calls {
			t.Errorf("role %v tool_calls %v in %s", role, calls, text)
		}
	})

	t.Run("count_tokens", func(t *testing.T) {
		resp := post(t, ts.URL+"/v1/messages/count_tokens", `{"model":"claude-x","messages":[{"role":"user","content":"hello there"}]}`)
		var r struct {
			InputTokens int `json:"input_tokens"`
		}
		text := readAll(t, resp)
		if json.Unmarshal([]byte(text), &r); resp.StatusCode != http.StatusOK || r.InputTokens == 0 {
			t.Errorf("status %d: %s", resp.StatusCode, text)
		}
	})

	t.Run("apply-template", func(t *testing.T) {
		resp := post(t, ts.URL+"/apply-template", `{"messages":[{"role":"user","content":"hello there"}]}`)
		var r struct{ Prompt string }
		text := readAll(t, resp)
		if json.Unmarshal([]byte(text), &r); resp.StatusCode != http.StatusOK || !strings.Contains(r.Prompt, "hello there") || !strings.Contains(r.Prompt, "assistant") {
			t.Errorf("status %d: %s", resp.StatusCode, text)
		}
	})

	t.Run("n > 1", func(t *testing.T) {
		resp := post(t, ts.URL+"/v1/chat/completions", `{"n":3,"messages":[{"role":"user","content":"hello there"}]}`)
		var r struct {
			Choices []struct {
				Index   int
				Message struct{ Content string }
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		text := readAll(t, resp)
		if json.Unmarshal([]byte(text), &r); resp.StatusCode != http.StatusOK || len(r.Choices) != 3 || r.Choices[2].Index != 2 || r.Choices[1].Message.Content != "You said: hello there" {
			t.Errorf("status %d: %s", resp.StatusCode, text)
		}
		// Streamed: each answer's deltas under its index, each finished.
		text = readAll(t, post(t, ts.URL+"/v1/chat/completions", `{"n":2,"stream":true,"chat_template_kwargs":{"enable_thinking":false},"messages":[{"role":"user","content":"hello there"}]}`))
		content, finished := map[int]string{}, map[int]bool{}
		for _, d := range sseData(t, text) {
			var c struct {
				Choices []struct {
					Index        int
					Delta        struct{ Content string }
					FinishReason *string `json:"finish_reason"`
				}
			}
			if json.Unmarshal([]byte(d), &c) != nil || len(c.Choices) == 0 {
				continue
			}
			ch := c.Choices[0]
			content[ch.Index] += ch.Delta.Content
			finished[ch.Index] = finished[ch.Index] || ch.FinishReason != nil
		}
		if content[0] != "You said: hello there" || content[1] != content[0] || !finished[0] || !finished[1] {
			t.Errorf("streamed n=2: %v, finished %v", content, finished)
		}
	})
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// Issue 39's Codex first run (no model in config.toml): its default model
// name, an empty top-level tools, and its tools in an additional_tools
// input item first (namespace-wrapped), before the conversation; hosted
// tools' call items carry nothing to show the model and are left out,
// listed in ignored_items. The server answered 400 "item type
// additional_tools is not supported" and Codex exited.
func TestResponsesCodexAdditionalTools(t *testing.T) {
	var mu sync.Mutex
	var tools []json.RawMessage
	rec := &toolsEngine{Engine: &servertest.Engine{}, record: func(ts []json.RawMessage) { mu.Lock(); tools = ts; mu.Unlock() }}
	ts := start(t, rec, server.Config{})
	shell := `{"type":"function","name":"shell","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}}}}`
	body := `{"model":"gpt-5-codex","instructions":"You are Codex.","tools":[],"tool_choice":"auto","parallel_tool_calls":false,"store":false,"stream":false,
		"input":[
			{"type":"additional_tools","tools":[` + shell + `,{"type":"namespace","name":"mcp__docs","tools":[{"type":"function","name":"search","parameters":{"type":"object"}}]},{"type":"web_search"}]},
			{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions>workspace-write</permissions>"}]},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]},
			{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go"}},
			{"type":"additional_tools","tools":[` + shell + `]}
		]}`
	resp := post(t, ts.URL+"/v1/responses", body)
	text := readAll(t, resp)
	var r struct {
		Status       string   `json:"status"`
		IgnoredTools []string `json:"ignored_tools"`
		IgnoredItems []string `json:"ignored_items"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(text), &r) != nil || r.Status != "completed" {
		t.Fatalf("status %d: %s", resp.StatusCode, text)
	}
	if fmt.Sprint(r.IgnoredItems) != "[web_search_call]" || fmt.Sprint(r.IgnoredTools) != "[web_search]" {
		t.Errorf("ignored_items %q, ignored_tools %q", r.IgnoredItems, r.IgnoredTools)
	}
	mu.Lock()
	defer mu.Unlock()
	var names []string
	for _, t := range tools {
		var f struct {
			Function struct{ Name string } `json:"function"`
		}
		json.Unmarshal(t, &f)
		names = append(names, f.Function.Name)
	}
	if fmt.Sprint(names) != "[shell mcp__docs__search]" {
		t.Errorf("the model was shown the functions %q, want each once", names)
	}
	// An item of an unknown type that carries content is refused, not
	// silently dropped; a request of nothing but such items is a 400.
	for _, c := range []struct{ body, says string }{
		{`{"input":[{"type":"mystery","content":"x"},{"role":"user","content":"hi"}]}`, `item type \"mystery\" is not supported`},
		{`{"input":[{"type":"web_search_call","id":"ws_1"}]}`, "no message"},
		{`{"input":[{"type":"additional_tools","tools":[{"type":"function"}]},{"role":"user","content":"hi"}]}`, "input[0].tools[0].name"},
	} {
		resp := post(t, ts.URL+"/v1/responses", c.body)
		if text := readAll(t, resp); resp.StatusCode != 400 || !strings.Contains(text, c.says) {
			t.Errorf("%s: %d %s, want 400 saying %s", c.body, resp.StatusCode, text, c.says)
		}
	}
}
