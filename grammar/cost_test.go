package grammar

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// manyRefs is a schema with n definitions, each used once through a $ref
// (the shape that used to take 7.4 s for 4,000).
func manyRefs(n int) string {
	var defs, props []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"x%d":{"type":"integer"}}}`, i, i))
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i))
	}
	return `{"$defs":{` + strings.Join(defs, ",") + `},"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

// ruleChain is a grammar of n rules, each calling the next (the shape that
// used to take 6.6 s for 55,000).
func ruleChain(n int) string {
	var b strings.Builder
	b.WriteString("root ::= r0\n")
	for i := range n {
		fmt.Fprintf(&b, "r%d ::= r%d\n", i, i+1)
	}
	fmt.Fprintf(&b, "r%d ::= \"x\"\n", n)
	return b.String()
}

// TestCompileLinear checks that compiling many $refs and long rule chains
// grows linearly, by allocations (deterministic, unlike time; the old
// compiler parsed $defs once per $ref): twice the input costs about twice
// as much. BenchmarkCompile has the times.
func TestCompileLinear(t *testing.T) {
	for _, tc := range []struct {
		name    string
		compile func(n int) error
		n       int
	}{
		{"refs", func(n int) error { _, err := FromJSONSchema([]byte(manyRefs(n))); return err }, 1000},
		{"chain", func(n int) error {
			g, err := Parse(ruleChain(n))
			if err == nil {
				if _, complete := g.Match([]byte("x")); !complete {
					err = errors.New("x does not match")
				}
			}
			return err
		}, 10000},
	} {
		var err error
		allocs := func(n int) float64 {
			return testing.AllocsPerRun(1, func() {
				if e := tc.compile(n); e != nil {
					err = e
				}
			})
		}
		a, b := allocs(tc.n), allocs(2*tc.n)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if b > 2.5*a {
			t.Errorf("%s: %.0f allocations for %d, %.0f for %d: not linear", tc.name, a, tc.n, b, 2*tc.n)
		}
	}
}

// TestCompileCancelled: a done context stops compilation with its error.
func TestCompileCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FromJSONSchemaContext(ctx, []byte(manyRefs(10))); err != context.Canceled {
		t.Errorf("FromJSONSchemaContext: %v", err)
	}
	if _, err := ParseContext(ctx, ruleChain(10)); err != context.Canceled {
		t.Errorf("ParseContext: %v", err)
	}
	if _, err := ToolCallsContext(ctx, []Function{{Name: "f"}}, ToolCallOptions{}); err != context.Canceled {
		t.Errorf("ToolCallsContext: %v", err)
	}
	// Cancelled while running: the check inside the loops sees it.
	cc := &canceller{ctx: ctx}
	if _, err := parseGBNF(ruleChain(5000), cc); err != context.Canceled {
		t.Errorf("parseGBNF: %v", err)
	}
}

// TestCompileBounds: grammars and schemas too large to compile are refused
// with an error that says so, quickly.
func TestCompileBounds(t *testing.T) {
	big := "root ::= " + strings.Repeat(`"abcdefgh"{1000} `, 2500)
	if _, err := Parse(big); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("Parse of a huge repetition: %v", err)
	}
	var alts []string
	for i := range maxOneOf + 1 {
		alts = append(alts, fmt.Sprintf(`{"const":%d}`, i))
	}
	if _, err := FromJSONSchema([]byte(`{"oneOf":[` + strings.Join(alts, ",") + `]}`)); err == nil || !strings.Contains(err.Error(), "more than 256 branches") {
		t.Errorf("oneOf: %v", err)
	}
	pats := strings.Repeat(`{"type":"string","pattern":"^[a-z]{0,30}x[a-z]{0,30}$","maxLength":40},`, 400)
	if _, err := FromJSONSchema([]byte(`{"type":"array","prefixItems":[` + strings.TrimSuffix(pats, ",") + `]}`)); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("many counted patterns: %v", err)
	}
}

// BenchmarkCompile measures compiling the shapes that used to be
// quadratic.
func BenchmarkCompile(b *testing.B) {
	refs := []byte(manyRefs(4000))
	chain := ruleChain(55000)
	b.Run("refs-4k", func(b *testing.B) {
		for b.Loop() {
			if _, err := FromJSONSchema(refs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("chain-55k", func(b *testing.B) {
		for b.Loop() {
			if _, err := Parse(chain); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestParseBound: grammar text with more items than MaxProgram is refused
// while parsing, before the syntax tree grows with it.
func TestParseBound(t *testing.T) {
	src := "root ::= " + strings.Repeat("x ", MaxProgram+1) + "\nx ::= \"a\""
	if _, err := Parse(src); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("error %v", err)
	}
}
