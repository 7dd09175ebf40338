package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Hand-made vocabularies of each kind, small enough to reason about.

// byteTokens appends the 256 byte tokens <0x00>..<0xFF> to s.
func byteTokens(s *spec) {
	for b := range 256 {
		s.tokens = append(s.tokens, fmt.Sprintf("<0x%02X>", b))
		s.kinds = append(s.kinds, Normal)
		s.byteTokens = append(s.byteTokens, true)
		s.scores = append(s.scores, 0)
	}
}

// tinySPM: <unk> <s> </s>, the bytes, then scored pieces.
func tinySPM(t testing.TB, spacePrefix bool, extra ...string) *Tokenizer {
	t.Helper()
	s := spec{kind: sentencePiece, model: "llama", llama: true, spacePrefix: spacePrefix,
		bos: 1, eos: 2, eot: -1, unk: 0, sep: -1, addBOS: true}
	for i, tok := range []string{"<unk>", "<s>", "</s>"} {
		s.tokens = append(s.tokens, tok)
		s.kinds = append(s.kinds, Special)
		s.byteTokens = append(s.byteTokens, false)
		s.scores = append(s.scores, 0)
		_ = i
	}
	byteTokens(&s)
	pieces := []struct {
		tok   string
		score float32
	}{
		{"▁", -5}, {"a", -9}, {"b", -9}, {"c", -9}, {"ab", -1}, {"bc", -1}, {"▁a", -2}, {"▁ab", -0.5}, {"abc", -3},
		{"▁▁", -4}, {"<x>", 0},
	}
	for _, p := range pieces {
		s.tokens = append(s.tokens, p.tok)
		s.kinds = append(s.kinds, Normal)
		s.byteTokens = append(s.byteTokens, false)
		s.scores = append(s.scores, p.score)
	}
	s.kinds[len(s.kinds)-1] = UserDefined // <x>
	for _, e := range extra {
		s.tokens = append(s.tokens, e)
		s.kinds = append(s.kinds, Normal)
		s.byteTokens = append(s.byteTokens, false)
		s.scores = append(s.scores, -0.1)
	}
	tok, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSentencePiece(t *testing.T) {
	tok := tinySPM(t, true)
	id := func(s string) int32 {
		i, ok := tok.ID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return i
	}
	b := func(c byte) int32 { return 3 + int32(c) }
	tests := []struct {
		in           string
		parseSpecial bool
		want         []int32
	}{
		{"", false, nil},
		{"ab", false, []int32{id("▁ab")}},                     // ▁ab (-0.5) beats ab (-1)
		{"abc", false, []int32{id("▁ab"), id("c")}},           // then ▁ab+c is no token
		{" bca", false, []int32{id("▁▁"), id("bc"), id("a")}}, // bc (-1) joins before ▁▁ (-4)
		{"é", false, []int32{id("▁"), b(0xC3), b(0xA9)}},      // byte fallback
		{"<s>ab", true, []int32{1, id("▁ab")}},                // a space before text after a special token
		{"<s>ab", false, []int32{id("▁"), b('<'), b('s'), b('>'), id("ab")}},
		{"a<x>b", false, []int32{id("▁a"), id("<x>"), id("▁"), id("b")}},
	}
	for _, tt := range tests {
		if got := tok.Encode(tt.in, tt.parseSpecial); !slices.Equal(got, tt.want) {
			t.Errorf("Encode(%q, %v) = %v, want %v", tt.in, tt.parseSpecial, got, tt.want)
		}
	}
	// Ties go to the leftmost pair: without the prefix, "abc" has ab and bc
	// at -1; ab wins, then ab+c = abc.
	if got := tinySPM(t, false).Encode("abc", false); !slices.Equal(got, []int32{id("abc")}) {
		t.Errorf("no prefix: Encode(abc) = %v, want [abc]", got)
	}
	if got := tinySPM(t, false).Encode("bcab", false); !slices.Equal(got, []int32{id("bc"), id("ab")}) {
		t.Errorf("no prefix: Encode(bcab) = %v, want [bc ab]", got)
	}
	if got := tok.Tokenize("ab", true, false); !slices.Equal(got, []int32{1, id("▁ab")}) {
		t.Errorf("Tokenize(ab, add special) = %v, want BOS ▁ab", got)
	}
	// Decoding: ▁ is a space, byte tokens are bytes, the first space goes.
	for _, c := range []struct {
		ids  []int32
		skip bool
		want string
	}{
		{[]int32{id("▁ab"), id("▁"), b(0xC3), b(0xA9)}, false, "ab é"},
		{[]int32{1, id("▁ab")}, false, "<s> ab"},
		{[]int32{1, id("▁ab")}, true, "ab"},
		{[]int32{b(0xC3)}, false, "\uFFFD"},
	} {
		if got, err := tok.Decode(c.ids, c.skip); err != nil || got != c.want {
			t.Errorf("Decode(%v, %v) = %q, %v; want %q", c.ids, c.skip, got, err, c.want)
		}
	}
}

// Cutting the text into chunks at ▁ gives what SentencePiece gives on the
// whole text, also when a token joins across a ▁ (here "c▁a" makes c glue),
// and the heap and the array versions agree.
func TestSPMChunks(t *testing.T) {
	tok := tinySPM(t, true, "c▁a", "b▁")
	if !tok.glue["c"] || !tok.glue["b"] || len(tok.glue) != 2 {
		t.Fatalf("glue %v, want b and c", tok.glue)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		var sb strings.Builder
		for range rng.IntN(40) {
			sb.WriteString([]string{"a", "b", "c", "▁", "▁", "é", "\xff", "\xe2"}[rng.IntN(8)])
		}
		text := sb.String()
		whole := tok.spmChunk(nil, text)
		long := tok.spmChunkLong(nil, text)
		chunked := tok.eachChunk(nil, text, tok.spmChunk)
		if !slices.Equal(whole, long) || !slices.Equal(whole, chunked) {
			t.Fatalf("%q: whole %v, heap %v, chunked %v", text, whole, long, chunked)
		}
	}
}

// tinyWPM: a WordPiece vocabulary as llama.cpp's converter writes one (word
// starts with ▁, continuations bare).
func tinyWPM(t testing.TB, lower bool) *Tokenizer {
	t.Helper()
	s := spec{kind: wordPiece, model: "bert", llama: true, bos: 2, eos: -1, eot: -1, unk: 1, sep: 3,
		addBOS: true, lower: lower, stripAccents: lower}
	for i, tok := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "▁hello", "▁world", "▁un", "aff", "able", "▁,",
		"▁!", "▁東", "▁elan", "▁Hello", "ing", "▁go", "▁$", "▁a"} {
		s.tokens = append(s.tokens, tok)
		k := Normal
		if i < 4 {
			k = Special
		}
		s.kinds = append(s.kinds, k)
	}
	tok, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestWordPiece(t *testing.T) {
	tok := tinyWPM(t, true)
	tests := []struct {
		in   string
		want []int32
	}{
		{"Hello, WORLD!", []int32{4, 9, 5, 10}},
		{"unaffable", []int32{6, 7, 8}},
		{"unaffablex", []int32{1}},  // one position without a token: the word is [UNK]
		{"Élan", []int32{12}},       // accents stripped, lower-cased
		{"e\u0301lan", []int32{12}}, // a combining mark is dropped
		{"東京", []int32{11, 1}},      // each ideograph is a word
		{"going\tgo\u00a0go", []int32{15, 14, 15, 15}},
		{"$a", []int32{16, 17}},            // an ASCII symbol is a word
		{"a\x00\u200bb\ufffd", []int32{1}}, // NUL, format characters and U+FFFD vanish: "ab"
		{"[CLS]", []int32{1, 1, 1}},        // not parsed: [ CLS ] → [UNK] [UNK] [UNK]
	}
	for _, tt := range tests {
		if got := tok.Encode(tt.in, false); !slices.Equal(got, tt.want) {
			t.Errorf("Encode(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if got := tok.Tokenize("hello[SEP]world", true, true); !slices.Equal(got, []int32{2, 4, 3, 5, 3}) {
		t.Errorf("Tokenize(add special, parse special) = %v, want [CLS] hello [SEP] world [SEP]", got)
	}
	if got := tinyWPM(t, false).Encode("Hello hello", false); !slices.Equal(got, []int32{13, 4}) {
		t.Errorf("cased: %v, want [▁Hello ▁hello]", got)
	}
	if got, _ := tok.Decode([]int32{2, 6, 7, 8, 9, 5, 3}, true); got != "unaffable , world" {
		t.Errorf("Decode = %q, want the pieces joined", got)
	}
}

// tinyCharBPE: a Gemma 4 style vocabulary (characters, ▁, byte tokens,
// merges by rank).
func tinyCharBPE(t testing.TB) *Tokenizer {
	t.Helper()
	s := spec{kind: charBPE, model: "gemma4", llama: true, bos: -1, eos: -1, eot: -1, unk: -1, sep: -1}
	byteTokens(&s)
	for _, tok := range []string{"a", "b", "▁", "▁a", "ab", "\n", "\n\n", "▁ab", "<t>"} {
		s.tokens = append(s.tokens, tok)
		s.kinds = append(s.kinds, Normal)
		s.byteTokens = append(s.byteTokens, false)
	}
	s.kinds[len(s.kinds)-1] = Special
	s.scores = nil
	s.merges = [][2]string{{"▁", "a"}, {"a", "b"}, {"▁a", "b"}}
	tok, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestCharBPE(t *testing.T) {
	tok := tinyCharBPE(t)
	id := func(s string) int32 { i, _ := tok.ID(s); return i }
	tests := []struct {
		in   string
		want []int32
	}{
		{"a ab", []int32{id("a"), id("▁ab")}},
		{"ab", []int32{id("ab")}},
		{"\n\n", []int32{id("\n\n")}},                           // a run of newlines that is a token
		{"\n\n\n", []int32{id("\n"), id("\n"), id("\n")}},       // one that is not: characters
		{"é", []int32{0xC3, 0xA9}},                              // byte fallback
		{"a\xffb", []int32{id("a"), 0xEF, 0xBF, 0xBD, id("b")}}, // invalid UTF-8 reads as U+FFFD
		{"<t>a", []int32{'<', 't', '>', id("a")}},               // <t> not parsed: byte tokens
	}
	for _, tt := range tests {
		if got := tok.Encode(tt.in, false); !slices.Equal(got, tt.want) {
			t.Errorf("Encode(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if got := tok.Encode("<t>a", true); !slices.Equal(got, []int32{id("<t>"), id("a")}) {
		t.Errorf("special: %v", got)
	}
	if got, _ := tok.Decode(tok.Encode("a ab é\n\n", false), false); got != "a ab é\n\n" {
		t.Errorf("round trip: %q", got)
	}
}

// The llama.cpp split patterns, one example per rule.
func TestLlamaCppPatterns(t *testing.T) {
	split := func(stages []pattern, s string) []string {
		var out []string
		splitWith(stages, s, func(p string) { out = append(out, p) })
		return out
	}
	tests := []struct {
		name   string
		stages []pattern
		in     string
		want   []string
	}{
		{"qwen2", splitQwen2, "1234", []string{"1", "2", "3", "4"}},
		{"qwen2", splitQwen2, "I'LL've 's", []string{"I", "'LL", "'ve", " '", "s"}},
		{"qwen2", splitQwen2, "'ſx", []string{"'ſx"}},               // no Unicode case folding (Hugging Face: 'ſ, x)
		{"qwen2", splitQwen2, "x\u1c89y", []string{"x", "\u1c89y"}}, // U+1C89 is a Unicode 16 letter, not 15.1
		{"qwen2", splitQwen2, "a  b\n\n c", []string{"a", " ", " b", "\n\n", " c"}},
		{"qwen2", splitQwen2, "e\u0301", []string{"e", "\u0301"}},
		{"qwen35", splitQwen35, "e\u0301 x", []string{"e\u0301", " x"}},
		{"gpt2", splitGPT2, " hello world", []string{" hello", " world"}},
		{"gpt2", splitGPT2, "I'll've'LL", []string{"I", "'ll", "'ve", "'", "LL"}},
		{"gpt2", splitGPT2, "123abc x²", []string{"123", "abc", " x", "²"}},
		{"gpt2", splitGPT2, "a\t!  b  ", []string{"a", "\t", "!", " ", " b", "  "}},
		{"gpt2", splitGPT2, " \n x", []string{" \n", " x"}},
		{"starcoder", splitStarCoder, "a 123 b", []string{"a", " ", "1", "2", "3", " b"}},
		{"starcoder", splitStarCoder, "x²y", []string{"x", "²", "y"}},
		// gpt-4o: words by case, where a letter outside ASCII is both cases.
		{"gpt-4o", splitGPT4o, "HelloWorld XMLHttpRequest", []string{"Hello", "World", " XMLHttp", "Request"}},
		{"gpt-4o", splitGPT4o, "ÀBC def", []string{"À", "BC", " def"}}, // Hugging Face: ÀBC
		{"gpt-4o", splitGPT4o, "aÀB ǅemal", []string{"aÀ", "B", " ǅemal"}},
		{"gpt-4o", splitGPT4o, "I'M don't 's", []string{"I'M", " don't", " '", "s"}},
		{"gpt-4o", splitGPT4o, "'s x'ſ", []string{"'s", " x", "'ſ"}},
		{"gpt-4o", splitGPT4o, "e\u0301", []string{"e", "\u0301"}}, // no \p{M} as llama.cpp runs it
		{"gpt-4o", splitGPT4o, "12345 x", []string{"123", "45", " x"}},
		{"gpt-4o", splitGPT4o, "x/\n/y !?\r\n", []string{"x", "/\n/", "y", " !?\r\n"}},
		{"gpt-4o", splitGPT4o, "  hi\n\n x ", []string{" ", " hi", "\n\n", " x", " "}},
	}
	for _, tt := range tests {
		if got := split(tt.stages, llamaSanitize(tt.in)); !slices.Equal(got, tt.want) {
			t.Errorf("%s(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// Every pattern tiles any text: the pieces are non-empty and join to it.
func FuzzLlamaCppPatterns(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = llamaSanitize(s)
		for _, stages := range [][]pattern{splitQwen2, splitQwen35, splitGPT2, splitStarCoder, splitGPT4o} {
			var sb strings.Builder
			splitWith(stages, s, func(p string) {
				if p == "" {
					t.Fatalf("empty piece in %q", s)
				}
				sb.WriteString(p)
			})
			if sb.String() != s {
				t.Fatalf("pieces of %q join to %q", s, sb.String())
			}
		}
	})
}

// Added tokens overlapping in the text: Hugging Face takes the leftmost,
// llama.cpp the longest first; rstrip eats the white space after.
func TestAddedTokenOrder(t *testing.T) {
	toks := []addedToken{{text: "ab", id: 1}, {text: "bcd", id: 2}, {text: "<r>", id: 3, rstrip: true}}
	s := newAddedSet(toks)
	all := func(int, int) bool { return true }
	if pos, n, id := s.find("xabcd", all); pos != 1 || n != 2 || id != 1 {
		t.Errorf("find: %d %d %d, want ab at 1", pos, n, id)
	}
	got := s.partition("xabcd <r>  y", all)
	want := []part{{0, 2, -1}, {2, 5, 2}, {5, 6, -1}, {6, 9, 3}, {11, 12, -1}}
	if !slices.Equal(got, want) {
		t.Errorf("partition = %v, want %v", got, want)
	}
}

// Streaming decode assembles byte-fallback pieces into characters and drops
// the same first space as Decode, for each kind of vocabulary.
func TestStreamDecodeKinds(t *testing.T) {
	for _, c := range []struct {
		name string
		tok  *Tokenizer
		text string
	}{
		{"spm", tinySPM(t, true), "ab é 😀 abc"},
		{"charbpe", tinyCharBPE(t), "a ab 😀\n\n\n"},
		{"wpm", tinyWPM(t, true), "Hello, world! unaffable"},
	} {
		ids := c.tok.Tokenize(c.text, true, true)
		want, err := c.tok.Decode(ids, true)
		if err != nil {
			t.Fatal(err)
		}
		d := c.tok.NewStreamDecoder(true)
		var sb strings.Builder
		for _, id := range ids {
			p, err := d.Push(id)
			if err != nil || !utf8.ValidString(p) {
				t.Fatalf("%s: Push(%d) = %q, %v", c.name, id, p, err)
			}
			sb.WriteString(p)
		}
		sb.WriteString(d.Flush())
		if sb.String() != want {
			t.Errorf("%s: stream %q, Decode %q", c.name, sb.String(), want)
		}
		if c.name != "wpm" && want != c.text {
			t.Errorf("%s: Decode %q, want %q", c.name, want, c.text)
		}
	}
}

// EncodeMarked keeps special tokens inside literal ranges as text, for
// every kind of vocabulary (llama.cpp's order of cutting them out included).
func TestEncodeMarkedKinds(t *testing.T) {
	tok := tinySPM(t, false)
	text := "<s>ab<s>"
	got := tok.EncodeMarked(text, [][2]int{{5, 8}}) // the second <s> is literal
	want := []int32{1, tok.Encode("ab<s>", false)[0]}
	want = append(want, tok.Encode("ab<s>", false)[1:]...)
	if !slices.Equal(got, want) {
		t.Errorf("EncodeMarked = %v, want %v", got, want)
	}
	if all := tok.EncodeMarked(text, nil); !slices.Equal(all, tok.Encode(text, true)) {
		t.Errorf("EncodeMarked without ranges = %v, Encode = %v", all, tok.Encode(text, true))
	}
}
