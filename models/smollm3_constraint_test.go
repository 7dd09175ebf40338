package models_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/sample"
)

// TestGenerateJSONRealVocab runs structured output end to end through
// engine.Session.Generate: the tiny SmolLM3 with the real 128,256-token vocabulary,
// sampling with SmolLM3's settings and a new seed each time, must answer
// JSON that parses and has the schema's shape.
func TestGenerateJSONRealVocab(t *testing.T) {
	m, err := engine.Open(sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf"), engine.WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g, err := grammar.FromJSONSchema([]byte(`{"type":"object","properties":{"city":{"type":"string","maxLength":10},
		"temp":{"type":"number"},"sky":{"enum":["clear","cloudy","rain"]}},"required":["city","temp","sky"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	s := m.NewSession()
	for seed := range 10 {
		c, err := m.NewConstraint(g)
		if err != nil {
			t.Fatal(err)
		}
		opts := engine.GenerateOptions{Sampler: sample.SmolLM3Defaults(), Constraint: c}
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
		if err := dec.Decode(&ans); err != nil || r.stats.StopReason != engine.StopEndOfTurn {
			t.Fatalf("seed %d: %q (stop %s): %v", seed, r.content, r.stats.StopReason, err)
		}
		if ans.City == nil || len([]rune(*ans.City)) > 10 || ans.Temp == nil || !slices.Contains([]string{"clear", "cloudy", "rain"}, ans.Sky) {
			t.Fatalf("seed %d: %q does not match the schema", seed, r.content)
		}
	}
}
