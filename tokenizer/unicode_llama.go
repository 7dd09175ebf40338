package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// llama.cpp classifies characters with its own tables (src/unicode-data.cpp),
// generated from Unicode 15.1's UnicodeData.txt, where Hugging Face's
// tokenizers use Unicode 16.0. The vocabularies this package matches against
// llama.cpp (everything but the Llama-3 family, which follows Hugging Face)
// use the 15.1 classes below: Go's unicode package (15.0.0) plus the
// characters 15.1 added. TestLlamaUnicodeTables checks every code point
// against llama.cpp's tables when its source is present.

// ucat is a set of llama.cpp's per-character flags.
type ucat uint16

const (
	catUndefined ucat = 1 << iota // Cn: unassigned
	catNumber                     // \p{N}
	catLetter                     // \p{L}
	catSeparator                  // \p{Z}
	catMark                       // \p{M}
	catPunct                      // \p{P}
	catSymbol                     // \p{S}
	catControl                    // \p{C}: Cc, Cf, Co, Cs
	catSpace                      // \s: Unicode White_Space
)

// llamaCat returns llama.cpp's flags for r (Unicode 15.1 categories and
// White_Space). Code points past U+10FFFF are undefined.
func llamaCat(r rune) ucat {
	if r >= 0 && r < 0x80 {
		return asciiCat[r]
	}
	return llamaCatSlow(r)
}

// asciiCat is llamaCat for ASCII, filled once at package load.
var asciiCat = func() (t [0x80]ucat) {
	for r := range t {
		t[r] = llamaCatSlow(rune(r))
	}
	return t
}()

func llamaCatSlow(r rune) ucat {
	var c ucat
	switch {
	case r < 0 || r > unicode.MaxRune:
		return catUndefined
	case r >= 0xD800 && r <= 0xDFFF: // surrogates: only llama.cpp's lenient UTF-8 decoder makes them
		c = catControl
	case unicode.IsLetter(r) || r >= 0x2EBF0 && r <= 0x2EE5D: // 15.1: CJK Extension I
		c = catLetter
	case unicode.IsNumber(r):
		c = catNumber
	case unicode.IsMark(r):
		c = catMark
	case unicode.IsPunct(r):
		c = catPunct
	case unicode.IsSymbol(r) || r >= 0x2FFC && r <= 0x2FFF || r == 0x31EF: // 15.1: ideographic description characters
		c = catSymbol
	case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r):
		c = catControl
	case unicode.Is(unicode.Zs, r) || r == 0x2028 || r == 0x2029:
		c = catSeparator
	default:
		c = catUndefined
	}
	if isWhiteSpace(r) {
		c |= catSpace
	}
	return c
}

// isWhiteSpace reports the Unicode White_Space property (unchanged since
// Unicode 6), which is what \s means to both llama.cpp and Hugging Face.
func isWhiteSpace(r rune) bool {
	switch {
	case r == ' ' || r >= '\t' && r <= '\r':
		return true
	case r < 0x85:
		return false
	}
	return r == 0x85 || r == 0xA0 || r == 0x1680 || r >= 0x2000 && r <= 0x200A ||
		r == 0x2028 || r == 0x2029 || r == 0x202F || r == 0x205F || r == 0x3000
}

// llamaLower is llama.cpp's unicode_tolower: the simple lower-case mapping
// of UnicodeData.txt (Go's unicode.ToLower is the same mapping).
func llamaLower(r rune) rune { return unicode.ToLower(r) }

// llamaNFDFirst is llama.cpp's unicode_cpts_normalize_nfd for one code
// point: the first code point of its canonical decomposition ("é" → "e"),
// or r itself.
func llamaNFDFirst(r rune) rune {
	if r < nfdFirst[0][0] {
		return r
	}
	lo, hi := 0, len(nfdFirst)
	for lo < hi {
		m := (lo + hi) / 2
		switch e := nfdFirst[m]; {
		case r < e[0]:
			hi = m
		case r > e[1]:
			lo = m + 1
		default:
			return e[2]
		}
	}
	return r
}

// llamaDecodeRune decodes one code point at s[i:] the way llama.cpp's
// unicode_cpt_from_utf8 does, which is more lenient than Go: the lead byte
// alone fixes the length and only the continuation bytes' top bits are
// checked, so overlong forms and surrogates decode (to the value their bits
// spell) where Go sees invalid bytes. A byte that does not start a sequence
// it accepts gives U+FFFD and width 1, as llama.cpp's
// unicode_cpts_from_utf8 substitutes.
func llamaDecodeRune(s string, i int) (rune, int) {
	c := s[i]
	cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
	switch {
	case c < 0x80:
		return rune(c), 1
	case c&0x40 == 0: // a continuation byte cannot lead
		return utf8.RuneError, 1
	case c&0x20 == 0:
		if cont(1) {
			return rune(c&0x1F)<<6 | rune(s[i+1]&0x3F), 2
		}
	case c&0x10 == 0:
		if cont(1) && cont(2) {
			return rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3
		}
	case c&0x08 == 0:
		if cont(1) && cont(2) && cont(3) {
			return rune(c&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F), 4
		}
	}
	return utf8.RuneError, 1
}

// llamaSanitize rewrites text that is not valid UTF-8 the way llama.cpp sees
// it before splitting: it decodes with llamaDecodeRune (bytes it cannot
// decode become U+FFFD) and encodes the code points again (an overlong form
// becomes its short form; a surrogate keeps its three bytes; a value past
// U+10FFFF, where llama.cpp throws, becomes U+FFFD). Valid UTF-8 is returned
// unchanged.
func llamaSanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, w := llamaDecodeRune(s, i)
		i += w
		b = appendLlamaRune(b, r)
	}
	return string(b)
}

// appendLlamaRune encodes r as llama.cpp's unicode_cpt_to_utf8 does
// (surrogates included, which Go's encoder refuses).
func appendLlamaRune(b []byte, r rune) []byte {
	switch {
	case r >= 0xD800 && r <= 0xDFFF:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	case r > unicode.MaxRune:
		r = utf8.RuneError
	}
	return utf8.AppendRune(b, r)
}

// nextLlama decodes the character at s[i:] of text that went through
// llamaSanitize: valid UTF-8, or a surrogate's three bytes.
func nextLlama(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w == 1 {
		return llamaDecodeRune(s, i)
	}
	return r, w
}
