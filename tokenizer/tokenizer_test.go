package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func pieces(s string) []string {
	var p []string
	splitPieces(s, func(x string) { p = append(p, x) })
	return p
}

// The examples of notes.md section 5, one per rule of the split pattern.
func TestSplitPieces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"'Sam", []string{"'S", "am"}},
		{"'llama", []string{"'ll", "ama"}},
		{"'rE'Ll'ſ", []string{"'rE", "'Ll", "'ſ"}},
		{"don’t", []string{"don", "’t"}},
		{" hello", []string{" hello"}},
		{"\tdef", []string{"\tdef"}},
		{"/usr", []string{"/usr"}},
		{"$x", []string{"$x"}},
		{"😀hello", []string{"😀hello"}},
		{"\u0301world", []string{"\u0301world"}},
		{"1234567", []string{"123", "456", "7"}},
		{" 123", []string{" ", "123"}},
		{"12,345.67", []string{"12", ",", "345", ".", "67"}},
		{"x²+y³", []string{"x", "²", "+y", "³"}},
		{"a !", []string{"a", " !"}},
		{"!!!\n\n", []string{"!!!\n\n"}},
		{"end.\n\n\nNext", []string{"end", ".\n\n\n", "Next"}},
		{"x\t!", []string{"x", "\t", "!"}},
		{" \n", []string{" \n"}},
		{"\r\n\r\n", []string{"\r\n\r\n"}},
		{"\n    code", []string{"\n", "   ", " code"}},
		{"a  b", []string{"a", " ", " b"}},
		{"a   !", []string{"a", "  ", " !"}},
		{"  hello world  ", []string{" ", " hello", " world", "  "}},
		{"a 1", []string{"a", " ", "1"}},
		{"\t!", []string{"\t", "!"}},
		{"a   123", []string{"a", "  ", " ", "123"}},
		{"a\u00a0b\u3000c", []string{"a", "\u00a0b", "\u3000c"}},
		{"x\u200by", []string{"x", "\u200by"}}, // ZWSP is not \s
		{"\xff\xfeab", []string{"\xff\xfe", "ab"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := pieces(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("pieces(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Unicode 16.0 letters that Go 1.26's tables (15.0) do not know.
func TestClassUnicode16(t *testing.T) {
	for _, r := range []rune{0x1C89, 0x10D50, 0x16D43, 0x1E5D0, 0x2EBF0, 0x1E4D0, 0x11F04, 0x31350} {
		if classOf(r) != clsLetter {
			t.Errorf("U+%04X: class %d, want letter", r, classOf(r))
		}
	}
	for r, want := range map[rune]uint8{'²': clsNumber, '½': clsNumber, 'Ⅻ': clsNumber, 0x0085: clsSpace, 0x180E: clsOther, 0xFEFF: clsOther, 0x1F: clsOther} {
		if got := classOf(r); got != want {
			t.Errorf("U+%04X: class %d, want %d", r, got, want)
		}
	}
}

func TestByteLevelAlphabet(t *testing.T) {
	seen := map[rune]bool{}
	for b := range 256 {
		r := byteRune(byte(b))
		if seen[r] {
			t.Fatalf("byte %#x maps to %U twice", b, r)
		}
		seen[r] = true
		if back, ok := runeByte(r); !ok || back != byte(b) {
			t.Errorf("byte %#x → %U → %#x, %v", b, r, back, ok)
		}
	}
	for b, want := range map[byte]rune{' ': 'Ġ', '\n': 'Ċ', '\t': 'ĉ', '\r': 'č', 0: 'Ā', 0x7F: 'ġ', 0x80: 'Ģ', 0xA0: 'ł', 0xAD: 'Ń'} {
		if got := byteRune(b); got != want {
			t.Errorf("byteRune(%#x) = %U, want %U", b, got, want)
		}
	}
	if _, ok := runeByte('Ġ' + 100); ok {
		t.Error("U+0184 is not in the alphabet")
	}
}

// The U+FFFD counts of notes.md section 8 (Rust's from_utf8_lossy).
func TestLossyUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\xF0\x9F\x98", "\uFFFD"},
		{"\x80\x80", "\uFFFD\uFFFD"},
		{"\xC0\x80", "\uFFFD\uFFFD"},
		{"\xED\xA0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"\xE2\x82a", "\uFFFDa"},
		{"\xF0\x9F\x98\x80", "😀"},
		{"a\xF4\x90\x80\x80", "a\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xE0\xA0", "\uFFFD"},
		{"héllo", "héllo"},
	}
	for _, tt := range tests {
		if got := string(appendLossy(nil, []byte(tt.in), true)); got != tt.want {
			t.Errorf("lossy(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A hand-made vocabulary: bytes, then merges that exercise ranks and ties.
func tinyTokenizer(t testing.TB, ignoreMerges bool) *Tokenizer {
	t.Helper()
	var s spec
	for b := range 256 {
		s.tokens = append(s.tokens, string(byteRune(byte(b))))
	}
	add := func(l, r string) {
		s.merges = append(s.merges, [2]string{l, r})
		s.tokens = append(s.tokens, l+r)
	}
	add("a", "a")                            // 256
	add("aa", "aa")                          // 257
	add("b", "c")                            // 258
	add("a", "b")                            // 259
	add("ab", "c")                           // 260
	add("Ġ", "a")                            // 261
	s.tokens = append(s.tokens, "abc"+"abc") // 262, reachable only whole (ignore_merges)
	s.tokens = append(s.tokens, "<x>")       // 263 special
	s.tokens = append(s.tokens, "<xy>")      // 264 user-defined
	s.kinds = make([]Kind, len(s.tokens))
	s.kinds[263], s.kinds[264] = Special, UserDefined
	s.ignoreMerges = ignoreMerges
	s.bos, s.eos, s.eot = -1, -1, -1
	tok, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestMergeRules(t *testing.T) {
	tok := tinyTokenizer(t, true)
	a, b, c := int32(97), int32(98), int32(99) // byte order here, not GPT-2 order
	tests := []struct {
		in           string
		parseSpecial bool
		want         []int32
	}{
		{"aaa", true, []int32{256, a}},      // leftmost pair merges first
		{"aaaaa", true, []int32{257, a}},    // then aa+aa
		{"abcc", true, []int32{a, 258, c}},  // b+c outranks a+b
		{"abcabc", true, []int32{262}},      // ignore_merges: whole word
		{" aa", true, []int32{261, a}},      // Ġa before a+a? no: a+a (rank 0) wins
		{"a<x>b", true, []int32{a, 263, b}}, // special matched inside a word
		{"a<x>b", false, []int32{a, 60, 120, 62, b}},
		{"<xy>", false, []int32{264}},  // user-defined always matched
		{"<x", true, []int32{60, 120}}, // near miss
		{"c", true, []int32{c}},
	}
	// " aa": pairs (Ġ,a) rank 5, (a,a) rank 0 → Ġ, aa.
	tests[4].want = []int32{32, 256}
	for _, tt := range tests {
		if got := tok.Encode(tt.in, tt.parseSpecial); !slices.Equal(got, tt.want) {
			t.Errorf("Encode(%q, %v) = %v, want %v", tt.in, tt.parseSpecial, got, tt.want)
		}
	}
	if got := tinyTokenizer(t, false).Encode("abcabc", true); !slices.Equal(got, []int32{a, 258, a, 258}) {
		t.Errorf("without ignore_merges: %v", got)
	}
}

// merge (array rescan) and mergeLong (heap) must agree on every input.
func TestMergeLongAgrees(t *testing.T) {
	tok := tinyTokenizer(t, false)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 2 + rng.IntN(60)
		var sb strings.Builder
		for range n {
			sb.WriteByte("aabc "[rng.IntN(5)])
		}
		w := sb.String()
		short := tok.merge(nil, w)
		long := tok.mergeLong(nil, w)
		if !slices.Equal(short, long) {
			t.Fatalf("%q: merge %v, mergeLong %v", w, short, long)
		}
	}
}

func TestStreamDecoderMatchesDecode(t *testing.T) {
	tok := tinyTokenizer(t, true)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		ids := make([]int32, rng.IntN(12))
		for i := range ids {
			ids[i] = int32(rng.IntN(tok.Len()))
		}
		for _, skip := range []bool{false, true} {
			want, err := tok.Decode(ids, skip)
			if err != nil {
				t.Fatal(err)
			}
			d := tok.NewStreamDecoder(skip)
			var got strings.Builder
			for _, id := range ids {
				p, err := d.Push(id)
				if err != nil {
					t.Fatal(err)
				}
				if !utf8.ValidString(p) {
					t.Fatalf("piece %q is not valid UTF-8", p)
				}
				got.WriteString(p)
			}
			got.WriteString(d.Flush())
			if got.String() != want {
				t.Fatalf("ids %v skip %v: stream %q, Decode %q", ids, skip, got.String(), want)
			}
		}
	}
	if _, err := tok.Decode([]int32{1, 999}, false); err == nil || !strings.Contains(err.Error(), "position 1") {
		t.Errorf("out-of-range id: err = %v", err)
	}
}

func TestRoundTripArbitraryBytes(t *testing.T) {
	tok := tinyTokenizer(t, true)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		ids := tok.Encode(string(b), false)
		back, err := tok.AppendBytes(nil, ids, false)
		if err != nil || string(back) != string(b) {
			t.Fatalf("%q: round trip gave %q (%v)", b, back, err)
		}
	}
}

func TestReadJSONRejects(t *testing.T) {
	base := tinyJSONDoc()
	tests := []struct {
		name, from, to, want string
	}{
		{"model", `"type":"BPE"`, `"type":"WordPiece"`, "model type"},
		{"normalizer", `"normalizer":null`, `"normalizer":{"type":"NFC"}`, "normalizer"},
		{"pattern", `\\s+(?!\\S)|`, ``, "split"},
		{"byte fallback", `"byte_fallback":false`, `"byte_fallback":true`, "byte_fallback"},
		{"lstrip", `"lstrip":false`, `"lstrip":true`, "lstrip"},
		{"decoder", `"decoder":{"type":"ByteLevel"}`, `"decoder":{"type":"Metaspace"}`, "decoder"},
		{"post", `"post_processor":null`, `"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},{"Sequence":{"id":"A"}}]}`, "post_processor"},
		{"merge", `"merges":[]`, `"merges":["a b"]`, "merge 0"},
		{"truncated", `}}`, ``, "tokenizer.json"},
	}
	for _, tt := range tests {
		doc := strings.Replace(base, tt.from, tt.to, 1)
		if doc == base {
			t.Fatalf("%s: %q not in the test document", tt.name, tt.from)
		}
		_, err := ReadJSON(strings.NewReader(doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}
	if _, err := ReadJSON(strings.NewReader(base)); err != nil {
		t.Fatalf("base document: %v", err)
	}
}

// tinyJSONDoc is a minimal valid tokenizer.json: the 256 bytes and one added token.
func tinyJSONDoc() string {
	var sb strings.Builder
	sb.WriteString(`{"added_tokens":[{"id":256,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],`)
	sb.WriteString(`"normalizer":null,"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":`)
	sb.WriteString(strings.ReplaceAll(strings.ReplaceAll(`"`+llama3Pattern+`"`, `\`, `\\`), `\\"`, `\"`))
	sb.WriteString(`},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]},`)
	sb.WriteString(`"post_processor":null,"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","dropout":null,"unk_token":null,"byte_fallback":false,"ignore_merges":true,"vocab":{`)
	for b := range 256 {
		if b > 0 {
			sb.WriteByte(',')
		}
		r := byteRune(byte(b))
		q := string(r)
		if r == '"' || r == '\\' {
			q = `\` + q
		}
		sb.WriteString(`"` + q + `":` + strconv.Itoa(b))
	}
	sb.WriteString(`},"merges":[]}}`)
	return sb.String()
}

// Encoding from many goroutines at once shares the word cache safely (run
// with -race) and gives the same ids as encoding alone.
func TestConcurrentEncode(t *testing.T) {
	tok := tinyTokenizer(t, false)
	inputs := []string{"aaaa bcbc abab", "cab cab cab", " aaaaaaa", "abcabc<x>abcabc"}
	want := make([][]int32, len(inputs))
	for i, s := range inputs {
		want[i] = tinyTokenizer(t, false).Encode(s, true)
	}
	done := make(chan error)
	for g := range 8 {
		go func() {
			for k := range 200 {
				i := (g + k) % len(inputs)
				if got := tok.Encode(inputs[i], true); !slices.Equal(got, want[i]) {
					done <- fmt.Errorf("goroutine %d: Encode(%q) = %v, want %v", g, inputs[i], got, want[i])
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestIDAndToken(t *testing.T) {
	tok := tinyTokenizer(t, true)
	for _, s := range []string{"Ġa", "aa", "<x>", "<xy>", "!", "Ġ"} {
		id, ok := tok.ID(s)
		if !ok || tok.Token(id) != s {
			t.Errorf("ID(%q) = %d, %v; Token gives %q", s, id, ok, tok.Token(id))
		}
	}
	for _, s := range []string{"zz", " a", "<y>", ""} {
		if id, ok := tok.ID(s); ok {
			t.Errorf("ID(%q) = %d, want none", s, id)
		}
	}
	if tok.Token(-1) != "" || tok.Token(int32(tok.Len())) != "" {
		t.Error("Token out of range should be empty")
	}
}
