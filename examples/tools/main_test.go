package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/smollm3"
)

// script is a fake model: it answers with the given turns in order and
// records the conversations it was shown.
type script struct {
	turns []string
	seen  [][]smollm3.Message
}

func (s *script) gen(_ context.Context, msgs []smollm3.Message) (string, error) {
	s.seen = append(s.seen, append([]smollm3.Message(nil), msgs...))
	if len(s.seen) > len(s.turns) {
		return "", fmt.Errorf("script has only %d turns", len(s.turns))
	}
	return s.turns[len(s.seen)-1], nil
}

func TestConverse(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	quiet := slog.New(slog.DiscardHandler)
	tests := []struct {
		name      string
		turns     []string
		wantTools []string // contents of the tool messages, in order
		wantErr   string
	}{
		{"two calls, then the answer", []string{
			"<tool_call>\n{\"name\": \"multiply\", \"arguments\": {\"a\": 1234, \"b\": 5678}}\n</tool_call>\n<tool_call>\n{\"name\": \"current_time\", \"arguments\": {\"zone\": \"Asia/Tokyo\"}}\n</tool_call>",
			"1234 × 5678 = 7006652; in Tokyo it is 21:00.",
		}, []string{`{"product":7006652}`, `{"time":"2026-11-22 21:00 JST"}`}, ""},
		{"no call", []string{"Hello!"}, nil, ""},
		{"errors go back to the model", []string{
			"<tool_call>{\"name\": \"divide\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"multiply\", \"arguments\": {\"a\": 2}}</tool_call><tool_call>{broken</tool_call>",
			"Sorry.",
		}, []string{`{"error":"there is no tool named \"divide\""}`, `{"error":"multiply needs numbers \"a\" and \"b\""}`, `{"error":"could not read your tool call: malformed tool call: not valid JSON`}, ""},
		{"rounds run out", []string{
			"<tool_call>{\"name\": \"multiply\", \"arguments\": {\"a\": 1, \"b\": 2}}</tool_call>",
			"<tool_call>{\"name\": \"multiply\", \"arguments\": {\"a\": 3, \"b\": 4}}</tool_call>",
		}, []string{`{"product":2}`, `{"product":12}`}, "still calls tools after 2 rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{turns: tt.turns}
			msgs, err := converse(context.Background(), s.gen, demoTools(now), []smollm3.Message{{Role: "user", Content: "q"}}, 2, quiet)
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
			// The model saw its own calls and the results on its next turn.
			if len(s.seen) > 1 {
				prev := s.seen[1]
				if prev[1].Role != "assistant" || prev[1].Content != tt.turns[0] || prev[2].Role != "tool" {
					t.Fatalf("second turn saw %q", prev)
				}
			}
		})
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
