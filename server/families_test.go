package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	_ "github.com/smolgo/smolgo/models"
	"github.com/smolgo/smolgo/server"
)

// Every family serves the chat, Responses and Messages APIs, streaming
// included, and a forced tool call comes back as a call in each API's
// shape: the server takes the call's grammar from the model's own format
// (Llama 3 writes a bare JSON object, Gemma 3 and SmolLM2 llama.cpp's
// generic JSON, Qwen and Granite 4 Hermes blocks, Phi-4-mini a
// <|tool_call|> list).
func TestFamiliesServe(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":10}},"required":["city"]}}}]`
	for _, name := range []string{"qwen3-tiny-Q4_K_M", "qwen2-tiny-Q4_K_M", "llama32-tiny-Q4_K_M", "gemma3-tiny-Q4_K_M",
		"smollm2-tiny-Q4_K_M", "granite-tiny-Q4_K_M", "phi3-tiny-Q4_K_M"} {
		t.Run(name, func(t *testing.T) {
			m, err := engine.Open(goldentest.TinyModel(t, name), engine.WithThreads(2), engine.WithContext(1024))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			e, err := server.FromModel(m, server.ModelOptions{Name: name})
			if err != nil {
				t.Fatal(err)
			}
			ts := start(t, e, server.Config{})

			resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":200,`+tools+`,"tool_choice":"required"}`)
			var c struct {
				Choices []struct {
					Message struct {
						ToolCalls []struct {
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			decode(t, resp.Body, &c)
			if resp.StatusCode != 200 || len(c.Choices) != 1 || c.Choices[0].FinishReason != "tool_calls" || len(c.Choices[0].Message.ToolCalls) == 0 {
				t.Fatalf("chat: status %d, %+v", resp.StatusCode, c)
			}
			call := c.Choices[0].Message.ToolCalls[0].Function
			var args struct{ City *string }
			if call.Name != "get_weather" || json.Unmarshal([]byte(call.Arguments), &args) != nil || args.City == nil {
				t.Errorf("chat: call %s(%s)", call.Name, call.Arguments)
			}

			for _, api := range []struct{ path, body string }{
				{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true}`},
				{"/v1/responses", `{"input":"Hi","max_output_tokens":8,"stream":true}`},
				{"/v1/messages", `{"model":"x","messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true}`},
			} {
				resp := post(t, ts.URL+api.path, api.body)
				var b strings.Builder
				buf := make([]byte, 4096)
				for {
					n, err := resp.Body.Read(buf)
					b.Write(buf[:n])
					if err != nil {
						break
					}
				}
				if resp.StatusCode != 200 || !strings.Contains(b.String(), "data: ") {
					t.Errorf("%s: status %d, %.300q", api.path, resp.StatusCode, b.String())
				}
			}
		})
	}
}
