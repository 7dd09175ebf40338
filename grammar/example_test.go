package grammar_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/smolgo/smolgo/grammar"
)

// A toy vocabulary: a few tokens and an end-of-generation token.
var (
	toyTokens = [][]byte{
		[]byte(`{"`), []byte(`answer`), []byte(`":`), []byte(` `), []byte(`"yes"`), []byte(`"no"`),
		[]byte(`}`), []byte(`yes`), []byte(`{`), []byte(`"}`), nil, []byte("<|im_end|>"),
	}
	toyEOG = []int32{11}
)

// A constraint makes any sampler produce valid output: here a random one.
func Example() {
	g, err := grammar.FromJSONSchema([]byte(`{
		"type": "object",
		"properties": {"answer": {"enum": ["yes", "no"]}},
		"required": ["answer"]
	}`))
	if err != nil {
		panic(err)
	}
	v, err := grammar.NewVocab(toyTokens, toyEOG)
	if err != nil {
		panic(err)
	}
	c := g.NewConstraint(v)
	mask := make([]bool, v.Len())
	rng := rand.New(rand.NewPCG(1, 2))
	out := ""
	for {
		c.Allow(mask)
		var allowed []int32
		for id, ok := range mask {
			if ok {
				allowed = append(allowed, int32(id))
			}
		}
		id := allowed[rng.IntN(len(allowed))] // a real sampler weighs by the logits
		if err := c.Accept(id); err != nil {
			panic(err)
		}
		if id == toyEOG[0] {
			break
		}
		out += string(toyTokens[id])
	}
	fmt.Println(out, json.Valid([]byte(out)))
	// Output: {"answer":"no" } true
}

// Allow says which tokens fit; end of generation only once the value is
// complete.
func ExampleConstraint_Allow() {
	g := grammar.MustParse(`root ::= "{" "}" | "{" "yes" "}"`)
	v, _ := grammar.NewVocab(toyTokens, toyEOG)
	c := g.NewConstraint(v)
	mask := make([]bool, v.Len())
	show := func() {
		var fits []string
		for id, ok := range mask {
			if ok {
				fits = append(fits, fmt.Sprintf("%q", toyTokens[id]))
			}
		}
		fmt.Println(fits, "done:", c.Done())
	}
	c.Allow(mask)
	show()
	_ = c.Accept(8) // {
	c.Allow(mask)
	show()
	_ = c.Accept(6) // }
	c.Allow(mask)
	show()
	// Output:
	// ["{"] done: false
	// ["}" "yes"] done: false
	// ["<|im_end|>"] done: true
}

// GBNF grammars go beyond JSON.
func ExampleParse() {
	g, err := grammar.Parse(`
root ::= item ("," " "? item)*
item ::= [a-z]+ ("=" [0-9]+)?
`)
	if err != nil {
		panic(err)
	}
	for _, s := range []string{"a=1, b,c=22", "a=1,", "a=", "A"} {
		prefix, complete := g.Match([]byte(s))
		fmt.Printf("%-12q prefix=%v complete=%v\n", s, prefix, complete)
	}
	_, err = grammar.Parse(`root ::= expr
expr ::= expr "+" [0-9] | [0-9]`)
	fmt.Println(err)
	// Output:
	// "a=1, b,c=22" prefix=true complete=true
	// "a=1,"       prefix=true complete=false
	// "a="         prefix=true complete=false
	// "A"          prefix=false complete=false
	// grammar: rule "expr" is left-recursive (it can reach itself without consuming input); rewrite it with repetition
}

// Unsupported schema keywords are errors that say where they are.
func ExampleFromJSONSchema_unsupported() {
	_, err := grammar.FromJSONSchema([]byte(`{"type":"object","properties":{"when":{"type":"string","format":"duration"}}}`))
	fmt.Println(err)
	// Output:
	// grammar: JSON schema at /properties/when/format: format "duration" is not supported (supported: date, date-time, email, hostname, ipv4, ipv6, iri, password, time, uri, uri-reference, uuid)
}
