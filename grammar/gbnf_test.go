package grammar

import (
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty", "  # nothing\n", "no rules"},
		{"no root", `a ::= "x"`, "no rule named root"},
		{"undefined", "root ::= \"a\"\n  b", `line 2: undefined rule "b"`},
		{"twice", "root ::= \"a\"\nroot ::= \"b\"", `rule "root" is defined twice`},
		{"unterminated string", `root ::= "abc`, "unterminated string"},
		{"unterminated class", `root ::= [abc`, "unterminated character class"},
		{"reversed range", `root ::= [z-a]`, "reversed"},
		{"bad escape", `root ::= "\q"`, `unknown escape \q`},
		{"short hex", `root ::= "\x4"`, `bad \x escape`},
		{"unbalanced", `root ::= "a" )`, "unbalanced )"},
		{"missing paren", `root ::= ( "a" | "b"`, "missing )"},
		{"missing ::=", `root = "a"`, "expected ::="},
		{"bad repeat", `root ::= "a"{3,1}`, "bad repetition {3,1}"},
		{"huge repeat", `root ::= "a"{5000}`, "above the limit"},
		{"left recursion", "root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]", `rule "expr" is left-recursive`},
		{"hidden left recursion", "root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"z\"", `rule "a" is left-recursive`},
		{"nullable star", `root ::= ("a"?)*`, "left-recursive"},
		{"never finishes", `root ::= "a" root`, `rule "root" can never finish`},
		{"empty class", `root ::= [^\x00-\U0010FFFF]`, "matches nothing"},
		{"deep nesting", "root ::= " + strings.Repeat("(", 200) + `"a"` + strings.Repeat(")", 200), "nested deeper than 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) error = %v, want one containing %q", tt.src, err, tt.want)
			}
		})
	}
}

type matchCase struct {
	text             string
	prefix, complete bool
}

func checkMatches(t *testing.T, g *Grammar, cases []matchCase) {
	t.Helper()
	for _, c := range cases {
		prefix, complete := g.Match([]byte(c.text))
		if prefix != c.prefix || complete != c.complete {
			t.Errorf("Match(%q) = prefix %v, complete %v; want %v, %v", c.text, prefix, complete, c.prefix, c.complete)
		}
	}
}

func TestGBNFMatch(t *testing.T) {
	tests := []struct {
		name, src string
		cases     []matchCase
	}{
		{"literal and alternatives", `root ::= "yes" | "no" | "maybe" " so"`, []matchCase{
			{"yes", true, true}, {"no", true, true}, {"maybe so", true, true},
			{"ma", true, false}, {"maybe", true, false}, {"nope", false, false}, {"", true, false},
		}},
		{"repetitions", `root ::= "a"{2,3} "b"+ "c"* "d"? "e"{2} "f"{1,}`, []matchCase{
			{"aabeef", true, true}, {"aaabbcccdeeff", true, true},
			{"abeef", false, false}, {"aaaabeef", false, false}, {"aabdd", false, false},
			{"aabee", true, false}, {"aabcceef", true, true},
		}},
		{"classes", `root ::= [a-c0-9_] [^a-z\n] .`, []matchCase{
			{"_Zz", true, true}, {"3é€", true, true}, {"a\nx", false, false},
			{"dZz", false, false}, {"aqz", false, false}, {"a😀\n", true, true},
		}},
		{"multi-byte classes", `root ::= [α-ω]+ [^\x00-\x7F]`, []matchCase{
			{"αβγ€", true, true}, {"ωa", false, false}, {"α", true, false},
			{"α\xce", true, false},          // the first byte of another Greek letter
			{"α\xed\xa0\x80", false, false}, // a UTF-8-encoded surrogate is never valid
			{"α\xff", false, false},
		}},
		{"escapes", `root ::= "\x41\u00e9\t\"\\" [\]\-]`, []matchCase{
			{"Aé\t\"\\]", true, true}, {"Aé\t\"\\-", true, true}, {"Aé\t\"\\x", false, false},
		}},
		{"rules, groups and comments", `
# a comma-separated list of words
root ::= word ("," ws word)*   # trailing comment
word ::= [a-z]+
ws ::= " "?`, []matchCase{
			{"a, bc,d", true, true}, {"a,", true, false}, {"a,,b", false, false}, {"A", false, false},
		}},
		{"right recursion nests", "root ::= \"(\" root \")\" | \"x\"", []matchCase{
			{"((x))", true, true}, {"((x)", true, false}, {"(x))", false, false},
		}},
		{"empty alternative", `root ::= | "a"`, []matchCase{{"", true, true}, {"a", true, true}, {"aa", false, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Parse(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			checkMatches(t, g, tt.cases)
		})
	}
}

// TestUTF8Sequences checks the class lowering against Go's own encoder on
// every code point of a few awkward ranges.
func TestUTF8Sequences(t *testing.T) {
	ranges := []runeRange{{0x70, 0x90}, {0x7F0, 0x810}, {0xD700, 0xE100}, {0xFFF0, 0x10010}, {0x10FFF0, 0x10FFFF}, {0x3FF, 0x1001}}
	for _, r := range ranges {
		var seqs [][]byteRange
		utf8Sequences(r.lo, r.hi, func(s []byteRange) { seqs = append(seqs, s) })
		matches := func(b []byte) bool {
			for _, s := range seqs {
				if len(s) != len(b) {
					continue
				}
				ok := true
				for i := range s {
					ok = ok && b[i] >= s[i].lo && b[i] <= s[i].hi
				}
				if ok {
					return true
				}
			}
			return false
		}
		for c := r.lo - 16; c <= r.hi+16; c++ {
			if c < 0 || c > 0x10FFFF || c >= 0xD800 && c <= 0xDFFF {
				continue
			}
			want := c >= r.lo && c <= r.hi
			if got := matches([]byte(string(c))); got != want {
				t.Fatalf("range %#x-%#x: U+%04X matched = %v, want %v", r.lo, r.hi, c, got, want)
			}
		}
	}
}

// FuzzParse checks that no grammar text crashes or hangs the compiler, and
// that whatever compiles can match text.
func FuzzParse(f *testing.F) {
	for _, tt := range []string{`root ::= "a" | [b-z]+ ("," root)?`, `root ::= x{2,5}` + "\nx ::= [^\\n]", `root ::= (("a"?)*)`, "root ::= \"\\u00e9\" . [\\x00-\\x7f]"} {
		f.Add(tt, "ab,c")
	}
	f.Fuzz(func(t *testing.T, src, text string) {
		if len(src) > 2000 {
			return
		}
		g, err := Parse(src)
		if err != nil {
			return
		}
		g.Match([]byte(text))
	})
}

// FuzzSchema does the same for JSON schemas.
func FuzzSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object","properties":{"a":{"type":"integer","minimum":-5,"maximum":300}},"required":["a"]}`,
		`{"$defs":{"n":{"items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"}`, `{"enum":[1,"a",null]}`, `{"anyOf":[{"type":"string","maxLength":3},{"type":"array"}]}`} {
		f.Add(s, `{"a":12}`)
	}
	f.Fuzz(func(t *testing.T, schema, text string) {
		if len(schema) > 2000 {
			return
		}
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			return
		}
		g.Match([]byte(text))
	})
}
