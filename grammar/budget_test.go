package grammar

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestLeftIsConsistent checks the property the budget's guarantee rests
// on: from any state met on random walks, following the allowed token with
// the fewest tokens left reaches a complete output in at most left(s)
// tokens, each step lowering left by at least one.
func TestLeftIsConsistent(t *testing.T) {
	v, _ := smallVocab(t)
	for _, src := range []string{
		`root ::= "{" ws "\"name\"" ws ":" ws [a-z]+ ws "}"` + "\nws ::= [ ]*",
		`root ::= ("ab" | "abc" "d"+ | "x" root "y") "!"`,
		"root ::= value\n" + jsonPrimitives,
	} {
		g := MustParse(src)
		mask := make([]bool, v.Len())
		for seed := range 20 {
			rng := rand.New(rand.NewPCG(uint64(seed), 3))
			c := g.NewConstraint(v)
			for step := 0; step < 30 && !c.Done(); step++ {
				c.Allow(mask)
				var allowed []int32
				for id, ok := range mask {
					if ok && !v.isEOG(int32(id)) {
						allowed = append(allowed, int32(id))
					}
				}
				if err := c.Accept(allowed[rng.IntN(len(allowed))]); err != nil {
					t.Fatal(err)
				}
				// From here, greedily finish.
				s := c.state
				u := c.left(s)
				if u == noSpelling {
					t.Fatalf("%q: state %d: vocabulary cannot finish", src, s)
				}
				for n := 0; !c.m.complete(s); n++ {
					if n >= int(u) {
						t.Fatalf("%q: seed %d: left = %d but not complete after %d tokens", src, seed, u, n)
					}
					best, bestU := int32(-1), int32(noSpelling)
					for id, b := range v.tokens {
						if len(b) == 0 || v.isEOG(int32(id)) {
							continue
						}
						s2 := s
						for _, ch := range b {
							if s2 = c.m.step(s2, ch); s2 == deadState {
								break
							}
						}
						if s2 != deadState && c.left(s2) < bestU {
							best, bestU = int32(id), c.left(s2)
						}
					}
					if best < 0 || bestU > c.left(s)-1 {
						t.Fatalf("%q: seed %d: left %d, best next %d: not consistent", src, seed, c.left(s), bestU)
					}
					for _, ch := range v.tokens[best] {
						s = c.m.step(s, ch)
					}
				}
			}
		}
	}
}

// TestLeftExact pins left on cases where the fewest tokens are known.
func TestLeftExact(t *testing.T) {
	v, _ := smallVocab(t)
	for _, tc := range []struct {
		src  string
		want int // MinBudget at the start
	}{
		{`root ::= "abcd"`, 2},               // "abcd", then the end of generation
		{`root ::= "ab" "x"*`, 2},            // "ab"
		{`root ::= "true" | "q"`, 2},         // either takes one token
		{`root ::= "zq" | "abcdab"`, 3},      // "z" "q"
		{`root ::= "{" [a-z]+ "}"`, 4},       // "{" "a" "}"
		{`root ::= "" | "abc"`, 1},           // complete already
		{`root ::= "\"name\": \"red\"}"`, 3}, // "name": " then red"}
	} {
		c := MustParse(tc.src).NewConstraint(v)
		if got := c.MinBudget(); got != tc.want {
			t.Errorf("%s: MinBudget = %d, want %d", tc.src, got, tc.want)
		}
	}
	// A vocabulary that cannot spell the completion.
	nov, err := NewVocab([][]byte{[]byte("a"), []byte("<end>")}, []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	if got := MustParse(`root ::= "ab"`).NewConstraint(nov).MinBudget(); got != noSpelling {
		t.Errorf("unspellable: MinBudget = %d", got)
	}
}

// TestLimitBruteForce checks masks under a limit against the definition:
// a token is allowed iff the grammar allows it and the output can still be
// finished in the tokens left after it, and the limited mask is the
// unlimited one when the budget is ample. Random walks under budgets from
// MinBudget up always end complete within them.
func TestLimitBruteForce(t *testing.T) {
	v, eog := smallVocab(t)
	schemas := []string{
		`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"c":{"enum":["red","ab"]}},"required":["name","c"]}`,
		`{"type":"array","items":{"type":"array","items":{"type":"number"}},"minItems":2}`,
		`{}`,
	}
	mask, free := make([]bool, v.Len()), make([]bool, v.Len())
	for si, schema := range schemas {
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		for seed := range 30 {
			rng := rand.New(rand.NewPCG(uint64(si), uint64(seed)))
			c := g.NewConstraint(v)
			budget := c.MinBudget() + rng.IntN(6)
			var out []byte
			for used := 0; ; used++ {
				if used >= budget {
					t.Fatalf("schema %d seed %d: budget %d spent, output %q", si, seed, budget, out)
				}
				c.Limit(0)
				c.Allow(free)
				c.Limit(budget - used)
				c.Allow(mask)
				var allowed []int32
				for id := range v.Len() {
					want := free[id]
					if want && int32(id) != eog {
						s := c.state
						for _, ch := range v.tokens[id] {
							s = c.m.step(s, ch)
						}
						want = int(c.left(s)) <= budget-used-2
					}
					if mask[id] != want {
						t.Fatalf("schema %d seed %d after %q, %d left: mask[%q] = %v, want %v", si, seed, out, budget-used, v.tokens[id], mask[id], want)
					}
					if want {
						allowed = append(allowed, int32(id))
					}
				}
				id := allowed[rng.IntN(len(allowed))]
				if err := c.Accept(id); err != nil {
					t.Fatal(err)
				}
				if id == eog {
					break
				}
				out = append(out, v.tokens[id]...)
			}
			if !json.Valid(out) {
				t.Fatalf("schema %d seed %d: invalid JSON %q", si, seed, out)
			}
		}
	}
	// Ample budgets change nothing.
	c := JSONValue().NewConstraint(v)
	c.Allow(free)
	c.Limit(1000)
	c.Allow(mask)
	if !slices.Equal(mask, free) {
		t.Fatal("a budget of 1000 tokens changed the first mask")
	}
}

// TestLimitTooSmall: a budget below MinBudget cannot be met, but masks
// still allow something, heading for the end.
func TestLimitTooSmall(t *testing.T) {
	v, eog := smallVocab(t)
	c := MustParse(`root ::= "{" [a-z]+ "}"`).NewConstraint(v)
	mask := make([]bool, v.Len())
	var out []byte
	for n := 0; n < 10; n++ {
		c.Limit(1)
		c.Allow(mask)
		id := int32(slices.Index(mask, true))
		if id < 0 {
			t.Fatalf("after %q: nothing allowed", out)
		}
		if err := c.Accept(id); err != nil {
			t.Fatal(err)
		}
		if id == eog {
			break
		}
		out = append(out, v.tokens[id]...)
	}
	if !bytes.HasSuffix(out, []byte("}")) || len(out) > 4 {
		t.Fatalf("output %q: want the shortest way to the end", out)
	}
}

// TestBudgetedGenerations is the end-to-end property over SmolLM3's
// vocabulary: 100 "generations" that sample with random logits under small
// token budgets (MinBudget plus a few), for several schemas and tool-call
// grammars, all end in a complete value that parses and validates, within
// the budget.
func TestBudgetedGenerations(t *testing.T) {
	v, _ := realVocab(t)
	schemas := []string{
		personSchema,
		`{"type":"object","properties":{"answer":{"enum":["yes","no","maybe"]},"confidence":{"type":"integer","minimum":0,"maximum":100},
		  "note":{"type":"string","minLength":3,"maxLength":8},"tags":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":3}},
		  "required":["answer","confidence","note","tags"],"additionalProperties":false}`,
		`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v","kids"]}},
		  "$ref":"#/$defs/node"}`,
		`{"type":"array","items":{"type":"array","items":{"type":"number"},"minItems":1},"minItems":3}`,
	}
	tools := []Function{
		{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city","unit"]}`)},
		{Name: "search", Parameters: []byte(`{"type":"object","properties":{"query":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1}},"required":["query"]}`)},
	}
	type target struct {
		g      *Grammar
		schema any // nil: tool calls
	}
	var targets []target
	for _, s := range schemas {
		g, err := FromJSONSchema([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		var schema any
		if err := json.Unmarshal([]byte(s), &schema); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target{g, schema})
	}
	tg, err := ToolCalls(tools)
	if err != nil {
		t.Fatal(err)
	}
	targets = append(targets, target{g: tg})
	one, err := ToolCallsContext(context.Background(), tools[1:], ToolCallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	targets = append(targets, target{g: one})
	logits := make([]float32, v.Len())
	for run := range 100 {
		tt := targets[run%len(targets)]
		rng := rand.New(rand.NewPCG(uint64(run), 77))
		c := tt.g.NewConstraint(v)
		budget := c.MinBudget() + rng.IntN(8)
		// Random logits, masked by Apply, and the best one taken.
		out := generateWithin(t, c, v, budget, func() int32 {
			for i := range logits {
				logits[i] = rng.Float32() * 10
			}
			if c.Apply(logits) == 0 {
				t.Fatalf("run %d: nothing allowed", run)
			}
			id := int32(0)
			for i, l := range logits {
				if l > logits[id] {
					id = int32(i)
				}
			}
			return id
		})
		if tt.schema == nil {
			checkToolCalls(t, run, out, tools)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err != nil || dec.More() {
			t.Fatalf("run %d: output does not parse (%v): %q", run, err, out)
		}
		if err := validate(tt.schema, tt.schema, val, ""); err != nil {
			t.Fatalf("run %d: %v in %q", run, err, out)
		}
		if run < 5 {
			t.Logf("run %d (budget %d): %s", run, budget, out)
		}
	}
}

// generateWithin runs c to its end under a budget of tokens: before each
// token it sets the limit to what is left and asks next for the token
// (which must be allowed). It fails the test when the budget runs out and
// returns the output.
func generateWithin(t *testing.T, c *Constraint, v *Vocab, budget int, next func() int32) []byte {
	t.Helper()
	var out []byte
	for used := 0; ; used++ {
		if used == budget {
			t.Fatalf("budget of %d tokens spent without an end: %q", budget, out)
		}
		c.Limit(budget - used)
		id := next()
		if err := c.Accept(id); err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		if v.isEOG(id) {
			return out
		}
		out = append(out, v.tokens[id]...)
	}
}

// uniformPick returns a next function for generateWithin that picks
// uniformly among the allowed tokens.
func uniformPick(rng *rand.Rand, c *Constraint, mask []bool) func() int32 {
	return func() int32 {
		c.Allow(mask)
		var allowed []int32
		for id, ok := range mask {
			if ok {
				allowed = append(allowed, int32(id))
			}
		}
		return allowed[rng.IntN(len(allowed))]
	}
}

// checkToolCalls checks that out is <tool_call> blocks whose JSON names
// one of tools and has arguments valid under its parameters.
func checkToolCalls(t *testing.T, run int, out []byte, tools []Function) {
	t.Helper()
	blocks := strings.Split(string(out), "\n<tool_call>\n")
	for i, b := range blocks {
		if i == 0 {
			b = strings.TrimPrefix(b, "<tool_call>\n")
		}
		body, ok := strings.CutSuffix(b, "\n</tool_call>")
		if !ok {
			t.Fatalf("run %d: block %d is not closed: %q", run, i, out)
		}
		var call struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(body), &call); err != nil {
			t.Fatalf("run %d: block %d: %v: %q", run, i, err, out)
		}
		k := slices.IndexFunc(tools, func(f Function) bool { return f.Name == call.Name })
		if k < 0 {
			t.Fatalf("run %d: unknown function %q", run, call.Name)
		}
		var schema, args any
		_ = json.Unmarshal(tools[k].Parameters, &schema)
		dec := json.NewDecoder(bytes.NewReader(call.Arguments))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			t.Fatal(err)
		}
		if err := validate(schema, schema, args, ""); err != nil {
			t.Fatalf("run %d: %v in %q", run, err, out)
		}
	}
}
