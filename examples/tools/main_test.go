package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// script is a fake model: it answers with the given turns in order and
// records the conversations it was shown.
type script struct {
	turns []answer
	seen  [][]engine.Message
}

func (s *script) gen(_ context.Context, msgs []engine.Message) (answer, error) {
	s.seen = append(s.seen, slices.Clone(msgs))
	if len(s.seen) > len(s.turns) {
		return answer{}, fmt.Errorf("script has only %d turns", len(s.turns))
	}
	return s.turns[len(s.seen)-1], nil
}

// toolCall is a call the engine read out of an answer.
func toolCall(id, name, args string) call {
	return call{tc: &engine.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}, text: "<tool_call>…</tool_call>"}
}

func TestConverse(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	quiet := slog.New(slog.DiscardHandler)
	broken := call{text: "<tool_call>{broken</tool_call>", err: errors.New("malformed tool call: not valid JSON")}
	tests := []struct {
		name      string
		turns     []answer
		wantTools []string // contents of the tool messages, in order
		wantErr   string
	}{
		{"two calls, then the answer", []answer{
			{calls: []call{toolCall("call_0", "multiply", `{"a": 1234, "b": 5678}`), toolCall("call_1", "current_time", `{"zone": "Asia/Tokyo"}`)}},
			{content: "1234 × 5678 = 7006652; in Tokyo it is 21:00."},
		}, []string{`{"product":7006652}`, `{"time":"2026-11-22 21:00 JST"}`}, ""},
		{"no call", []answer{{content: "Hello!"}}, nil, ""},
		{"errors go back to the model", []answer{
			{content: "Let me see. ", calls: []call{toolCall("call_0", "divide", `{}`), toolCall("call_1", "multiply", `{"a": 2}`), broken}},
			{content: "Sorry."},
		}, []string{`{"error":"there is no tool named \"divide\""}`, `{"error":"multiply needs numbers \"a\" and \"b\""}`, `{"error":"could not read your tool call: malformed tool call: not valid JSON`}, ""},
		{"rounds run out", []answer{
			{calls: []call{toolCall("call_0", "multiply", `{"a": 1, "b": 2}`)}},
			{calls: []call{toolCall("call_0", "multiply", `{"a": 3, "b": 4}`)}},
		}, []string{`{"product":2}`, `{"product":12}`}, "still calls tools after 2 rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{turns: tt.turns}
			msgs, err := converse(context.Background(), s.gen, demoTools(now), []engine.Message{{Role: "user", Content: "q"}}, 2, quiet)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			var tools []string
			for _, m := range msgs {
				if m.Role == "tool" {
					tools = append(tools, m.Content)
				}
			}
			if len(tools) != len(tt.wantTools) {
				t.Fatalf("tool results %q, want %q", tools, tt.wantTools)
			}
			for i := range tools {
				if !strings.HasPrefix(tools[i], tt.wantTools[i]) {
					t.Fatalf("tool result %d = %q, want %q", i, tools[i], tt.wantTools[i])
				}
			}
			if len(s.seen) < 2 {
				return
			}
			// The model saw its own calls (the readable ones as calls,
			// the broken one as the text it wrote) and each result,
			// answering its call, on its next turn.
			first, prev := tt.turns[0], s.seen[1]
			reply := prev[1]
			wantContent := first.content
			var wantCalls []engine.ToolCall
			for _, c := range first.calls {
				if c.err != nil {
					wantContent += c.text
				} else {
					wantCalls = append(wantCalls, *c.tc)
				}
			}
			if reply.Role != "assistant" || reply.Content != wantContent || len(reply.ToolCalls) != len(wantCalls) {
				t.Fatalf("second turn saw the reply %+v, want content %q and %d calls", reply, wantContent, len(wantCalls))
			}
			for i, c := range wantCalls {
				if got := reply.ToolCalls[i]; got.ID != c.ID || got.Name != c.Name || string(got.Arguments) != string(c.Arguments) {
					t.Errorf("call %d seen as %+v, want %+v", i, got, c)
				}
			}
			results := prev[2:]
			if len(results) != len(first.calls) {
				t.Fatalf("second turn saw %d results for %d calls", len(results), len(first.calls))
			}
			for i, c := range first.calls {
				r := results[i]
				wantID, wantName := "", ""
				if c.tc != nil {
					wantID, wantName = c.tc.ID, c.tc.Name
				}
				if r.Role != "tool" || r.ToolCallID != wantID || r.Name != wantName {
					t.Errorf("result %d = %+v, want a tool message for call %q (%q)", i, r, wantID, wantName)
				}
			}
		})
	}
}

// TestCollect checks that an answer is read from the engine's events: the
// content pieces joined, the calls and unreadable calls in order, the
// reasoning and the stats left out, and a failure returned.
func TestCollect(t *testing.T) {
	tc := &engine.ToolCall{ID: "call_0", Name: "multiply", Arguments: json.RawMessage(`{"a":1,"b":2}`)}
	bad := errors.New("no name")
	events := []engine.Event{
		{Kind: engine.EventReasoning, Text: "hmm"},
		{Kind: engine.EventContent, Text: "Let me "},
		{Kind: engine.EventContent, Text: "compute."},
		{Kind: engine.EventToolCall, Text: "<tool_call>{...}</tool_call>", ToolCall: tc},
		{Kind: engine.EventToolError, Text: "<tool_call>{}</tool_call>", Err: bad},
		{Kind: engine.EventDone, Stats: &engine.Stats{StopReason: engine.StopEndOfTurn}},
	}
	stream := func(fail error) iter.Seq2[engine.Event, error] {
		return func(yield func(engine.Event, error) bool) {
			for _, ev := range events {
				if !yield(ev, nil) {
					return
				}
			}
			if fail != nil {
				yield(engine.Event{}, fail)
			}
		}
	}
	a, err := collect(stream(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a.content != "Let me compute." || len(a.calls) != 2 || a.calls[0].tc != tc || a.calls[0].err != nil ||
		a.calls[1].tc != nil || a.calls[1].err != bad || a.calls[1].text != "<tool_call>{}</tool_call>" {
		t.Fatalf("answer %+v", a)
	}
	boom := errors.New("boom")
	if _, err := collect(stream(boom)); err != boom {
		t.Fatalf("error %v, want %v", err, boom)
	}
}

// TestRunTinyModel runs the program on the tiny SmolLM3 with the real
// vocabulary (random weights: it will not call anything sensible, but the
// tools reach the template and the loop ends).
func TestRunTinyModel(t *testing.T) {
	model := sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf")
	var out strings.Builder
	err := run(context.Background(), []string{"-model", model, "-prompt", "What is 2 times 3?", "-n", "16", "-threads", "1"}, strings.NewReader(""), &out, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if out.Len() == 0 { // the answer is random text, possibly blank, but a line is printed
		t.Fatal("no answer printed")
	}
}
