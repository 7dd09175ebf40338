package grammar_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/sample"
	_ "github.com/smolgo/smolgo/smollm3" // registers SmolLM3 with engine.Open
)

// TestModelGenerations runs constrained decoding with a real model in the
// loop: the tiny SmolLM3 of golden/realvocab (random weights, SmolLM3's
// real 128,256-token vocabulary) samples at temperature 1 with a new seed
// each time, and every answer must parse and match the schema. 100
// generations (1000 with SMOLGO_HEAVY=1).
func TestModelGenerations(t *testing.T) {
	_, m := goldentest.Open(t, sharedtest.Path(t, "golden/realvocab/smollm3-realvocab-F16.gguf"), engine.WithThreads(1))
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.NewVocab(grammar.TokenBytes(tok), tok.EndOfGeneration())
	if err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"object","properties":{
		"answer":{"enum":["yes","no","maybe"]},
		"confidence":{"type":"integer"},
		"score":{"type":"number"},
		"note":{"type":"string","maxLength":6},
		"tags":{"type":"array","items":{"type":"string","maxLength":4},"maxItems":2},
		"ok":{"type":["boolean","null"]}},
	  "required":["answer","confidence","note"],"additionalProperties":false}`
	g, err := grammar.FromJSONSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cache, err := m.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	prompt := tok.Encode("<|im_start|>user\nAnswer in JSON.<|im_end|>\n<|im_start|>assistant\n", true)
	promptLogits, err := m.Forward(ctx, cache, prompt, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	promptLogits = slices.Clone(promptLogits)
	runs := 100
	if os.Getenv("SMOLGO_HEAVY") != "" {
		runs = 1000
	}
	logits := make([]float32, len(promptLogits))
	tokens := 0
	start := time.Now()
	for run := range runs {
		if err := cache.Truncate(len(prompt)); err != nil {
			t.Fatal(err)
		}
		copy(logits, promptLogits)
		c := g.NewConstraint(v)
		s := sample.New(sample.Config{Temperature: 1, Seed: uint64(100 + run)})
		var ids []int32
		for {
			c.Apply(logits)
			id := s.Sample(logits)
			if err := c.Accept(id); err != nil {
				t.Fatalf("run %d: the sampler picked a masked token: %v", run, err)
			}
			if tok.IsEndOfGeneration(id) {
				break
			}
			ids = append(ids, id)
			if len(ids) > 500 {
				t.Fatalf("run %d: no end after 500 tokens", run)
			}
			out, err := m.Forward(ctx, cache, []int32{id}, cache.Len(), false)
			if err != nil {
				t.Fatal(err)
			}
			copy(logits, out)
		}
		tokens += len(ids) + 1
		text, err := tok.Decode(ids, false)
		if err != nil {
			t.Fatal(err)
		}
		var val struct {
			Answer     string         `json:"answer"`
			Confidence *json.Number   `json:"confidence"`
			Note       *string        `json:"note"`
			Tags       []string       `json:"tags"`
			Rest       map[string]any `json:"-"`
		}
		if err := json.Unmarshal([]byte(text), &val); err != nil {
			t.Fatalf("run %d: %v: %q", run, err, text)
		}
		var all map[string]any
		_ = json.Unmarshal([]byte(text), &all)
		if !slices.Contains([]string{"yes", "no", "maybe"}, val.Answer) || val.Confidence == nil || val.Note == nil ||
			len([]rune(*val.Note)) > 6 || len(val.Tags) > 2 {
			t.Fatalf("run %d: does not match the schema: %q", run, text)
		}
		if _, err := val.Confidence.Int64(); err != nil {
			t.Fatalf("run %d: confidence is not an integer: %q", run, text)
		}
		for k := range all {
			if !slices.Contains([]string{"answer", "confidence", "score", "note", "tags", "ok"}, k) {
				t.Fatalf("run %d: unexpected property %q: %q", run, k, text)
			}
		}
		if run < 3 {
			t.Logf("run %d: %s", run, text)
		}
	}
	t.Logf("%d runs, %d tokens, %.1f ms/token with the model", runs, tokens, float64(time.Since(start).Milliseconds())/float64(tokens))
}
