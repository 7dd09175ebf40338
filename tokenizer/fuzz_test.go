package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{"", "hello world", "  a\t\n\r\n b", "'S'll don’t", "x²½Ⅻ 1234567", "😀\u0301é", "<x><xy><x", "\xff\xfe\xc0\x80", "aaaaaaaaaaaaaaaa", "abcabc abcc"}

// Encode must tile any input: the ids decode to exactly the input bytes,
// and streaming decode equals whole decode.
func FuzzEncodeRoundTrip(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, true)
	}
	tok := tinyTokenizer(f, true)
	f.Fuzz(func(t *testing.T, s string, parseSpecial bool) {
		ids := tok.Encode(s, parseSpecial)
		b, err := tok.AppendBytes(nil, ids, false)
		if err != nil || string(b) != s {
			t.Fatalf("Encode(%q) = %v decodes to %q (%v)", s, ids, b, err)
		}
		want, _ := tok.Decode(ids, false)
		d := tok.NewStreamDecoder(false)
		var got strings.Builder
		for _, id := range ids {
			p, err := d.Push(id)
			if err != nil || !utf8.ValidString(p) {
				t.Fatalf("Push(%d) = %q, %v", id, p, err)
			}
			got.WriteString(p)
		}
		got.WriteString(d.Flush())
		if got.String() != want {
			t.Fatalf("stream %q != Decode %q", got.String(), want)
		}
		if utf8.ValidString(s) && want != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, want)
		}
	})
}

// The pieces of the split pattern are non-empty and tile the text, and
// merge agrees with mergeLong on every piece.
func FuzzSplitPieces(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	tok := tinyTokenizer(f, false)
	f.Fuzz(func(t *testing.T, s string) {
		var sb strings.Builder
		splitPieces(s, func(p string) {
			if p == "" {
				t.Fatalf("empty piece in %q", s)
			}
			sb.WriteString(p)
			if len(p) > 1 && len(p) <= longWord {
				if a, b := tok.merge(nil, p), tok.mergeLong(nil, p); !slices.Equal(a, b) {
					t.Fatalf("%q: merge %v, mergeLong %v", p, a, b)
				}
			}
		})
		if sb.String() != s {
			t.Fatalf("pieces of %q join to %q", s, sb.String())
		}
	})
}
