package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/server"
)

// A model whose chat template writes calls as functionary v3.2 does
// (">>>get_weather\n{…}") serves a forced call in the OpenAI shape, with
// an id and the arguments as a JSON string, and the call goes back into the
// next prompt through the template, which wants those arguments as a
// string.
func TestServeFunctionaryV32Template(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(sharedtest.LlamaCpp(t), "models", "templates", "meetkai-functionary-medium-v3.2.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.Open(goldentest.TinyModel(t, "llama32-tiny-Q4_K_M"), engine.WithThreads(2), engine.WithContext(2048), engine.WithChatTemplate(string(src)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := server.FromModel(m, server.ModelOptions{Name: "functionary"})
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, e, server.Config{})
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":10}},"required":["city"]}}}]`
	resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":200,`+tools+`,"tool_choice":"required","parallel_tool_calls":false}`)
	var c struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	decode(t, resp.Body, &c)
	if resp.StatusCode != 200 || len(c.Choices) != 1 || c.Choices[0].FinishReason != "tool_calls" || len(c.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("status %d, %+v; want one call", resp.StatusCode, c)
	}
	call := c.Choices[0].Message.ToolCalls[0]
	var args struct{ City *string }
	if call.ID == "" || call.Function.Name != "get_weather" || json.Unmarshal([]byte(call.Function.Arguments), &args) != nil || args.City == nil {
		t.Fatalf("call %+v", call)
	}
	// The next turn: the call and its result in the history.
	history := `{"messages":[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"` + call.ID + `","type":"function","function":{"name":"get_weather","arguments":` + mustJSON(call.Function.Arguments) + `}}]},` +
		`{"role":"tool","tool_call_id":"` + call.ID + `","content":"21 C"}],` + tools + `}`
	resp = post(t, ts.URL+"/apply-template", history)
	var applied struct{ Prompt string }
	decode(t, resp.Body, &applied)
	if want := ">>>get_weather\n" + call.Function.Arguments + "<|eot_id|>"; resp.StatusCode != 200 || !strings.Contains(applied.Prompt, want) ||
		!strings.HasSuffix(applied.Prompt, "<|start_header_id|>tool<|end_header_id|>\n\n21 C<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n>>>") {
		t.Errorf("status %d, prompt %q; want the call as %q and the result", resp.StatusCode, applied.Prompt, want)
	}
}
