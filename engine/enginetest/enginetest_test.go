package enginetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/engine/enginetest"
	"github.com/smolgo/smolgo/grammar"
)

func run(t *testing.T, s *engine.Session, msgs []engine.Message, opts engine.GenerateOptions) (reasoning, content string, calls []engine.ToolCall, st *engine.Stats) {
	t.Helper()
	for ev, err := range s.Generate(context.Background(), msgs, opts) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case engine.EventReasoning:
			reasoning += ev.Text
		case engine.EventContent:
			content += ev.Text
		case engine.EventToolCall:
			calls = append(calls, *ev.ToolCall)
		case engine.EventDone:
			st = ev.Stats
		}
	}
	return
}

// TestModel: the fake model answers what Answer says, through the real
// engine: reasoning apart, tool calls read, the prompt cached between
// turns, constraints applied.
func TestModel(t *testing.T) {
	m, err := enginetest.New(enginetest.Options{Answer: func(prompt string) string {
		msgs := enginetest.ParseChatML(prompt)
		last := msgs[len(msgs)-1].Content
		if strings.HasPrefix(last, "call") {
			return "<think>\nA tool.\n</think>\nSure.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>"
		}
		if enginetest.ThinkingOff(prompt) {
			return "You said: " + last
		}
		return fmt.Sprintf("<think>\nThe user said %d words.\n</think>\nYou said: %s", len(strings.Fields(last)), last)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	msgs := []engine.Message{{Role: "user", Content: "hello there"}}
	tools := []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f"}}`)}
	r, c, _, st := run(t, s, msgs, engine.GenerateOptions{Tools: tools})
	if r != "The user said 2 words." || c != "You said: hello there" || st.StopReason != engine.StopEndOfTurn {
		t.Fatalf("%q %q %+v", r, c, st)
	}
	msgs = append(msgs, engine.Message{Role: "assistant", Content: c}, engine.Message{Role: "user", Content: "call it"})
	_, c, calls, st := run(t, s, msgs, engine.GenerateOptions{Tools: tools})
	if c != "Sure." || len(calls) != 1 || calls[0].Name != "f" || string(calls[0].Arguments) != `{"x":1}` || st.CachedTokens < 10 {
		t.Fatalf("%q %+v %+v", c, calls, st)
	}
	g := grammar.MustParse(`root ::= "You said: " [a-z ]+`)
	cons, err := m.NewConstraint(g)
	if err != nil {
		t.Fatal(err)
	}
	_, c, _, _ = run(t, m.NewSession(), []engine.Message{{Role: "user", Content: "hello there"}}, engine.GenerateOptions{Constraint: cons})
	if c != "You said: hello there" {
		t.Fatalf("constrained: %q", c)
	}
}
