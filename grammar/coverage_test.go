package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSchemaCoverage: the keywords zod, Pydantic and the AI SDK emit, with
// valid instances accepted and invalid ones rejected.
func TestSchemaCoverage(t *testing.T) {
	str := func(s string) string { return `"` + s + `"` }
	valid := func(docs ...string) []matchCase {
		var out []matchCase
		for _, d := range docs {
			out = append(out, matchCase{d, true, true})
		}
		return out
	}
	tests := []struct {
		name, schema string
		ok, bad      []string
	}{
		{"date", `{"type":"string","format":"date"}`,
			[]string{str("2024-02-28"), str("1999-12-31"), str("2024-04-30"), str("2024-01-31")},
			[]string{str("2024-02-30"), str("2024-04-31"), str("2024-13-01"), str("2024-00-10"), str("24-01-01"), str("2024-1-01"), str("2024-01-01x")}},
		{"time", `{"type":"string","format":"time"}`,
			[]string{str("23:59:59Z"), str("00:00:00.123+05:30"), str("12:30:00-08:00")},
			[]string{str("24:00:00Z"), str("12:60:00Z"), str("12:00:00"), str("12:00Z")}},
		{"date-time", `{"type":"string","format":"date-time"}`,
			[]string{str("2024-05-17T10:20:30Z"), str("2024-05-17t10:20:30.5+01:00")},
			[]string{str("2024-05-17 10:20:30Z"), str("2024-05-17T10:20:30"), str("2024-05-17")}},
		{"uuid", `{"type":"string","format":"uuid"}`,
			[]string{str("123e4567-e89b-12d3-a456-426614174000"), str("123E4567-E89B-12D3-A456-426614174000")},
			[]string{str("123e4567e89b12d3a456426614174000"), str("123e4567-e89b-12d3-a456-42661417400g"), str("123e4567-e89b-12d3-a456-4266141740001")}},
		{"email", `{"type":"string","format":"email"}`,
			[]string{str("ada@example.com"), str("a.b+c_d-e@mail.example.co.uk"), str("x@y-z.io")},
			[]string{str("ada@"), str("@example.com"), str("a..b@example.com"), str(".a@example.com"), str("ada@example"), str("ada@-x.com"), str("a b@example.com"), str("ada@example.c")}},
		{"hostname", `{"type":"string","format":"hostname"}`,
			[]string{str("example"), str("a-b.example.com"), str("x1.y2")},
			[]string{str("-a.com"), str("a-.com"), str("a..b"), str("a_b.com"), str(strings.Repeat("a", 64))}},
		{"ipv4", `{"type":"string","format":"ipv4"}`,
			[]string{str("0.0.0.0"), str("192.168.1.255"), str("255.255.255.255")},
			[]string{str("256.1.1.1"), str("01.2.3.4"), str("1.2.3"), str("1.2.3.4.5")}},
		{"ipv6", `{"type":"string","format":"ipv6"}`,
			[]string{str("::"), str("::1"), str("2001:db8::8a2e:370:7334"), str("2001:0db8:85a3:0000:0000:8a2e:0370:7334"), str("::ffff:192.0.2.128"), str("fe80::")},
			[]string{str("2001:db8::8a2e::7334"), str("12345::"), str("1:2:3:4:5:6:7:8:9"), str(":1"), str("1:2:3:4:5:6:7")}},
		{"uri", `{"type":"string","format":"uri"}`,
			[]string{str("https://example.com"), str("http://example.com:8080/a/b?q=1&r=%20#frag"), str("ftp://files.example.org/")},
			[]string{str("example.com"), str("https://"), str("http://exa mple.com"), str("http://example.com/%zz")}},
		{"format and length", `{"type":"string","format":"email","maxLength":12,"minLength":10}`,
			[]string{str("ab@cd.co.uk"), str("abc@efg.com")},
			[]string{str("a@b.co"), str("abcdef@ghij.com")}},
		{"format and pattern (zod 4 writes both)", `{"type":"string","format":"uuid","pattern":"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000)$"}`,
			[]string{str("123e4567-e89b-42d3-a456-426614174000"), str("00000000-0000-0000-0000-000000000000")},
			[]string{str("123e4567-e89b-02d3-a456-426614174000"), str("123e4567-e89b-42d3-c456-426614174000")}},
		{"zod 4's datetime", `{"type":"string","format":"date-time","pattern":"^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))T(?:(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?(?:Z))$"}`,
			[]string{str("2024-05-17T10:20:30Z"), str("2024-05-17T10:20:30.25Z")},
			[]string{str("2024-05-17T10:20:30+01:00"), str("2024-05-17T10:20Z"), str("2024-02-29T10:20:30Z")}},
		{"uri with a large maxLength (Pydantic's HttpUrl)", `{"type":"string","format":"uri","minLength":1,"maxLength":2083}`,
			[]string{str("https://example.com/path")},
			[]string{str("")}},
		{"password is an annotation", `{"type":"string","format":"password","writeOnly":true}`,
			[]string{str("any thing")}, nil},
		{"anchored pattern", `{"type":"string","pattern":"^[A-Z]{3}-\\d{2,4}$"}`,
			[]string{str("ABC-12"), str("XYZ-1234")},
			[]string{str("abc-12"), str("ABC-1"), str("ABC-12345"), str("xABC-12")}},
		{"unanchored pattern", `{"type":"string","pattern":"ab+c"}`,
			[]string{str("abc"), str("xxabbbcyy"), str("\\\"abc\\\\")},
			[]string{str("ac"), str("abx")}},
		{"pattern escapes and classes", `{"type":"string","pattern":"^(?:[^\"\\\\]|\\.|\\w\\s\\D)+$"}`,
			[]string{str("abc"), str("a.b"), str("x 1")},
			[]string{str(`a\"b`), str(`a\\b`)}},
		{"pattern with quotes", `{"type":"string","pattern":"^[\"\\\\a]+$"}`,
			[]string{str(`\"a\\`), str("a")},
			[]string{str("b"), str(`\n`)}},
		{"pattern and lengths", `{"type":"string","pattern":"^a+b*$","minLength":3,"maxLength":5}`,
			[]string{str("aaa"), str("aabbb"), str("aab")},
			[]string{str("ab"), str("aaaaab"), str("b")}},
		{"number bounds", `{"type":"number","minimum":-2,"exclusiveMaximum":3}`,
			[]string{"-2", "-2.0", "-1.5", "0", "2.999", "-0.5", "1"},
			[]string{"-2.5", "-2.01", "3", "3.0", "3.5", "1e2", "-3"}},
		{"positive numbers (zod's .positive())", `{"type":"number","exclusiveMinimum":0}`,
			[]string{"0.5", "1", "0.001", "123.25"},
			[]string{"0", "0.0", "-1", "-0.5"}},
		{"number in [0, 1]", `{"type":"number","minimum":0,"maximum":1}`,
			[]string{"0", "0.25", "1", "1.00"},
			[]string{"1.01", "-0.1", "2"}},
		{"draft-4 exclusive booleans", `{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":true}`,
			[]string{"0.1", "9.9"},
			[]string{"0", "10", "10.0"}},
		{"the tighter of two bounds", `{"type":"number","exclusiveMinimum":3,"minimum":5,"maximum":9,"exclusiveMaximum":9}`,
			[]string{"5", "5.0", "8.5"},
			[]string{"4", "9", "4.5"}},
		{"draft-4 booleans on integers", `{"type":"integer","minimum":1,"exclusiveMinimum":true,"maximum":3,"exclusiveMaximum":false}`,
			[]string{"2", "3"},
			[]string{"1", "4"}},
		{"int32", `{"type":"integer","format":"int32"}`,
			[]string{"2147483647", "-2147483648", "0"},
			[]string{"2147483648", "-2147483649"}},
		{"bounds imply a number", `{"minimum":1}`,
			[]string{"1", "2.5"},
			[]string{"0.5", `"a"`}},
		{"oneOf of types", `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}`,
			[]string{`"a"`, "1", "null"},
			[]string{"1.5", "true"}},
		{"discriminated union (Pydantic)", `{"$defs":{"Cat":{"properties":{"pet_type":{"const":"cat","type":"string"},"meows":{"type":"integer"}},"required":["pet_type","meows"],"type":"object"},
			"Dog":{"properties":{"pet_type":{"const":"dog","type":"string"},"barks":{"type":"number"}},"required":["pet_type","barks"],"type":"object"}},
			"properties":{"pet":{"oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}],"discriminator":{"propertyName":"pet_type","mapping":{"cat":"#/$defs/Cat","dog":"#/$defs/Dog"}}}},
			"required":["pet"],"type":"object"}`,
			[]string{`{"pet":{"pet_type":"cat","meows":3}}`, `{"pet":{"pet_type":"dog","barks":1.5}}`},
			[]string{`{"pet":{"pet_type":"cat","barks":1}}`, `{"pet":{"pet_type":"cow","meows":1}}`}},
		{"oneOf of enums", `{"oneOf":[{"enum":["a","b"]},{"enum":["c",1]}]}`,
			[]string{`"a"`, `1`}, []string{`"d"`}},
		{"prefixItems (tuple)", `{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"minItems":2,"maxItems":2}`,
			[]string{`[1,"a"]`, `[ -3 , "" ]`},
			[]string{`[1]`, `["a",1]`, `[1,"a",2]`, `[]`}},
		{"prefixItems then items", `{"type":"array","prefixItems":[{"type":"boolean"}],"items":{"type":"null"},"maxItems":3}`,
			[]string{`[]`, `[true]`, `[true,null]`, `[false,null,null]`},
			[]string{`[null]`, `[true,true]`, `[true,null,null,null]`}},
		{"prefixItems, no more items", `{"prefixItems":[{"type":"integer"},{"type":"integer"}],"items":false}`,
			[]string{`[]`, `[1]`, `[1,2]`},
			[]string{`[1,2,3]`}},
		{"draft-7 tuple", `{"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"integer"},"minItems":1}`,
			[]string{`["a"]`, `["a",1,2]`},
			[]string{`[]`, `[1]`, `["a","b"]`}},
		{"record (zod's z.record)", `{"type":"object","additionalProperties":{"type":"number"},"propertyNames":{"pattern":"^[a-z]+$"}}`,
			[]string{`{}`, `{"ab":1,"c":2.5}`},
			[]string{`{"A":1}`, `{"a":"x"}`, `{"":1}`}},
		{"record with enum keys and counts", `{"type":"object","additionalProperties":{"type":"integer"},"propertyNames":{"enum":["x","y","z"]},"minProperties":2}`,
			[]string{`{"x":1,"y":2}`, `{"x":1,"y":2,"z":3}`, `{"y":1,"z":2}`},
			[]string{`{"x":1}`, `{"x":1,"x":2}`, `{"w":1,"x":2}`}},
		{"map with maxProperties", `{"type":"object","additionalProperties":{"type":"boolean"},"maxProperties":2,"minProperties":1}`,
			[]string{`{"a":true}`, `{"a":true,"b":false}`},
			[]string{`{}`, `{"a":true,"b":false,"c":true}`}},
		{"properties with counts", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}},"required":["b"],"minProperties":2,"maxProperties":2}`,
			[]string{`{"a":1,"b":2}`, `{"b":2,"c":3}`},
			[]string{`{"b":2}`, `{"a":1,"b":2,"c":3}`, `{"a":1,"c":3}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := FromJSONSchema([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			cases := valid(tt.ok...)
			for _, d := range tt.bad {
				cases = append(cases, matchCase{d, false, false})
			}
			for _, c := range cases {
				_, complete := g.Match([]byte(c.text))
				if complete != c.complete {
					t.Errorf("Match(%s) complete = %v, want %v", c.text, complete, c.complete)
				}
			}
		})
	}
}

// checkBounds checks a number against minimum, maximum and the exclusive
// bounds (numbers, or draft 4's booleans).
func checkBounds(s map[string]any, f float64) error {
	exMin, _ := s["exclusiveMinimum"].(bool)
	exMax, _ := s["exclusiveMaximum"].(bool)
	if m, ok := s["minimum"].(float64); ok && (f < m || exMin && f == m) {
		return fmt.Errorf("%v is below the minimum %v", f, m)
	}
	if m, ok := s["maximum"].(float64); ok && (f > m || exMax && f == m) {
		return fmt.Errorf("%v is above the maximum %v", f, m)
	}
	if m, ok := s["exclusiveMinimum"].(float64); ok && f <= m {
		return fmt.Errorf("%v is not above %v", f, m)
	}
	if m, ok := s["exclusiveMaximum"].(float64); ok && f >= m {
		return fmt.Errorf("%v is not below %v", f, m)
	}
	return nil
}

// checkString checks pattern (with Go's regexp, whose syntax agrees with
// the supported subset) and format (with the standard library's parsers,
// independent of the grammar's patterns).
func checkString(s map[string]any, str string) error {
	if p, ok := s["pattern"].(string); ok {
		re, err := regexp.Compile(p)
		if err != nil {
			return err
		}
		if !re.MatchString(str) {
			return fmt.Errorf("%q does not match %q", str, p)
		}
	}
	f, _ := s["format"].(string)
	var err error
	switch f {
	case "date":
		_, err = time.Parse(time.DateOnly, str)
	case "time":
		_, err = time.Parse("15:04:05.999999999Z07:00", strings.ToUpper(str))
	case "date-time":
		_, err = time.Parse(time.RFC3339Nano, strings.ToUpper(str))
	case "uuid":
		if !regexp.MustCompile(`^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$`).MatchString(str) {
			err = fmt.Errorf("not a UUID")
		}
	case "email":
		var a *mail.Address
		if a, err = mail.ParseAddress(str); err == nil && (a.Address != str || len(str) > 254) {
			err = fmt.Errorf("not a bare address")
		}
	case "hostname":
		if len(str) > 253 || !regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`).MatchString(str) {
			err = fmt.Errorf("not a host name")
		}
	case "ipv4", "ipv6":
		var a netip.Addr
		if a, err = netip.ParseAddr(str); err == nil && (f == "ipv4") != a.Is4() {
			err = fmt.Errorf("wrong IP version")
		}
	case "uri":
		var u *url.URL
		if u, err = url.Parse(str); err == nil && (u.Scheme == "" || u.Host == "") {
			err = fmt.Errorf("no scheme or host")
		}
	}
	if err != nil {
		return fmt.Errorf("%q is not a %s: %v", str, f, err)
	}
	return nil
}

// TestCoverageWalks: random generations over SmolLM3's vocabulary under
// small budgets, for schemas with the newer keywords, all validate (with
// the standard library's parsers for formats and Go's regexp for
// patterns).
func TestCoverageWalks(t *testing.T) {
	v, _ := realVocab(t)
	schemas := []string{
		`{"type":"object","properties":{"when":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},"at":{"type":"string","format":"time"},
		  "id":{"type":"string","format":"uuid"},"mail":{"type":"string","format":"email"},"host":{"type":"string","format":"hostname"},
		  "v4":{"type":"string","format":"ipv4"},"v6":{"type":"string","format":"ipv6"},"url":{"type":"string","format":"uri","maxLength":2083}},
		  "required":["when","day","at","id","mail","host","v4","v6","url"]}`,
		`{"type":"object","properties":{"code":{"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"},"tag":{"type":"string","pattern":"x+y","maxLength":6},
		  "p":{"type":"number","exclusiveMinimum":0,"maximum":1},"n":{"type":"number","minimum":-5,"exclusiveMaximum":5},"i":{"type":"integer","format":"int32"}},
		  "required":["code","tag","p","n","i"]}`,
		`{"type":"object","properties":{"pair":{"type":"array","prefixItems":[{"type":"integer"},{"type":"string","maxLength":3}],"items":false,"minItems":2},
		  "rec":{"type":"object","additionalProperties":{"type":"boolean"},"propertyNames":{"pattern":"^[a-z]{1,4}$"},"maxProperties":2},
		  "some":{"type":"object","additionalProperties":{"type":"integer"},"propertyNames":{"enum":["a","b","c"]},"minProperties":2},
		  "u":{"oneOf":[{"type":"string","maxLength":2},{"type":"integer"},{"type":"object","properties":{"k":{"const":1}},"required":["k"]}]}},
		  "required":["pair","rec","some","u"],"minProperties":4}`,
	}
	mask := make([]bool, v.Len())
	for run := range 30 {
		si := run % len(schemas)
		g, err := FromJSONSchema([]byte(schemas[si]))
		if err != nil {
			t.Fatal(err)
		}
		var schema any
		if err := json.Unmarshal([]byte(schemas[si]), &schema); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(run), 5))
		c := g.NewConstraint(v)
		budget := c.MinBudget() + rng.IntN(40)
		out := generateWithin(t, c, v, budget, uniformPick(rng, c, mask))
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err != nil {
			t.Fatalf("run %d: %v: %q", run, err, out)
		}
		if err := validate(schema, schema, val, ""); err != nil {
			t.Fatalf("run %d: %v in %s", run, err, out)
		}
		if run < 3 {
			t.Logf("run %d (budget %d): %s", run, budget, out)
		}
	}
}

// TestPatternsAgainstRegexp compares compiled patterns with Go's regexp
// (whose syntax agrees on this subset) on random strings, JSON-encoded as
// encoding/json writes them, with and without length bounds.
func TestPatternsAgainstRegexp(t *testing.T) {
	patterns := []string{
		`^[a-c]+$`, `ab`, `^(a|bc)*$`, `^\d{2,3}-?\w*$`, `[^a-c"\\]`, `^.{2,4}$`, `^(?:x|"|\\)+$`,
		`^\s*\S+\s*$`, `^a?b+c{0,2}$`, `^[\x00-\x1f]+$`, `é+`, `^\D\W$`, `^[-a]+$`, `^a{2}b{1,}$`,
	}
	alphabet := []rune{'a', 'b', 'c', 'x', '1', '2', '-', ' ', '"', '\\', '\n', '\t', 0x01, 'é', '😀', '_'}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		for _, bounds := range [][2]int{{0, -1}, {2, 5}} {
			schema, _ := json.Marshal(map[string]any{"type": "string", "pattern": p, "minLength": bounds[0]})
			if bounds[1] >= 0 {
				schema, _ = json.Marshal(map[string]any{"type": "string", "pattern": p, "minLength": bounds[0], "maxLength": bounds[1]})
			}
			g, err := FromJSONSchema(schema)
			if err != nil {
				t.Fatalf("%s: %v", schema, err)
			}
			positives := 0
			for i := range 400 {
				var s []rune
				letters := alphabet
				if i%2 == 0 {
					letters = alphabet[:6] // more strings that match
				}
				for range rng.IntN(7) {
					s = append(s, letters[rng.IntN(len(letters))])
				}
				n := len(s)
				want := re.MatchString(string(s)) && n >= bounds[0] && (bounds[1] < 0 || n <= bounds[1])
				doc, _ := json.Marshal(string(s))
				if _, complete := g.Match(doc); complete != want {
					t.Fatalf("%s: %s: complete %v, want %v", schema, doc, complete, want)
				}
				if want {
					positives++
				}
			}
			if positives == 0 {
				t.Errorf("%s: no random string matched; the comparison says little", schema)
			}
		}
	}
}
