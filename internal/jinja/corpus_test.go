package jinja

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

// corpus is testdata/corpus.json.gz, written by testdata/render.py: each
// template of the corpus rendered by Python jinja2 on each conversation.
type corpus struct {
	Now           string            `json:"now"`
	Special       json.RawMessage   `json:"special"`
	Conversations []json.RawMessage `json:"conversations"`
	Templates     []struct {
		Name    string `json:"name"`
		SHA256  string `json:"sha256"`
		Renders map[string]struct {
			Text  *string `json:"text"`
			Error string  `json:"error"`
		} `json:"renders"`
	} `json:"templates"`
}

func loadCorpus(t *testing.T) *corpus {
	t.Helper()
	f, err := os.Open("testdata/corpus.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.NewDecoder(gz).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// corpusFile finds a corpus template by its name in corpus.json.gz:
// llama.cpp's in its clone, SmolLM3's in ../shared, the families' in
// their testdata.
func corpusFile(t *testing.T, name string) string {
	switch {
	case strings.HasPrefix(name, "llama.cpp/"):
		return filepath.Join(sharedtest.LlamaCpp(t), strings.TrimPrefix(name, "llama.cpp/"))
	case strings.HasPrefix(name, "shared/"):
		return sharedtest.Path(t, strings.TrimPrefix(name, "shared/"))
	}
	return filepath.Join("..", "..", name)
}

// conversationVars returns a conversation of the corpus as the variables
// render.py passes: its fields, keys in order, and the special tokens.
func conversationVars(t *testing.T, c *corpus, raw json.RawMessage) (string, *Dict) {
	t.Helper()
	v, err := FromJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	special, err := FromJSON(c.Special)
	if err != nil {
		t.Fatal(err)
	}
	vars := NewDict()
	name := ""
	for _, src := range []*Dict{special.dict(), v.dict()} {
		for i, k := range src.keys {
			if k.s == "name" && src == v.dict() {
				name = src.vals[i].s
				continue
			}
			vars.set(k, src.vals[i])
		}
	}
	return name, vars
}

// TestCorpus renders every template of the corpus on every conversation
// and compares with Python jinja2, byte for byte; where jinja2 raised,
// the engine must fail too.
func TestCorpus(t *testing.T) {
	c := loadCorpus(t)
	now, err := time.Parse("2006-01-02T15:04:05", c.Now)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Now: func() time.Time { return now }}
	renders, errs := 0, 0
	for _, tmpl := range c.Templates {
		t.Run(strings.TrimSuffix(filepath.Base(tmpl.Name), ".jinja"), func(t *testing.T) {
			src, err := os.ReadFile(corpusFile(t, tmpl.Name))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(src); hex.EncodeToString(sum[:]) != tmpl.SHA256 {
				t.Fatalf("%s changed since testdata/corpus.json.gz was written: run python3 internal/jinja/testdata/render.py", tmpl.Name)
			}
			parsed, parseErr := Parse(string(src))
			for _, raw := range c.Conversations {
				name, vars := conversationVars(t, c, raw)
				want, ok := tmpl.Renders[name]
				if !ok {
					t.Fatalf("no reference render of %s", name)
				}
				var got string
				err := parseErr
				if err == nil {
					got, err = parsed.Render(context.Background(), vars, opts)
				}
				switch {
				case want.Text == nil && err == nil:
					t.Errorf("%s: rendered, but jinja2 raised %s", name, want.Error)
				case want.Text == nil:
					errs++
				case err != nil:
					t.Errorf("%s: %v", name, err)
				case got != *want.Text:
					i := 0
					for i < len(got) && i < len(*want.Text) && got[i] == (*want.Text)[i] {
						i++
					}
					t.Errorf("%s: differs at byte %d:\n got …%q\nwant …%q", name, i,
						got[max(0, i-40):min(len(got), i+80)], (*want.Text)[max(0, i-40):min(len(*want.Text), i+80)])
				default:
					renders++
				}
			}
		})
	}
	t.Logf("%d templates: %d renders byte-exact, %d errors where jinja2 raised", len(c.Templates), renders, errs)
}

// TestSnippets renders the small templates of testdata/render.py's
// SNIPPETS, each on the semantics of one feature, and compares with jinja2.
func TestSnippets(t *testing.T) {
	f, err := os.Open("testdata/corpus.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Now      string          `json:"now"`
		Vars     json.RawMessage `json:"snippet_vars"`
		Snippets []struct {
			Template string  `json:"template"`
			Text     *string `json:"text"`
			Error    string  `json:"error"`
		} `json:"snippets"`
	}
	if err := json.NewDecoder(gz).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Snippets) < 60 {
		t.Fatalf("%d snippets, want at least 60", len(doc.Snippets))
	}
	now, _ := time.Parse("2006-01-02T15:04:05", doc.Now)
	for _, s := range doc.Snippets {
		vars, err := FromJSON(doc.Vars)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(s.Template)
		var got string
		if err == nil {
			got, err = p.Render(context.Background(), vars.dict(), Options{Now: func() time.Time { return now }})
		}
		switch {
		case s.Text == nil && err == nil:
			t.Errorf("%q: rendered %q, but jinja2 raised %s", s.Template, got, s.Error)
		case s.Text == nil:
		case err != nil:
			t.Errorf("%q: %v (jinja2: %q)", s.Template, err, *s.Text)
		case got != *s.Text:
			t.Errorf("%q:\n got %q\nwant %q", s.Template, got, *s.Text)
		}
	}
}
