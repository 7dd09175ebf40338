package tokenizer

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLlamaUnicodeTables checks llamaCat, llamaLower and llamaNFDFirst
// against llama.cpp's own tables (src/unicode-data.cpp) on every code
// point: the categories (flags 0x01-0x80), White_Space, the lower-case map
// and the first code point of each decomposition.
func TestLlamaUnicodeTables(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(llamaCppDir(t), "src", "unicode-data.cpp"))
	if err != nil {
		t.Fatal(err)
	}
	section := func(name string) string {
		s := string(src)
		i := strings.Index(s, name+" = {")
		if i < 0 {
			t.Fatalf("unicode-data.cpp: no %s", name)
		}
		s = s[i:]
		return s[:strings.Index(s, "\n};")]
	}
	hex := func(s string) rune {
		v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		return rune(v)
	}
	num := regexp.MustCompile(`0x[0-9A-Fa-f]+`)
	const maxCP = 0x110000

	// Categories: {start, flags} ranges.
	want := make([]ucat, maxCP)
	ranges := regexp.MustCompile(`\{(0x[0-9A-F]+), (0x[0-9A-F]+)\}`).FindAllStringSubmatch(section("unicode_ranges_flags"), -1)
	for i, m := range ranges {
		lo, flags := hex(m[1]), ucat(hex(m[2]))
		hi := rune(maxCP)
		if i+1 < len(ranges) {
			hi = hex(ranges[i+1][1])
		}
		for r := lo; r < hi && r < maxCP; r++ {
			want[r] = flags
		}
	}
	for _, m := range num.FindAllString(section("unicode_set_whitespace"), -1) {
		want[hex(m)] |= catSpace
	}
	bad := 0
	for r := rune(0); r < maxCP; r++ {
		if got := llamaCat(r); got != want[r] {
			if bad++; bad <= 10 {
				t.Errorf("U+%04X: flags %#x, llama.cpp %#x", r, got, want[r])
			}
		}
	}

	lower := map[rune]rune{}
	pairs := num.FindAllString(section("unicode_map_lowercase"), -1)
	for i := 0; i+1 < len(pairs); i += 2 {
		lower[hex(pairs[i])] = hex(pairs[i+1])
	}
	for r := rune(0); r < maxCP; r++ {
		w, ok := lower[r]
		if !ok {
			w = r
		}
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		if got := llamaLower(r); got != w {
			if bad++; bad <= 10 {
				t.Errorf("lower(U+%04X) = U+%04X, llama.cpp U+%04X", r, got, w)
			}
		}
	}

	nfd := make([]rune, maxCP)
	for r := range nfd {
		nfd[r] = rune(r)
	}
	triples := num.FindAllString(section("unicode_ranges_nfd"), -1)
	for i := 0; i+2 < len(triples); i += 3 {
		for r := hex(triples[i]); r <= hex(triples[i+1]); r++ {
			nfd[r] = hex(triples[i+2])
		}
	}
	for r := rune(0); r < maxCP; r++ {
		if got := llamaNFDFirst(r); got != nfd[r] {
			if bad++; bad <= 10 {
				t.Errorf("nfd(U+%04X) = U+%04X, llama.cpp U+%04X", r, got, nfd[r])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d differences", bad)
	}
}

// llama.cpp's lenient UTF-8 decoding, and llamaSanitize's rewriting.
func TestLlamaSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"é😀", "é😀"},
		{"\xff", "\uFFFD"},
		{"a\x80b", "a\uFFFDb"},
		{"\xc3", "\uFFFD"},
		{"\xe2\x82", "\uFFFD\uFFFD"},
		{"\xf0\x9f\x98", "\uFFFD\uFFFD\uFFFD"},
		{"\xc0\x80", "\x00"},             // overlong NUL
		{"\xc1\xbf", "\x7f"},             // overlong DEL
		{"\xed\xa0\x80", "\xed\xa0\x80"}, // a surrogate keeps its bytes
		{"\xf4\x90\x80\x80", "\uFFFD"},   // past U+10FFFF
		{"\xf8\x88\x80\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD"},
	}
	for _, tt := range tests {
		if got := llamaSanitize(tt.in); got != tt.want {
			t.Errorf("llamaSanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for r, w := range map[string]rune{"\xed\xa0\x80": 0xD800, "\xc0\x80": 0, "é": 'é', "\x80": utf8.RuneError} {
		if got, _ := llamaDecodeRune(r, 0); got != w {
			t.Errorf("llamaDecodeRune(%q) = U+%04X, want U+%04X", r, got, w)
		}
	}
}
