package smollm3

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/sample"
)

// fakeGrammarVocab is the fake model's vocabulary for package grammar:
// bytes 0..255, the special tokens unusable, <|im_end|> ends the turn.
func fakeGrammarVocab(t *testing.T) *grammar.Vocab {
	t.Helper()
	tokens := make([][]byte, fakeVocab)
	for i := range 256 {
		tokens[i] = []byte{byte(i)}
	}
	v, err := grammar.NewVocab(tokens, []int32{fakeImEnd})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestGenerateWithConstraint(t *testing.T) {
	v := fakeGrammarVocab(t)
	g := grammar.MustParse(`root ::= "{\"a\":" [0-9]{1,3} "}"`)
	tests := []struct {
		name, answer string
		opts         GenerateOptions
		want, reason string
	}{
		// The model's own answer fits: the constraint changes nothing.
		{"answer fits", `{"a":42}`, GenerateOptions{}, `{"a":42}`, StopEndOfTurn},
		// The model wants to write something else: greedy decoding picks
		// the best allowed token (here the lowest id, as the fake's other
		// logits are equal), and the turn can only end once the value is
		// complete.
		{"answer does not fit", "hello", GenerateOptions{}, `{"a":000}`, StopEndOfTurn},
		{"thinking is turned off", "<think>\nhm\n</think>\n{\"a\":7}", GenerateOptions{Thinking: ptr(true)}, `{"a":000}`, StopEndOfTurn},
		{"max tokens cuts the value", `{"a":42}`, GenerateOptions{MaxTokens: 4}, `{"a"`, StopLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeBackend{ctxLen: 256, answer: fixed(tt.answer)}
			tt.opts.Constraint = g.NewConstraint(v)
			r := collect(newSession(f), context.Background(), user("json please"), tt.opts)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.content != tt.want || r.reasoning != "" || r.stats.StopReason != tt.reason {
				t.Fatalf("content %q reasoning %q stop %q; want %q, stop %q", r.content, r.reasoning, r.stats.StopReason, tt.want, tt.reason)
			}
			if done := tt.opts.Constraint.Done(); done != (tt.reason == StopEndOfTurn) {
				t.Fatalf("constraint Done = %v after stop %q", done, tt.reason)
			}
		})
	}
}

// badConstraint allows nothing, or rejects what was picked.
type badConstraint struct{ allowNone bool }

func (b badConstraint) Allow(mask []bool) {
	for i := range mask {
		mask[i] = !b.allowNone
	}
}
func (b badConstraint) Accept(id int32) error { return errors.New("no thanks") }
func (b badConstraint) Done() bool            { return false }

func TestConstraintErrors(t *testing.T) {
	for _, tt := range []struct {
		c    Constraint
		want string
	}{
		{badConstraint{allowNone: true}, "the constraint allows no token"},
		{badConstraint{}, "the constraint rejected sampled token 104: no thanks"},
	} {
		f := &fakeBackend{ctxLen: 256, answer: fixed("hi")}
		s := newSession(f)
		r := collect(s, context.Background(), user("x"), GenerateOptions{Constraint: tt.c})
		if r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
			t.Fatalf("error %v, want %q", r.err, tt.want)
		}
		// The session stays usable.
		if r := collect(s, context.Background(), user("x"), GenerateOptions{}); r.err != nil || r.content != "hi" {
			t.Fatalf("after the error: %q %v", r.content, r.err)
		}
	}
}

// TestGenerateJSONRealVocab runs structured output end to end through
// Session.Generate: the tiny SmolLM3 with the real 128,256-token vocabulary,
// sampling with SmolLM3's settings and a new seed each time, must answer
// JSON that parses and has the schema's shape.
func TestGenerateJSONRealVocab(t *testing.T) {
	m, err := Load(sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf"), WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.NewVocab(grammar.TokenBytes(tok), tok.EndOfGeneration())
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.FromJSONSchema([]byte(`{"type":"object","properties":{"city":{"type":"string","maxLength":10},
		"temp":{"type":"number"},"sky":{"enum":["clear","cloudy","rain"]}},"required":["city","temp","sky"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	s := m.NewSession()
	for seed := range 10 {
		opts := GenerateOptions{Sampler: sample.SmolLM3Defaults(), Constraint: g.NewConstraint(v)}
		opts.Sampler.Seed = uint64(seed + 1)
		r := collect(s, context.Background(), user("What is the weather in Paris? Answer in JSON."), opts)
		if r.err != nil {
			t.Fatal(r.err)
		}
		var ans struct {
			City *string  `json:"city"`
			Temp *float64 `json:"temp"`
			Sky  string   `json:"sky"`
		}
		dec := json.NewDecoder(strings.NewReader(r.content))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ans); err != nil || r.stats.StopReason != StopEndOfTurn {
			t.Fatalf("seed %d: %q (stop %s): %v", seed, r.content, r.stats.StopReason, err)
		}
		if ans.City == nil || len([]rune(*ans.City)) > 10 || ans.Temp == nil || !slices.Contains([]string{"clear", "cloudy", "rain"}, ans.Sky) {
			t.Fatalf("seed %d: %q does not match the schema", seed, r.content)
		}
	}
}
