package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// smallVocab is a byte-level vocabulary in miniature: every single byte,
// some multi-byte tokens that cross JSON structure (`",`, `"}`, `[[`),
// a control token (nil) and an end-of-generation token.
func smallVocab(t testing.TB) (*Vocab, int32) {
	t.Helper()
	var tokens [][]byte
	for c := range 256 {
		tokens = append(tokens, []byte{byte(c)})
	}
	for _, s := range []string{`{"`, `":`, `",`, `"}`, `" }`, `true`, `false`, `null`, ` "`, "\n  ", `[[`, `]]`, `],`,
		`1e`, `e+`, `.5`, `-0`, `é`, `"a"`, `\"`, `\u`, `00`, `name`, `age`, `red`, `":"`, `}]`, `,"`, `, `, `😀`, "\xf0\x9f", "\x98\x80",
		`"name": "`, `ab`, `abc`, `abcd`, `red"}`} {
		tokens = append(tokens, []byte(s))
	}
	tokens = append(tokens, nil) // a control token
	eog := int32(len(tokens))
	tokens = append(tokens, []byte("<|im_end|>"))
	v, err := NewVocab(tokens, []int32{eog})
	if err != nil {
		t.Fatal(err)
	}
	return v, eog
}

// TestAllowMatchesBruteForce checks Allow against the definition — a token
// is allowed iff output+token is still a prefix (or, for end of generation,
// the output is complete) — at every step of random walks.
func TestAllowMatchesBruteForce(t *testing.T) {
	v, eog := smallVocab(t)
	schemas := []string{
		`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"c":{"enum":["red","ab"]}},"required":["name"]}`,
		`{"type":"array","items":{"type":"array","items":{"type":"number"}},"maxItems":3}`,
		`{}`,
	}
	mask := make([]bool, v.Len())
	for si, schema := range schemas {
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		for seed := range 4 {
			rng := rand.New(rand.NewPCG(uint64(si), uint64(seed)))
			c := g.NewConstraint(v)
			var out []byte
			for step := 0; ; step++ {
				c.Allow(mask)
				_, complete := g.Match(out)
				var allowed []int32
				for id := range v.Len() {
					var want bool
					switch {
					case int32(id) == eog:
						want = complete
					case v.tokens[id] == nil:
						want = false
					default:
						want, _ = g.Match(append(slices.Clone(out), v.tokens[id]...))
					}
					if mask[id] != want {
						t.Fatalf("schema %d seed %d after %q: mask[%d %q] = %v, want %v", si, seed, out, id, v.tokens[id], mask[id], want)
					}
					if want {
						allowed = append(allowed, int32(id))
					}
				}
				// Apply agrees with the mask and leaves allowed logits alone.
				logits := make([]float32, v.Len())
				for i := range logits {
					logits[i] = float32(i)
				}
				if n := c.Apply(logits); n != len(allowed) {
					t.Fatalf("after %q: Apply says %d allowed, mask %d", out, n, len(allowed))
				}
				for i, l := range logits {
					if mask[i] && l != float32(i) || !mask[i] && !math.IsInf(float64(l), -1) {
						t.Fatalf("after %q: Apply left logit %d = %v (allowed %v)", out, i, l, mask[i])
					}
				}
				if c.Done() != complete {
					t.Fatalf("after %q: Done = %v, want %v", out, c.Done(), complete)
				}
				id := pick(rng, c, v, allowed, step < 40)
				if err := c.Accept(id); err != nil {
					t.Fatalf("after %q: Accept(%d) of an allowed token: %v", out, id, err)
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
}

// pick chooses the next token of a random walk: uniformly among the allowed
// ones while explore is set, else the single byte (or end of generation)
// that brings the output closest to complete. Every byte is a token of a
// byte-level vocabulary, so the second phase always finishes.
func pick(rng *rand.Rand, c *Constraint, v *Vocab, allowed []int32, explore bool) int32 {
	if explore {
		return allowed[rng.IntN(len(allowed))]
	}
	best, bestCost := int32(-1), int(^uint(0)>>1)
	for _, id := range allowed {
		if v.isEOG(id) {
			return id
		}
		if len(v.tokens[id]) != 1 {
			continue
		}
		s := c.m.step(c.state, v.tokens[id][0])
		if cost := c.m.remaining(s); cost < bestCost {
			best, bestCost = id, cost
		}
	}
	return best
}

func TestAcceptErrors(t *testing.T) {
	v, eog := smallVocab(t)
	g := MustParse(`root ::= "{" [a-z]+ "}"`)
	c := g.NewConstraint(v)
	tok := func(s string) int32 {
		for id, b := range v.tokens {
			if string(b) == s && !v.isEOG(int32(id)) {
				return int32(id)
			}
		}
		t.Fatalf("no token %q", s)
		return -1
	}
	mustFail := func(id int32, want string) {
		t.Helper()
		if err := c.Accept(id); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Accept(%d) error = %v, want one containing %q", id, err, want)
		}
	}
	mustFail(tok("a"), `does not fit at byte 0`)
	mustFail(eog, "not complete (at least 3 more bytes needed)")
	mustFail(-1, "outside the vocabulary")
	mustFail(int32(v.Len()), "outside the vocabulary")
	mustFail(eog-1, "has no text")
	for _, s := range []string{"{", "ab", "c"} {
		if err := c.Accept(tok(s)); err != nil {
			t.Fatal(err)
		}
	}
	mustFail(tok("{"), `token 123 "{" does not fit at byte 4`)
	if c.Done() || c.Finished() || c.Remaining() != 1 {
		t.Fatalf("before }: Done %v Finished %v Remaining %d", c.Done(), c.Finished(), c.Remaining())
	}
	if err := c.Accept(tok("}")); err != nil {
		t.Fatal(err)
	}
	if !c.Done() || !c.Finished() {
		t.Fatal("after }: want Done and Finished")
	}
	mask := make([]bool, v.Len()+5)
	mask[v.Len()+2] = true
	c.Allow(mask)
	for id, ok := range mask {
		if ok != (int32(id) == eog) {
			t.Fatalf("complete output: mask[%d] = %v", id, ok)
		}
	}
	if err := c.Accept(eog); err != nil {
		t.Fatal(err)
	}
	mustFail(tok("a"), "already ended")
	c.Allow(mask)
	if slices.Contains(mask, true) {
		t.Fatal("after end of generation some token is allowed")
	}
	c.Reset()
	if err := c.Accept(tok("{")); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
}

func TestNewVocabErrors(t *testing.T) {
	if _, err := NewVocab([][]byte{[]byte("a")}, []int32{1}); err == nil || !strings.Contains(err.Error(), "end-of-generation id 1 is outside") {
		t.Fatalf("error = %v", err)
	}
	if _, err := NewVocab([][]byte{make([]byte, maxTokenBytes+1)}, nil); err == nil || !strings.Contains(err.Error(), "above the limit") {
		t.Fatalf("error = %v", err)
	}
}

// TestRebase drives a constraint past the machine's bounds (deeply nested
// arrays create a new state per level) and checks it keeps working.
func TestRebase(t *testing.T) {
	v, eog := smallVocab(t)
	c := JSONValue().NewConstraint(v)
	open := int32('[')
	mask := make([]bool, v.Len())
	depth := maxStates + 100
	for range depth {
		c.Allow(mask)
		if !mask[open] {
			t.Fatal("[ not allowed")
		}
		if err := c.Accept(open); err != nil {
			t.Fatal(err)
		}
	}
	c.Allow(mask)
	if len(c.m.states) > maxStates+1000 {
		t.Fatalf("machine holds %d states: not bounded", len(c.m.states))
	}
	if c.Remaining() != depth {
		t.Fatalf("Remaining = %d, want %d", c.Remaining(), depth)
	}
	for range depth {
		if err := c.Accept(int32(']')); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Accept(eog); err != nil {
		t.Fatal(err)
	}
}

// TestRandomWalksRealVocab is the end-to-end property: over SmolLM3's
// vocabulary, a "model" that picks uniformly among the allowed tokens (then
// finishes the shortest way) always produces JSON that parses and validates
// against the schema. 100 walks by default, 1000 with SMOLGO_HEAVY=1.
func TestRandomWalksRealVocab(t *testing.T) {
	v, tok := realVocab(t)
	schemas := []string{
		`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"email":{"type":"string","maxLength":20},
		  "tags":{"type":"array","items":{"type":"string"},"maxItems":3},
		  "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":["string","null"]}},"required":["city"]}},
		 "required":["name","age"]}`,
		`{"type":"array","items":{"type":"array","items":{"type":"number"},"maxItems":4},"minItems":1,"maxItems":3}`,
		`{"type":"object","properties":{"color":{"enum":["red","green","blue \"quoted\"",1,null]},"ok":{"type":"boolean"},
		  "v":{"anyOf":[{"type":"null"},{"type":"number"}]},"k":{"const":"fixed"}},"required":["color","ok","v","k"],"additionalProperties":false}`,
		`{"type":"object","additionalProperties":{"type":"integer"}}`,
		`{"type":"object"}`,
		`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["v"]}},
		  "$ref":"#/$defs/node"}`,
	}
	walks := 100
	if os.Getenv("SMOLGO_HEAVY") != "" {
		walks = 1000
	}
	mask := make([]bool, v.Len())
	for w := range walks {
		si := w % len(schemas)
		var schema any
		if err := json.Unmarshal([]byte(schemas[si]), &schema); err != nil {
			t.Fatal(err)
		}
		g, err := FromJSONSchema([]byte(schemas[si]))
		if err != nil {
			t.Fatal(err)
		}
		seed := uint64(1000 + w)
		rng := rand.New(rand.NewPCG(seed, 9))
		c := g.NewConstraint(v)
		var out []byte
		var ids []int32
		explore := 5 + rng.IntN(100)
		for step := 0; ; step++ {
			if step > 2000 {
				t.Fatalf("schema %d seed %d: no end after 2000 tokens: %q", si, seed, out)
			}
			c.Allow(mask)
			var allowed []int32
			for id, ok := range mask {
				if ok {
					allowed = append(allowed, int32(id))
				}
			}
			if len(allowed) == 0 {
				t.Fatalf("schema %d seed %d: dead end after %q", si, seed, out)
			}
			id := pick(rng, c, v, allowed, step < explore)
			if err := c.Accept(id); err != nil {
				t.Fatalf("schema %d seed %d: %v", si, seed, err)
			}
			if v.isEOG(id) {
				break
			}
			ids = append(ids, id)
			out = append(out, v.tokens[id]...)
		}
		// The ids decode to the same text (no control tokens slipped in).
		if text, err := tok.Decode(ids, false); err != nil || text != string(out) {
			t.Fatalf("schema %d seed %d: decoded %q, bytes %q (%v)", si, seed, text, out, err)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err != nil || dec.More() {
			t.Fatalf("schema %d seed %d: output does not parse (%v): %q", si, seed, err, out)
		}
		if err := validate(schema, schema, val, ""); err != nil {
			t.Fatalf("schema %d seed %d: %v in %q", si, seed, err, out)
		}
	}
}

// validate checks v against the supported schema subset.
func validate(root, schema, v any, where string) error {
	s, _ := schema.(map[string]any)
	if ref, ok := s["$ref"].(string); ok {
		target := root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			target = target.(map[string]any)[part]
		}
		return validate(root, target, v, where)
	}
	if c, ok := s["const"]; ok {
		if !jsonEqual(c, v) {
			return fmt.Errorf("%s: %v is not the const %v", where, v, c)
		}
		return nil
	}
	if e, ok := s["enum"]; ok {
		for _, x := range e.([]any) {
			if jsonEqual(x, v) {
				return nil
			}
		}
		return fmt.Errorf("%s: %v is not in the enum", where, v)
	}
	if a, ok := s["oneOf"]; ok {
		n := 0
		for _, sub := range a.([]any) {
			if validate(root, sub, v, where) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: %v matches %d oneOf branches", where, v, n)
		}
		return nil
	}
	if a, ok := s["anyOf"]; ok {
		for _, sub := range a.([]any) {
			if validate(root, sub, v, where) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: %v matches no anyOf branch", where, v)
	}
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, x.(string))
		}
	}
	if len(types) == 0 {
		return nil
	}
	var errs []string
	for _, t := range types {
		err := validateType(root, t, s, v, where)
		if err == nil {
			return nil
		}
		errs = append(errs, err.Error())
	}
	return fmt.Errorf("%s", strings.Join(errs, "; "))
}

func validateType(root any, t string, s map[string]any, v any, where string) error {
	count := func(k string) (int, bool) {
		f, ok := s[k].(float64)
		return int(f), ok
	}
	switch t {
	case "null":
		if v != nil {
			return fmt.Errorf("%s: %v is not null", where, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %v is not a boolean", where, v)
		}
	case "number", "integer":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%s: %v is not a number", where, v)
		}
		f, err := n.Float64()
		if err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
		if err := checkBounds(s, f); err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
		if t == "integer" {
			i, err := n.Int64()
			if err != nil {
				return fmt.Errorf("%s: %v is not an integer", where, v)
			}
			if m, ok := count("minimum"); ok && i < int64(m) {
				return fmt.Errorf("%s: %d is below the minimum %d", where, i, m)
			}
			if m, ok := count("maximum"); ok && i > int64(m) {
				return fmt.Errorf("%s: %d is above the maximum %d", where, i, m)
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %v is not a string", where, v)
		}
		n := len([]rune(str))
		if m, ok := count("minLength"); ok && n < m {
			return fmt.Errorf("%s: string shorter than %d", where, m)
		}
		if m, ok := count("maxLength"); ok && n > m {
			return fmt.Errorf("%s: string longer than %d", where, m)
		}
		if err := checkString(s, str); err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %v is not an array", where, v)
		}
		if m, ok := count("minItems"); ok && len(a) < m {
			return fmt.Errorf("%s: fewer than %d items", where, m)
		}
		if m, ok := count("maxItems"); ok && len(a) > m {
			return fmt.Errorf("%s: more than %d items", where, m)
		}
		prefix, _ := s["prefixItems"].([]any)
		rest := s["items"]
		if p, ok := rest.([]any); ok {
			prefix, rest = p, s["additionalItems"]
		}
		for i, x := range a {
			sub := rest
			if i < len(prefix) {
				sub = prefix[i]
			} else if rest == false {
				return fmt.Errorf("%s: more than %d items", where, len(prefix))
			}
			if err := validate(root, sub, x, fmt.Sprintf("%s/%d", where, i)); err != nil {
				return err
			}
		}
	case "object":
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %v is not an object", where, v)
		}
		props, _ := s["properties"].(map[string]any)
		required, _ := s["required"].([]any)
		for _, r := range required {
			if _, ok := o[r.(string)]; !ok {
				return fmt.Errorf("%s: required property %q missing", where, r)
			}
		}
		if m, ok := count("minProperties"); ok && len(o) < m {
			return fmt.Errorf("%s: fewer than %d properties", where, m)
		}
		if m, ok := count("maxProperties"); ok && len(o) > m {
			return fmt.Errorf("%s: more than %d properties", where, m)
		}
		for k, x := range o {
			if names, ok := s["propertyNames"]; ok {
				if err := validate(root, names, k, where+"/"+k); err != nil {
					return fmt.Errorf("property name: %v", err)
				}
			}
			sub, declared := props[k]
			if !declared {
				if s["additionalProperties"] == false {
					return fmt.Errorf("%s: additional property %q", where, k)
				}
				sub = s["additionalProperties"]
			}
			if err := validate(root, sub, x, where+"/"+k); err != nil {
				return err
			}
		}
	}
	return nil
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if n, ok := b.(json.Number); ok {
		f, _ := n.Float64()
		jb, _ = json.Marshal(f)
	}
	return bytes.Equal(ja, jb)
}

// TestValidator makes sure the random walks' validator can fail.
func TestValidator(t *testing.T) {
	schema := `{"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer","minimum":0,"maximum":100},"k":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":1}},"required":["v"],"additionalProperties":false}},
		"type":"object","properties":{"t":{"$ref":"#/$defs/n"},"s":{"type":"string","maxLength":2},"e":{"enum":["a",1]},"c":{"const":"x"},"u":{"anyOf":[{"type":"null"},{"type":"boolean"}]}},"required":["t"]}`
	var root any
	if err := json.Unmarshal([]byte(schema), &root); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"t":{"v":1,"k":[{"v":2}]},"s":"ab","e":1,"c":"x","u":null}`, true},
		{`{"t":{"v":1.5}}`, false},
		{`{"t":{"v":1,"k":[{"v":2},{"v":3}]}}`, false},
		{`{"t":{"v":1,"k":[{"w":2}]}}`, false},
		{`{"t":{"v":1,"x":0}}`, false},
		{`{"s":"ab"}`, false},
		{`{"t":{"v":1},"s":"abc"}`, false},
		{`{"t":{"v":1},"e":"b"}`, false},
		{`{"t":{"v":1},"c":"y"}`, false},
		{`{"t":{"v":1},"u":0}`, false},
		{`{"t":{"v":-1}}`, false},
		{`{"t":{"v":101}}`, false},
	} {
		dec := json.NewDecoder(strings.NewReader(tc.doc))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if err := validate(root, root, v, ""); (err == nil) != tc.ok {
			t.Errorf("validate(%s) = %v, want ok=%v", tc.doc, err, tc.ok)
		}
	}
}

// Mark brings a constraint back to where it was after tokens were tried
// ahead (a draft): the same masks, the same output, the limit too; while a
// mark is held the machine is not started over, even past its bounds, and
// the state the mark holds stays valid.
func TestMark(t *testing.T) {
	v, eog := smallVocab(t)
	g, err := FromJSONSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := g.NewConstraint(v)
	for _, b := range []byte(`{"name": "`) {
		if err := c.Accept(int32(b)); err != nil {
			t.Fatal(err)
		}
	}
	c.Limit(30)
	before := make([]bool, v.Len())
	c.Allow(before)
	back := c.Mark()
	for _, b := range []byte(`ab"}`) {
		if err := c.Accept(int32(b)); err != nil {
			t.Fatal(err)
		}
	}
	c.Limit(3)
	if !c.Done() {
		t.Fatal("the drafted object is not complete")
	}
	back()
	back() // a second call changes nothing
	after := make([]bool, v.Len())
	c.Allow(after)
	if !slices.Equal(before, after) {
		t.Fatal("the mask after going back differs from the mask at the mark")
	}
	if c.Done() || c.limit != 30 {
		t.Fatalf("after going back: done %v, limit %d; want false, 30", c.Done(), c.limit)
	}
	for _, b := range []byte(`x"}`) {
		if err := c.Accept(int32(b)); err != nil {
			t.Fatalf("accepting another answer after going back: %v", err)
		}
	}
	if err := c.Accept(eog); err != nil {
		t.Fatal(err)
	}

	// Past the machine's bounds while marked: no rebase, and going back
	// lands on a state that still means the same.
	d := JSONValue().NewConstraint(v)
	mask := make([]bool, v.Len())
	if err := d.Accept('['); err != nil {
		t.Fatal(err)
	}
	back = d.Mark()
	for i := 0; !d.m.full(); i++ {
		d.Allow(mask)
		if i > maxStates || !mask['['] {
			t.Fatalf("the machine is not past its bounds after %d brackets: the test does not test the rebase", i)
		}
		if err := d.Accept('['); err != nil {
			t.Fatal(err)
		}
	}
	d.Allow(mask) // full and marked: no rebase
	if !d.m.full() {
		t.Fatal("the machine started over while a mark was held")
	}
	back()
	if d.Remaining() != 1 {
		t.Fatalf("after going back, Remaining = %d, want 1 (one open bracket)", d.Remaining())
	}
	d.Allow(mask) // now it may rebase
	if len(d.m.states) > maxStates {
		t.Fatalf("machine holds %d states after the mark: not started over", len(d.m.states))
	}
	for _, tok := range []int32{']', eog} {
		if err := d.Accept(tok); err != nil {
			t.Fatal(err)
		}
	}
}
