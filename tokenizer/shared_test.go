package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

// The real SmolLM3 tokenizer is loaded once per test binary (it takes a
// moment) and shared by the tests, which only read it.
var (
	jsonOnce sync.Once
	jsonTok  *Tokenizer
	jsonErr  error
)

func smolJSON(t testing.TB) *Tokenizer {
	t.Helper()
	p := sharedtest.Path(t, "tokenizer/tokenizer.json.gz")
	jsonOnce.Do(func() { jsonTok, jsonErr = LoadJSON(p) })
	if jsonErr != nil {
		t.Fatal(jsonErr)
	}
	return jsonTok
}

// refCase is one line of the reference files in ../shared/tokenizer.
type refCase struct {
	Name         string   `json:"name"`
	Text         string   `json:"text"`
	ParseSpecial bool     `json:"parse_special"`
	IDs          []int32  `json:"ids"`
	IDsNoIgnore  []int32  `json:"ids_without_ignore_merges"`
	Pretokens    []string `json:"pretokens"`
}

func readCases(t testing.TB, rel string) []refCase {
	t.Helper()
	f, err := os.Open(sharedtest.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []refCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		var c refCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s:%d: %v", rel, line, err)
		}
		if c.Name == "" {
			c.Name = c.Text
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", rel)
	}
	return cases
}

// checkCases encodes every case, compares with the reference ids and checks
// that decoding gives the text back. It reports the exact-match count.
func checkCases(t *testing.T, tok *Tokenizer, cases []refCase, want func(refCase) []int32) {
	t.Helper()
	bad := 0
	for _, c := range cases {
		got := tok.Encode(c.Text, c.ParseSpecial)
		if !slices.Equal(got, want(c)) {
			bad++
			if bad <= 10 {
				t.Errorf("%s: Encode(%q, %v)\n got %v\nwant %v", c.Name, c.Text, c.ParseSpecial, got, want(c))
			}
			continue
		}
		text, err := tok.Decode(got, false)
		if err != nil || text != c.Text {
			bad++
			t.Errorf("%s: Decode = %q, %v; want %q", c.Name, text, err, c.Text)
		}
	}
	t.Logf("%d/%d exact", len(cases)-bad, len(cases))
}

func refIDs(c refCase) []int32 { return c.IDs }

// checkPretokens compares the pieces of the split pattern with Hugging
// Face's pre-tokenizer output (in the byte-level alphabet), where recorded.
func checkPretokens(t *testing.T, tok *Tokenizer, cases []refCase) {
	t.Helper()
	n := 0
	for _, c := range cases {
		if c.Pretokens == nil {
			continue
		}
		n++
		var got []string
		text := c.Text
		for text != "" {
			pos, l, _ := tok.added.find(text, func(int, int) bool { return c.ParseSpecial })
			splitPieces(text[:pos], func(p string) { got = append(got, mapBytes([]byte(p))) })
			if l == 0 {
				break
			}
			text = text[pos+l:]
		}
		if !slices.Equal(got, c.Pretokens) && !(len(got) == 0 && len(c.Pretokens) == 0) {
			t.Errorf("%s: pieces of %q\n got %q\nwant %q", c.Name, c.Text, got, c.Pretokens)
		}
	}
	t.Logf("%d cases with pretokens checked", n)
}

func TestCasesJSON(t *testing.T) {
	tok := smolJSON(t)
	cases := readCases(t, "tokenizer/tokenizer_cases.jsonl")
	if len(cases) != 485 {
		t.Errorf("tokenizer_cases.jsonl has %d cases, want 485", len(cases))
	}
	checkCases(t, tok, cases, refIDs)
	checkPretokens(t, tok, cases)
}

func TestFuzzJSON(t *testing.T) {
	tok := smolJSON(t)
	cases := readCases(t, "tokenizer/tokenizer_fuzz.jsonl")
	if len(cases) != 2000 {
		t.Errorf("tokenizer_fuzz.jsonl has %d cases, want 2000", len(cases))
	}
	checkCases(t, tok, cases, refIDs)
}

func TestIgnoreMergesJSON(t *testing.T) {
	tok := smolJSON(t)
	cases := readCases(t, "tokenizer/ignore_merges_cases.jsonl")
	checkCases(t, tok, cases, refIDs)
}

func TestUnicodeVersionJSON(t *testing.T) {
	tok := smolJSON(t)
	cases := readCases(t, "tokenizer/unicode_version_cases.jsonl")
	checkCases(t, tok, cases, refIDs)
	checkPretokens(t, tok, cases)
}

func TestBenchTextJSON(t *testing.T) { checkBench(t, smolJSON(t)) }

// checkBench encodes the 1 MB bench text as one string and compares all
// 247,641 ids, then decodes them back.
func checkBench(t *testing.T, tok *Tokenizer) {
	t.Helper()
	text, err := os.ReadFile(sharedtest.Path(t, "tokenizer/bench_en_1mb.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	if err := json.Unmarshal(sharedtest.ReadGzip(t, "tokenizer/bench_en_1mb.ids.gz"), &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != 247641 {
		t.Errorf("bench_en_1mb.ids.gz has %d ids, want 247641", len(want))
	}
	got := tok.Encode(string(text), true)
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("bench: %d ids, want %d; first difference at %d: got %v want %v", len(got), len(want), i, window(got, i), window(want, i))
	}
	back, err := tok.Decode(got, false)
	if err != nil || back != string(text) {
		t.Errorf("bench: decode does not round-trip (err %v)", err)
	}
}

func firstDiff(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func window(a []int32, i int) []int32 { return a[i:min(len(a), i+8)] }

func BenchmarkEncode1MB(b *testing.B) {
	tok := smolJSON(b)
	text, err := os.ReadFile(sharedtest.Path(b, "tokenizer/bench_en_1mb.txt"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(text)
	dst := make([]int32, 0, 300000)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		dst = tok.AppendEncode(dst[:0], s, true)
	}
}

// The decode observations of notes.md section 8 on the real vocabulary.
func TestDecodeLossyJSON(t *testing.T) {
	tok := smolJSON(t)
	tests := []struct {
		ids  []int32
		skip bool
		want string
	}{
		{[]int32{76460}, false, "\uFFFD"},
		{[]int32{172, 253, 246}, false, "\uFFFD"},
		{[]int32{222, 222}, false, "\uFFFD\uFFFD"},
		{[]int32{124, 222}, false, "\uFFFD\uFFFD"},
		{[]int32{169, 254, 222}, false, "\uFFFD\uFFFD\uFFFD"},
		{[]int32{158, 224, 64}, false, "\uFFFDa"},
		{[]int32{76460, 222}, false, "😀"},
		{[]int32{128011, 128002, 128012}, false, "<|im_start|><think><|im_end|>"},
		{[]int32{128011, 128002, 128012}, true, "<think>"},
	}
	for _, tt := range tests {
		got, err := tok.Decode(tt.ids, tt.skip)
		if err != nil || got != tt.want {
			t.Errorf("Decode(%v, %v) = %q, %v; want %q", tt.ids, tt.skip, got, err, tt.want)
		}
	}
	if id, ok := tok.ID("<|im_end|>"); !ok || id != 128012 || !tok.IsEndOfGeneration(id) {
		t.Errorf("<|im_end|>: id %d %v, end of generation %v", id, ok, tok.IsEndOfGeneration(id))
	}
	if k, _ := tok.Kind(128002); k != UserDefined {
		t.Errorf("<think> kind %v, want UserDefined", k)
	}
}

// notes.md 7: each of the 126,648 vocabulary entries that is valid UTF-8
// encodes to exactly its own id (ignore_merges, and one pre-token each).
func TestVocabEntriesEncodeToThemselves(t *testing.T) {
	tok := smolJSON(t)
	n, bad := 0, 0
	var got []int32
	for id := range int32(tok.Len()) {
		if k, _ := tok.Kind(id); k != Normal {
			continue
		}
		b := tok.TokenBytes(id)
		if !utf8.Valid(b) {
			continue
		}
		n++
		if got = tok.AppendEncode(got[:0], string(b), true); len(got) != 1 || got[0] != id {
			if bad++; bad <= 5 {
				t.Errorf("token %d %q encodes to %v", id, b, got)
			}
		}
	}
	if n != 126648 {
		t.Errorf("%d UTF-8-valid vocabulary entries, want 126648", n)
	}
	if bad > 0 {
		t.Errorf("%d of %d entries do not encode to themselves", bad, n)
	}
}
