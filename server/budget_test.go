package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/server"
)

// A constrained answer always parses, even when max_tokens is small: the
// grammar is told the budget left and closes the value in time. 100 seeded
// json_schema requests and 100 forced tool calls on the random-weight tiny
// model, through the server, every one valid.
func TestConstrainedAnswersCloseUnderMaxTokens(t *testing.T) {
	ts := start(t, tinyEngine(t, 1024), server.Config{})
	schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
		"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age","tags"],"additionalProperties":false}`
	pressed := 0 // answers that ran into the budget's last tokens: the limit mattered
	for seed := range 100 {
		maxTok := 40 + seed%3*8
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Describe a person."}],"temperature":1,"seed":%d,"max_tokens":%d,
			"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":%s}}}`, seed, maxTok, schema)
		resp := post(t, ts.URL+"/v1/chat/completions", body)
		var c completion
		decode(t, resp.Body, &c)
		if resp.StatusCode != 200 {
			t.Fatalf("seed %d: status %d", seed, resp.StatusCode)
		}
		var v struct {
			Name *string   `json:"name"`
			Age  *int      `json:"age"`
			Tags *[]string `json:"tags"`
		}
		dec := json.NewDecoder(strings.NewReader(c.Choices[0].Message.Content))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || v.Name == nil || v.Age == nil || v.Tags == nil {
			t.Fatalf("seed %d (finish %s, %d tokens): %q does not validate: %v", seed, c.Choices[0].FinishReason, c.Usage.CompletionTokens, c.Choices[0].Message.Content, err)
		}
		if c.Usage.CompletionTokens >= maxTok-2 {
			pressed++
		}
	}
	t.Logf("json_schema: %d of 100 answers closed within 2 tokens of max_tokens", pressed)
	if pressed == 0 {
		t.Error("no answer came near max_tokens: the budgets test nothing")
	}
	for seed := range 100 {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Weather in Paris?"}],"temperature":1,"seed":%d,"max_tokens":%d,
			"tools":%s,"tool_choice":"required"}`, seed, 72+seed%3*8, weatherTool)
		resp := post(t, ts.URL+"/v1/chat/completions", body)
		var c toolCompletion
		decode(t, resp.Body, &c)
		if resp.StatusCode != 200 || len(c.Choices) != 1 {
			t.Fatalf("seed %d: status %d", seed, resp.StatusCode)
		}
		ch := c.Choices[0]
		if len(ch.Message.ToolCalls) == 0 || ch.FinishReason != "tool_calls" {
			t.Fatalf("seed %d: forced call gave %d calls, finish %q, content %q", seed, len(ch.Message.ToolCalls), ch.FinishReason, ch.Message.Content)
		}
		for _, call := range ch.Message.ToolCalls {
			var args struct {
				City *string `json:"city"`
			}
			if err := json.Unmarshal([]byte(call.Function.Arguments), &args); call.Function.Name != "get_weather" || err != nil || args.City == nil {
				t.Fatalf("seed %d: call %s(%s): %v", seed, call.Function.Name, call.Function.Arguments, err)
			}
		}
	}
}
