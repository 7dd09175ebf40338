// Package reftest reads the reference renders of the chat subpackages
// (testdata/renders.json, written by testdata/render.py with jinja2) and
// checks the byte ranges RenderSpans reports. It is for tests only.
package reftest

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
)

// Case is one reference render: a conversation, the template's options as
// render.py passed them, and the text jinja2 rendered or the error the
// template raised.
type Case struct {
	Name     string           `json:"name"`
	Messages []engine.Message `json:"messages"`
	Options  json.RawMessage  `json:"options"`
	Rendered *string          `json:"rendered"`
	Error    string           `json:"error"`
}

// Load reads testdata/renders.json and fails unless it holds want cases.
func Load(t *testing.T, want int) []Case {
	t.Helper()
	data, err := os.ReadFile("testdata/renders.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []Case
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) != want {
		t.Fatalf("%d reference cases, want %d (regenerate with testdata/render.py and update the count)", len(cases), want)
	}
	return cases
}

// DiffAt returns the first byte where a and b differ.
func DiffAt(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// CheckSpans checks that spans are ordered ranges inside text, that every
// occurrence of mark (a string only the caller wrote; "" to skip the check)
// lies inside one, and that no span holds any of the template's markers.
func CheckSpans(t *testing.T, text string, spans [][2]int, mark string, markers ...string) {
	t.Helper()
	end := 0
	for _, s := range spans {
		if s[0] < end || s[1] <= s[0] || s[1] > len(text) {
			t.Fatalf("spans out of order or empty: %v (text of %d bytes)", spans, len(text))
		}
		end = s[1]
		for _, m := range markers {
			if strings.Contains(text[s[0]:s[1]], m) {
				t.Errorf("span %v holds the template marker %q: %q", s, m, text[s[0]:s[1]])
			}
		}
	}
	if mark == "" {
		return
	}
	inside := func(i int) bool {
		for _, s := range spans {
			if i >= s[0] && i+len(mark) <= s[1] {
				return true
			}
		}
		return false
	}
	n := 0
	for i := 0; ; {
		j := strings.Index(text[i:], mark)
		if j < 0 {
			break
		}
		n++
		if !inside(i + j) {
			t.Errorf("caller text at byte %d is outside the spans: …%q…", i+j, text[max(0, i+j-20):min(len(text), i+j+20)])
		}
		i += j + len(mark)
	}
	if n == 0 {
		t.Errorf("the render holds no %q at all", mark)
	}
}

// Accepts reports whether the grammar of a JSON schema accepts s whole,
// fed byte by byte.
func Accepts(t *testing.T, schema []byte, s string) bool {
	t.Helper()
	g, err := grammar.FromJSONSchema(schema)
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	c := g.NewConstraint(byteVocab(t))
	for i := 0; i < len(s); i++ {
		if c.Accept(int32(s[i])) != nil {
			return false
		}
	}
	return c.Done()
}

var (
	vocabOnce sync.Once
	vocab     *grammar.Vocab
)

// byteVocab is a vocabulary of the 256 bytes and an end token.
func byteVocab(t *testing.T) *grammar.Vocab {
	vocabOnce.Do(func() {
		tokens := make([][]byte, 257)
		for i := range 256 {
			tokens[i] = []byte{byte(i)}
		}
		v, err := grammar.NewVocab(tokens, []int32{256})
		if err != nil {
			t.Fatal(err)
		}
		vocab = v
	})
	return vocab
}

// Check renders every case with render (which reads the case's options)
// and compares with the reference: the same text, byte for byte, with
// ordered spans, or an error where the template raised one.
func Check(t *testing.T, cases []Case, render func(c Case) (string, [][2]int, error)) {
	t.Helper()
	for _, c := range cases {
		got, spans, err := render(c)
		if c.Rendered == nil {
			if err == nil {
				t.Errorf("%s: no error, want one like the template's %q", c.Name, c.Error)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if got != *c.Rendered {
			t.Errorf("%s: differs at byte %d:\n got %q\nwant %q", c.Name, DiffAt(got, *c.Rendered), got, *c.Rendered)
		}
		CheckSpans(t, got, spans, "")
	}
}

// Decode decodes a case's options into v, failing the test on error.
func (c Case) Decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(c.Options, v); err != nil {
		t.Fatalf("%s: options: %v", c.Name, err)
	}
}
