package grammar

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestMaskCostBounded is the attack of issue 30: constraints whose masks
// cost more per token the longer the answer grows. A pattern of three
// .{0,1000} took 273 s for 40 tokens (its automaton followed hundreds of
// parses, more each token); now the pattern's automaton is deterministic
// (one parse), and any grammar's parses and per-mask work are bounded
// (MaxStacks, maxMaskWork), so that a mask costs a bounded amount at any
// length. Random allowed tokens stand in for a model.
func TestMaskCostBounded(t *testing.T) {
	v, _ := realVocab(t)
	pattern, err := FromJSONSchema([]byte(`{"type":"string","pattern":"^.{0,1000}.{0,1000}.{0,1000}$"}`))
	if err != nil {
		t.Fatal(err)
	}
	// The ambiguous grammar reaches its work budget after about 20 tokens,
	// at about 150 ms a mask on a shared 2-core machine; SMOLGO_HEAVY=1
	// runs it that far.
	long := 10
	if os.Getenv("SMOLGO_HEAVY") != "" {
		long = 40
	}
	for _, tc := range []struct {
		name      string
		g         *Grammar
		maxStacks int // most parses at once allowed along the way
		tokens    int
	}{
		{"pattern", pattern, 64, 40}, // the JSON escapes of one character: as many at any length
		{"ambiguous GBNF", MustParse(`root ::= [^"]{0,1000} " " [^"]{0,1000} " " [^"]{0,1000}`), MaxStacks, long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.g.NewConstraint(v)
			mask := make([]bool, v.Len())
			rng := rand.New(rand.NewPCG(1, 1))
			start := time.Now()
			quotes := 0 // the pattern's string stays open
			for i := range tc.tokens {
				t0 := time.Now()
				c.Allow(mask)
				if testing.Verbose() {
					t.Logf("token %d: %v, %d parses, %d expansions", i, time.Since(t0), len(c.m.states[c.state]), c.m.spent)
				}
				if c.m.spent > maxMaskWork+c.m.g.maxStep() {
					t.Fatalf("token %d: the mask took %d expansions, more than its budget %d", i, c.m.spent, maxMaskWork)
				}
				// Tokens that keep the string open, as a long answer does.
				var ids []int32
				for id, ok := range mask {
					if ok && len(v.tokens[id]) > 0 && quotes+strings.Count(string(v.tokens[id]), `"`) <= 1 {
						ids = append(ids, int32(id))
					}
				}
				if len(ids) == 0 {
					if !errors.Is(c.Err(), ErrTooAmbiguous) {
						t.Fatalf("token %d: nothing allowed, and Err says %v", i, c.Err())
					}
					return
				}
				id := ids[rng.IntN(len(ids))]
				if err := c.Accept(id); err != nil {
					t.Fatal(err)
				}
				quotes += strings.Count(string(v.tokens[id]), `"`)
				if n := len(c.m.states[c.state]); n > tc.maxStacks {
					t.Fatalf("token %d: %d parses at once, want at most %d", i, n, tc.maxStacks)
				}
			}
			t.Logf("%d tokens in %v", tc.tokens, time.Since(start))
		})
	}
}

// maxStep is the most expansions one step may add past the budget check
// (one state's stacks, each expanded over the program).
func (g *Grammar) maxStep() int { return MaxStacks * len(g.prog) }

// TestMaskSeesContext: a mask computation stops when the context given to
// SetContext ends, allowing nothing, and Err says why; the constraint
// works again under a live context.
func TestMaskSeesContext(t *testing.T) {
	v, _ := realVocab(t)
	g := MustParse(`root ::= [^"]{0,1000} " " [^"]{0,1000}`)
	c := g.NewConstraint(v)
	mask := make([]bool, v.Len())
	// Done from the start: nothing is walked.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.SetContext(ctx)
	c.Allow(mask)
	if n := countTrue(mask); n != 0 || !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("a cancelled context: %d allowed, Err %v", n, c.Err())
	}
	// Done in the middle of a walk: the walk stops at its next check.
	cd := &countdown{Context: context.Background(), left: 3}
	c.SetContext(cd)
	c.Allow(mask)
	if n := countTrue(mask); n != 0 || !errors.Is(c.Err(), context.Canceled) || cd.calls > 8 {
		t.Fatalf("a context ended mid-walk: %d allowed, Err %v after %d checks", n, c.Err(), cd.calls)
	}
	c.SetContext(context.Background())
	c.Allow(mask)
	if n := countTrue(mask); n == 0 || c.Err() != nil {
		t.Fatalf("a live context: %d allowed, Err %v", n, c.Err())
	}
}

// countdown is a context whose Err turns to Canceled after left calls.
type countdown struct {
	context.Context
	left, calls int
}

func (c *countdown) Err() error {
	c.calls++
	if c.left--; c.left < 0 {
		return context.Canceled
	}
	return nil
}

func countTrue(m []bool) int {
	n := 0
	for _, ok := range m {
		if ok {
			n++
		}
	}
	return n
}

// TestNarrowingLeavesAWay is issue 39's attack: root ::= [^"]{0,1000}
// [^"]{0,1000} died after about 9 tokens ("allows no token"). Once a state
// followed MaxStacks parses, the byte that finished a UTF-8 character was
// refused for leading to more, after its lead byte had been allowed: a
// token ending inside a character stranded the output. Now the parses that
// finish soonest are kept instead (machine.prune), so every state has a
// token that goes on, or is complete. A vocabulary of "a", runs of "a", a
// token ending inside 日 and its last byte reaches that point in a few
// tokens.
func TestNarrowingLeavesAWay(t *testing.T) {
	tokens := [][]byte{[]byte("a"), []byte(strings.Repeat("a", 48)), []byte("日")[:2], []byte("日")[2:], nil}
	const one, run, half, rest, eos = 0, 1, 2, 3, 4
	v, err := NewVocab(tokens, []int32{eos})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		`root ::= [^"]{0,1000} [^"]{0,1000}`,
		`root ::= [^"]{0,300} [^"]{0,300}`,
		`root ::= [^"]{0,1000} [^"]{0,1000} [^"]{0,1000}`,
	} {
		t.Run(src, func(t *testing.T) {
			c := MustParse(src).NewConstraint(v)
			mask := make([]bool, v.Len())
			saturated := false
			for i := 0; ; i++ {
				c.Allow(mask)
				saturated = saturated || len(c.m.states[c.state]) == MaxStacks
				var id int32 = -1
				for _, want := range []int32{half, run, one} {
					if mask[want] && (want != half || i%3 == 2) { // every third token ends inside a character
						id = want
						break
					}
				}
				if id < 0 {
					if !mask[eos] || !c.Done() {
						t.Fatalf("token %d (%d bytes in, %d parses): nothing allowed, Err %v", i, c.n, len(c.m.states[c.state]), c.Err())
					}
					break // the end, the only way left
				}
				if err := c.Accept(id); err != nil {
					t.Fatal(err)
				}
				if id == half {
					c.Allow(mask)
					if !mask[rest] {
						t.Fatalf("token %d (%d bytes in, %d parses): after the first two bytes of 日 its last is not allowed; Err %v", i, c.n, len(c.m.states[c.state]), c.Err())
					}
					if err := c.Accept(rest); err != nil {
						t.Fatal(err)
					}
				}
				if saturated && c.n > 800 {
					break
				}
			}
			if !saturated {
				t.Fatalf("%d bytes: the test never reached MaxStacks parses", c.n)
			}
		})
	}
}

// With a real vocabulary and random allowed tokens (5 seeds, as the attack
// ran), such a grammar goes on for as long as asked.
func TestAmbiguousGrammarGoesOn(t *testing.T) {
	v, _ := realVocab(t)
	g := MustParse(`root ::= [^"]{0,1000} [^"]{0,1000}`)
	seeds, tokens := 1, 12
	if os.Getenv("SMOLGO_HEAVY") != "" {
		seeds, tokens = 5, 40
	}
	for seed := range seeds {
		c := g.NewConstraint(v)
		mask := make([]bool, v.Len())
		rng := rand.New(rand.NewPCG(uint64(seed), 39))
		for i := range tokens {
			c.Allow(mask)
			var ids []int32
			for id, ok := range mask {
				if ok && len(v.tokens[id]) > 0 {
					ids = append(ids, int32(id))
				}
			}
			if len(ids) == 0 {
				t.Fatalf("seed %d, token %d (%d bytes in): nothing allowed, Err %v", seed, i, c.n, c.Err())
			}
			// Long tokens, to reach many parses in few masks; those that
			// end inside a character when there are any.
			id := ids[rng.IntN(len(ids))]
			for range 64 {
				if o := ids[rng.IntN(len(ids))]; len(v.tokens[o]) > len(v.tokens[id]) || !utf8.Valid(v.tokens[o]) && utf8.Valid(v.tokens[id]) {
					id = o
				}
			}
			if err := c.Accept(id); err != nil {
				t.Fatal(err)
			}
		}
	}
}
