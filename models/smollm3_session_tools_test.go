package models_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/toolcall"
)

// SmolLM3's format reads tool calls out of scripted answers, tokenized by
// the tiny model's vocabulary (so tags arrive split over several tokens).
func TestGenerateToolCalls(t *testing.T) {
	weather := []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}`)}
	type call struct{ name, args string }
	tests := []struct {
		name        string
		answer      string
		opts        engine.GenerateOptions
		wantContent string
		wantCalls   []call
		wantErrs    []string // Text of the engine.EventToolError events
		wantKinds   string   // the event kinds in order, runs of one kind collapsed
	}{
		{
			name:      "one call",
			answer:    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			opts:      engine.GenerateOptions{Tools: weather},
			wantCalls: []call{{"get_weather", `{"city":"Paris"}`}},
			wantKinds: "tool call,done",
		},
		{
			name: "text, two calls, text",
			answer: "Let me check. <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>" +
				"<tool_call>{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}</tool_call> Done.",
			opts:        engine.GenerateOptions{Tools: weather},
			wantContent: "Let me check.  Done.",
			wantCalls:   []call{{"a", `{}`}, {"b", `{"x":[1,2]}`}},
			wantKinds:   "content,tool call,content,done",
		},
		{
			name:      "reasoning then a call",
			answer:    "<think>\nI need the weather.\n</think>\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>",
			opts:      engine.GenerateOptions{Tools: weather},
			wantCalls: []call{{"get_weather", `{"city":"Oslo"}`}},
			wantKinds: "reasoning,tool call,done",
		},
		{
			name:        "malformed call is an error event, the generation goes on",
			answer:      "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": }</tool_call>ok",
			opts:        engine.GenerateOptions{Tools: weather},
			wantContent: "ok",
			wantErrs:    []string{"<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": }</tool_call>"},
			wantKinds:   "tool error,content,done",
		},
		{
			name:      "unclosed complete call at the end is read",
			answer:    "<tool_call>{\"name\": \"a\", \"arguments\": {\"k\": 1}}",
			opts:      engine.GenerateOptions{Tools: weather},
			wantCalls: []call{{"a", `{"k":1}`}},
			wantKinds: "tool call,done",
		},
		{
			name:      "unclosed broken call at the end is an error",
			answer:    "<tool_call>{\"name\": \"a\", \"argu",
			opts:      engine.GenerateOptions{Tools: weather},
			wantErrs:  []string{"<tool_call>{\"name\": \"a\", \"argu</tool_call>"},
			wantKinds: "tool error,done",
		},
		{
			name:        "text held for a stop string goes out before the call",
			answer:      "see ST<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>STOP never",
			opts:        engine.GenerateOptions{Tools: weather, Stop: []string{"STOP"}},
			wantContent: "see ST",
			wantCalls:   []call{{"a", `{}`}},
			wantKinds:   "content,tool call,done",
		},
		{
			name:        "without Tools a call is plain content",
			answer:      "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>",
			wantContent: "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>",
			wantKinds:   "content,done",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := scriptedModel(t, user("weather?"), engine.PromptOptions{Tools: tt.opts.Tools}, tt.answer)
			r := collect(m.NewSession(), context.Background(), user("weather?"), tt.opts)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.content != tt.wantContent {
				t.Errorf("content %q, want %q", r.content, tt.wantContent)
			}
			var calls []call
			var errs, kinds []string
			for i, ev := range r.events {
				if k := ev.Kind.String(); len(kinds) == 0 || kinds[len(kinds)-1] != k {
					kinds = append(kinds, k)
				}
				switch ev.Kind {
				case engine.EventToolCall:
					if ev.ToolCall == nil || ev.Err != nil {
						t.Fatalf("event %d: tool call %+v, err %v", i, ev.ToolCall, ev.Err)
					}
					calls = append(calls, call{ev.ToolCall.Name, string(ev.ToolCall.Arguments)})
					// Text is the call as SmolLM3 writes it: it reads back
					// as the same call.
					text, back, err := toolcall.Parse(ev.Text)
					if err != nil || text != "" || len(back) != 1 || back[0].Name != ev.ToolCall.Name ||
						string(back[0].Arguments) != string(ev.ToolCall.Arguments) {
						t.Errorf("event %d: Text %q reads back as %q %+v %v", i, ev.Text, text, back, err)
					}
				case engine.EventToolError:
					if !errors.Is(ev.Err, toolcall.ErrMalformed) || ev.ToolCall != nil {
						t.Fatalf("event %d: tool error %v (call %+v), want one wrapping toolcall.ErrMalformed", i, ev.Err, ev.ToolCall)
					}
					errs = append(errs, ev.Text)
				}
			}
			if got, want := strings.Join(kinds, ","), tt.wantKinds; got != want {
				t.Errorf("event kinds %s, want %s", got, want)
			}
			if len(calls) != len(tt.wantCalls) {
				t.Fatalf("calls %+v, want %+v", calls, tt.wantCalls)
			}
			for i, c := range calls {
				w := tt.wantCalls[i]
				var got, want any
				if err := json.Unmarshal([]byte(c.args), &got); err != nil {
					t.Fatalf("call %d arguments %q: %v", i, c.args, err)
				}
				json.Unmarshal([]byte(w.args), &want)
				if c.name != w.name || !jsonEqual(got, want) {
					t.Errorf("call %d is %s(%s), want %s(%s)", i, c.name, c.args, w.name, w.args)
				}
			}
			if strings.Join(errs, "|") != strings.Join(tt.wantErrs, "|") {
				t.Errorf("tool errors %q, want %q", errs, tt.wantErrs)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
