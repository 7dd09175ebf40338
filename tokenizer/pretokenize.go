package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Character classes of the Llama-3 split pattern.
const (
	clsOther   uint8 = iota // none of the below: punctuation, symbols, marks, controls
	clsLetter               // \p{L}
	clsNumber               // \p{N}
	clsSpace                // \s other than CR and LF
	clsNewline              // CR or LF (also \s)
)

// asciiClass classifies the 128 ASCII characters without a table lookup per
// Unicode range; it is a constant table, filled once at package load.
var asciiClass = func() (t [128]uint8) {
	for c := range t {
		switch {
		case c == '\r' || c == '\n':
			t[c] = clsNewline
		case c == ' ' || c >= '\t' && c <= '\f':
			t[c] = clsSpace
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			t[c] = clsLetter
		case c >= '0' && c <= '9':
			t[c] = clsNumber
		}
	}
	return t
}()

// classOf returns the class of r. Letters and numbers follow Unicode 16.0
// (Go's tables are 15.0; see unicode_tables.go), as the reference tokenizers
// do. White space is the Unicode White_Space property, unchanged since 6.x.
func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	switch {
	case unicode.IsLetter(r) || unicode.Is(letter16, r):
		return clsLetter
	case unicode.IsNumber(r) || unicode.Is(number16, r):
		return clsNumber
	case r == 0x85 || r == 0xA0 || r == 0x1680 || r >= 0x2000 && r <= 0x200A ||
		r == 0x2028 || r == 0x2029 || r == 0x202F || r == 0x205F || r == 0x3000:
		return clsSpace
	}
	return clsOther
}

// next decodes the character at s[i:], returning its class and byte width.
// An invalid UTF-8 byte counts as one "other" character of width 1, so the
// pieces still tile the input and the byte-level model still sees every byte.
func next(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w == 1 {
		return clsOther, 1
	}
	return classOf(r), w
}

// contraction reports the length of a match of (?i:'s|'t|'re|'ve|'m|'ll|'d)
// at s[i:] (s[i] is an apostrophe), or 0. Case-insensitivity is Unicode
// simple case folding, so U+017F (long s) matches s.
func contraction(s string, i int) int {
	j := i + 1
	if j >= len(s) {
		return 0
	}
	r, w := utf8.DecodeRuneInString(s[j:])
	switch fold(r) {
	case 's', 't', 'm', 'd':
		return 1 + w
	case 'r', 'v', 'l':
		want := rune('e')
		if fold(r) == 'l' {
			want = 'l'
		}
		if j+w < len(s) {
			r2, w2 := utf8.DecodeRuneInString(s[j+w:])
			if fold(r2) == want {
				return 1 + w + w2
			}
		}
	}
	return 0
}

// fold maps the characters that case-fold to one of the ASCII letters of the
// contraction suffixes to that lower-case letter; anything else maps to 0.
func fold(r rune) rune {
	switch r {
	case 'S', 's', 0x17F:
		return 's'
	case 'T', 't':
		return 't'
	case 'M', 'm':
		return 'm'
	case 'D', 'd':
		return 'd'
	case 'R', 'r':
		return 'r'
	case 'V', 'v':
		return 'v'
	case 'L', 'l':
		return 'l'
	case 'E', 'e':
		return 'e'
	}
	return 0
}

// splitPieces cuts text into the pieces of the Llama-3 split pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// without a regex engine: at each position the alternatives are tried in
// order and the first that matches wins. It calls emit with each piece (a
// substring of text, no copy).
func splitPieces(text string, emit func(piece string)) {
	for i := 0; i < len(text); {
		n := matchAt(text, i)
		emit(text[i : i+n])
		i += n
	}
}

// matchAt returns the byte length of the piece that starts at text[i].
func matchAt(s string, i int) int {
	c, w := next(s, i)
	// 1. contractions.
	if s[i] == '\'' {
		if n := contraction(s, i); n > 0 {
			return n
		}
	}
	// 2. [^\r\n\p{L}\p{N}]?\p{L}+
	if c == clsLetter {
		return w + letterRun(s, i+w)
	}
	if c == clsOther || c == clsSpace {
		if j := i + w; j < len(s) {
			if c2, w2 := next(s, j); c2 == clsLetter {
				return w + w2 + letterRun(s, j+w2)
			}
		}
	}
	// 3. \p{N}{1,3}
	if c == clsNumber {
		j := i + w
		for k := 1; k < 3 && j < len(s); k++ {
			c2, w2 := next(s, j)
			if c2 != clsNumber {
				break
			}
			j += w2
		}
		return j - i
	}
	// 4. ' '?[^\s\p{L}\p{N}]+[\r\n]*
	start, j := i, i
	if s[i] == ' ' && i+1 < len(s) {
		if c2, _ := next(s, i+1); c2 == clsOther {
			c, j = clsOther, i+1
		}
	}
	if c == clsOther {
		for j < len(s) {
			c2, w2 := next(s, j)
			if c2 != clsOther {
				break
			}
			j += w2
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j - start
	}
	// Whitespace: find the maximal run and the end of its last CR/LF.
	lastNL, runes, lastW := -1, 0, 0
	for j < len(s) {
		c2, w2 := next(s, j)
		if c2 != clsSpace && c2 != clsNewline {
			break
		}
		if c2 == clsNewline {
			lastNL = j + w2
		}
		j += w2
		lastW = w2
		runes++
	}
	// 5. \s*[\r\n]+
	if lastNL >= 0 {
		return lastNL - i
	}
	// 6. \s+(?!\S): whole run at the end of the text, else all but its last char.
	if j == len(s) {
		return j - i
	}
	if runes >= 2 {
		return j - lastW - i
	}
	// 7. \s+: a single whitespace character.
	return j - i
}

// letterRun returns the byte length of the run of letters at s[i:].
func letterRun(s string, i int) int {
	j := i
	for j < len(s) {
		c, w := next(s, j)
		if c != clsLetter {
			break
		}
		j += w
	}
	return j - i
}
