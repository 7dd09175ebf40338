package server_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

type wireCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type toolCompletion struct {
	Choices []struct {
		Message struct {
			Content   string     `json:"content"`
			ToolCalls []wireCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

type toolChunk struct {
	Choices []struct {
		Delta struct {
			Content   *string    `json:"content"`
			ToolCalls []wireCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

const weatherTool = `[{"type":"function","function":{"name":"get_weather","description":"Weather of a city",
	"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`

// replyWith makes the fake engine answer content (no reasoning) and
// records the messages it was given.
func replyWith(content string) (*servertest.Engine, func() []engine.Message) {
	var mu sync.Mutex
	var got []engine.Message
	e := &servertest.Engine{Reply: func(msgs []engine.Message) (string, string) {
		mu.Lock()
		defer mu.Unlock()
		got = slices.Clone(msgs)
		return "", content
	}}
	return e, func() []engine.Message {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

func TestToolCalls(t *testing.T) {
	tests := []struct {
		name, answer, tools string
		wantContent         string
		wantCalls           []string // name + arguments
		wantFinish          string
	}{
		{"one call", "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", weatherTool,
			"Let me check.\n", []string{`get_weather {"city":"Paris"}`}, "tool_calls"},
		{"two calls", "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call> <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>", weatherTool,
			" ", []string{`get_weather {"city":"Paris"}`, `get_weather {"city":"Oslo"}`}, "tool_calls"},
		{"no call", "It is sunny.", weatherTool, "It is sunny.", nil, "stop"},
		{"malformed call stays text", "<tool_call>{\"name\": get_weather}</tool_call>", weatherTool,
			"<tool_call>{\"name\": get_weather}</tool_call>", nil, "stop"},
		{"without tools nothing is parsed", "<tool_call>{\"name\": \"f\"}</tool_call>", `null`,
			"<tool_call>{\"name\": \"f\"}</tool_call>", nil, "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := replyWith(tt.answer)
			ts := start(t, e, server.Config{})
			body := `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + tt.tools
			calls := func(cs []wireCall) []string {
				var out []string
				for _, c := range cs {
					if c.Type != "function" || !strings.HasPrefix(c.ID, "call_") {
						t.Errorf("call %+v: want type function and an id call_…", c)
					}
					out = append(out, c.Function.Name+" "+c.Function.Arguments)
				}
				return out
			}

			resp := post(t, ts.URL+"/v1/chat/completions", body+`}`)
			var c toolCompletion
			decode(t, resp.Body, &c)
			if resp.StatusCode != 200 || len(c.Choices) != 1 {
				t.Fatalf("status %d: %+v", resp.StatusCode, c)
			}
			m := c.Choices[0].Message
			if m.Content != tt.wantContent || fmt.Sprint(calls(m.ToolCalls)) != fmt.Sprint(tt.wantCalls) || c.Choices[0].FinishReason != tt.wantFinish {
				t.Fatalf("content %q calls %q finish %q; want %q %q %q", m.Content, calls(m.ToolCalls), c.Choices[0].FinishReason, tt.wantContent, tt.wantCalls, tt.wantFinish)
			}

			// Streaming: text as content deltas, each call as one
			// tool_calls delta with its index.
			resp = post(t, ts.URL+"/v1/chat/completions", body+`,"stream":true}`)
			var content strings.Builder
			var streamed []wireCall
			finish := ""
			for _, ev := range sseEvents(t, resp.Body) {
				if ev == "[DONE]" {
					continue
				}
				var ch toolChunk
				if err := json.Unmarshal([]byte(ev), &ch); err != nil {
					t.Fatal(err)
				}
				for _, choice := range ch.Choices {
					if choice.Delta.Content != nil {
						content.WriteString(*choice.Delta.Content)
					}
					for _, tc := range choice.Delta.ToolCalls {
						if tc.Index == nil || *tc.Index != len(streamed) {
							t.Fatalf("tool call delta index %v, want %d", tc.Index, len(streamed))
						}
						streamed = append(streamed, tc)
					}
					if choice.FinishReason != nil {
						finish = *choice.FinishReason
					}
				}
			}
			if content.String() != tt.wantContent || fmt.Sprint(calls(streamed)) != fmt.Sprint(tt.wantCalls) || finish != tt.wantFinish {
				t.Fatalf("stream: content %q calls %q finish %q; want %q %q %q", content.String(), calls(streamed), finish, tt.wantContent, tt.wantCalls, tt.wantFinish)
			}
		})
	}
}

// TestToolRoundTrip sends the model's call and the tool's result back: the
// engine gets the call and the result as they were sent (the model's chat
// template writes them back the way the model writes calls).
func TestToolRoundTrip(t *testing.T) {
	e, got := replyWith("It is 21 °C in Paris.")
	ts := start(t, e, server.Config{})
	resp := post(t, ts.URL+"/v1/chat/completions", `{"tools":`+weatherTool+`,"messages":[
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"{\"temp_c\": 21}"}]}`)
	var c toolCompletion
	decode(t, resp.Body, &c)
	if resp.StatusCode != 200 || c.Choices[0].Message.Content != "It is 21 °C in Paris." || c.Choices[0].FinishReason != "stop" {
		t.Fatalf("status %d: %+v", resp.StatusCode, c)
	}
	msgs := got()
	want := []engine.Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}},
		{Role: "tool", Content: `{"temp_c": 21}`, ToolCallID: "call_1"},
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Fatalf("engine got %q, want %q", msgs, want)
	}
}

func TestToolAndFormatBadRequests(t *testing.T) {
	ts := start(t, &servertest.Engine{}, server.Config{})
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, body, param, msg string
	}{
		{"tools not an array", `{` + msgs + `,"tools":{}}`, "tools", "must be an array"},
		{"tool without name", `{` + msgs + `,"tools":[{"type":"function","function":{}}]}`, "tools[0]", "must be"},
		{"tool_choice unknown", `{` + msgs + `,"tools":` + weatherTool + `,"tool_choice":"always"}`, "tool_choice", `"always" is not supported`},
		{"tool_choice bad object", `{` + msgs + `,"tools":` + weatherTool + `,"tool_choice":{"type":"function"}}`, "tool_choice", "must be"},
		{"tool_choice unknown function", `{` + msgs + `,"tools":` + weatherTool + `,"tool_choice":{"type":"function","function":{"name":"f"}}}`, "tool_choice", `function "f", which is not in tools`},
		{"tool_choice without tools", `{` + msgs + `,"tool_choice":"required"}`, "tool_choice", "needs tools"},
		{"forced call with bad parameters", `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string","format":"duration"}}}],"tool_choice":"required"}`, "tools", `format "duration" is not supported`},
		{"tool_calls on a user message", `{"messages":[{"role":"user","content":"x","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls", "only assistant"},
		{"bad tool call arguments", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{bad"}}]}]}`, "messages[1].tool_calls[0]", "not a valid JSON object"},
		{"unknown response_format", `{` + msgs + `,"response_format":{"type":"yaml"}}`, "response_format.type", `"yaml" is not supported`},
		{"json_schema without schema", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, "response_format.json_schema.schema", "needs json_schema.schema"},
		{"unsupported schema keyword", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"(?=a)"}}}}`, "response_format", `keyword "pattern": position 0: lookaround`},
		{"bad grammar", `{` + msgs + `,"grammar":"root ::= foo"}`, "grammar", `undefined rule "foo"`},
		{"grammar and format", `{` + msgs + `,"grammar":"root ::= \"a\"","response_format":{"type":"json_object"}}`, "grammar", "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, ts.URL+"/v1/chat/completions", tt.body)
			var e apiErr
			decode(t, resp.Body, &e)
			if resp.StatusCode != 400 || deref(e.Error.Param) != tt.param || !strings.Contains(e.Error.Message, tt.msg) {
				t.Fatalf("status %d param %q message %q; want 400 %q containing %q", resp.StatusCode, deref(e.Error.Param), e.Error.Message, tt.param, tt.msg)
			}
		})
	}
}

// TestResponseFormat asks the tiny SmolLM3 with SmolLM3's real vocabulary
// for structured output, streaming and not: the random-weight model's
// answer must parse and match the schema every time.
func TestResponseFormat(t *testing.T) {
	m, err := engine.Open(sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf"), engine.WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := server.FromModel(m, server.ModelOptions{Name: "tiny-realvocab"})
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, e, server.Config{})
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"n":{"type":"integer"},"ok":{"type":"boolean"}},"required":["name","n","ok"],"additionalProperties":false}`
	formats := []string{
		`"response_format":{"type":"json_schema","json_schema":{"name":"thing","strict":true,"schema":` + schema + `}}`,
		// Any object: a random model need not close its strings, so the
		// answer may be cut by max_tokens, but it is always a valid prefix.
		`"response_format":{"type":"json_object"},"max_tokens":24`,
		`"grammar":"root ::= \"yes\" | \"no\""`,
	}
	for i, format := range formats {
		for seed := range 3 {
			for _, stream := range []bool{false, true} {
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Give me a thing."}],"seed":%d,"stream":%v,%s}`, seed, stream, format)
				resp := post(t, ts.URL+"/v1/chat/completions", body)
				var content, finish string
				if stream {
					for _, ev := range sseEvents(t, resp.Body) {
						var ch toolChunk
						if ev == "[DONE]" || json.Unmarshal([]byte(ev), &ch) != nil || len(ch.Choices) == 0 {
							continue
						}
						if c := ch.Choices[0].Delta.Content; c != nil {
							content += *c
						}
						if f := ch.Choices[0].FinishReason; f != nil {
							finish = *f
						}
					}
				} else {
					var c toolCompletion
					decode(t, resp.Body, &c)
					if len(c.Choices) == 1 {
						content, finish = c.Choices[0].Message.Content, c.Choices[0].FinishReason
					}
				}
				if resp.StatusCode != 200 || finish != "stop" && !(i == 1 && finish == "length") {
					t.Fatalf("%s: status %d finish %q content %q", body, resp.StatusCode, finish, content)
				}
				switch i {
				case 0:
					var v struct {
						Name *string `json:"name"`
						N    *int64  `json:"n"`
						OK   *bool   `json:"ok"`
					}
					dec := json.NewDecoder(strings.NewReader(content))
					dec.DisallowUnknownFields()
					if err := dec.Decode(&v); err != nil || v.Name == nil || len([]rune(*v.Name)) > 8 || v.N == nil || v.OK == nil {
						t.Fatalf("%s: %q does not match the schema (%v)", body, content, err)
					}
				case 1:
					if prefix, complete := grammar.JSONObject().Match([]byte(content)); !prefix || complete != (finish == "stop") {
						t.Fatalf("%s: %q (finish %s): prefix %v complete %v", body, content, finish, prefix, complete)
					}
					var v map[string]any
					if err := json.Unmarshal([]byte(content), &v); finish == "stop" && err != nil {
						t.Fatalf("%s: %q is not a JSON object: %v", body, content, err)
					}
				case 2:
					if content != "yes" && content != "no" {
						t.Fatalf("%s: %q", body, content)
					}
				}
			}
		}
	}
}

// TestForcedToolCall: with tool_choice "required" (or a named function)
// even the random-weight model can only answer with calls whose arguments
// fit the tool's parameters.
func TestForcedToolCall(t *testing.T) {
	m, err := engine.Open(sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf"), engine.WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := server.FromModel(m, server.ModelOptions{Name: "tiny-realvocab"})
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, e, server.Config{})
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"enum":["Paris","Oslo"]}},"required":["city"],"additionalProperties":false}}},
		{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"utc":{"type":"boolean"}},"required":["utc"],"additionalProperties":false}}}]`
	for seed, choice := range []string{`"required"`, `"required"`, `{"type":"function","function":{"name":"get_time"}}`} {
		resp := post(t, ts.URL+"/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"Weather?"}],"tools":%s,"tool_choice":%s,"seed":%d,"max_tokens":300}`, tools, choice, seed))
		var c toolCompletion
		decode(t, resp.Body, &c)
		if resp.StatusCode != 200 || len(c.Choices) != 1 || c.Choices[0].FinishReason != "tool_calls" || len(c.Choices[0].Message.ToolCalls) == 0 {
			t.Fatalf("tool_choice %s: status %d: %+v", choice, resp.StatusCode, c)
		}
		for _, call := range c.Choices[0].Message.ToolCalls {
			var args map[string]any
			if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
				t.Fatalf("arguments %q: %v", call.Function.Arguments, err)
			}
			switch {
			case call.Function.Name == "get_time" && len(args) == 1 && args["utc"] != nil:
			case call.Function.Name == "get_weather" && choice == `"required"` && (args["city"] == "Paris" || args["city"] == "Oslo"):
			default:
				t.Fatalf("tool_choice %s: call %s(%s)", choice, call.Function.Name, call.Function.Arguments)
			}
		}
	}
}
