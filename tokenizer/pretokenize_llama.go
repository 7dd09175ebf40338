package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// The split patterns below are the ones llama.cpp implements by hand in
// src/unicode.cpp (unicode_regex_split_custom_*), written again from their
// regexes and llama.cpp's documented behaviour, with llama.cpp's Unicode
// 15.1 classes (unicode_llama.go). Each is a pattern: given the region s
// being split and a position i, it returns the byte length of the piece
// that starts at i. A pre-tokenizer is a list of patterns applied in turn,
// each splitting the pieces of the one before, as llama.cpp applies a
// vocabulary's regexes one after the other.

// pattern returns the byte length (> 0) of the piece of s that starts at i.
type pattern func(s string, i int) int

// classL returns the split class of the character at s[i:] under llama.cpp's
// tables, and its width. With marks, \p{M} counts as a letter (Qwen3.5's
// pattern). s has been through llamaSanitize.
func classL(s string, i int, marks bool) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := nextLlama(s, i)
	f := llamaCat(r)
	switch {
	case f&catSpace != 0:
		return clsSpace, w // no CR or LF outside ASCII
	case f&catLetter != 0 || marks && f&catMark != 0:
		return clsLetter, w
	case f&catNumber != 0:
		return clsNumber, w
	}
	return clsOther, w
}

// matchQwen2 is the Qwen2 split pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// which is Llama 3's with single digits. llama.cpp folds the contractions'
// case in ASCII only (U+017F long s is not an s here, unlike Hugging Face).
func matchQwen2(s string, i int) int { return matchLlamaCpp(s, i, 1, false) }

// matchQwen35 is Qwen3.5's pattern: Qwen2's with combining marks (\p{M})
// inside letter runs and outside punctuation runs.
func matchQwen35(s string, i int) int { return matchLlamaCpp(s, i, 1, true) }

// matchLlamaCpp is the Llama-3-shaped pattern as llama.cpp runs it, with
// numbers in runs of at most digits.
func matchLlamaCpp(s string, i, digits int, marks bool) int {
	c, w := classL(s, i, marks)
	// 1. contractions, ASCII case only.
	if n := contractionASCII(s, i); n > 0 {
		return n
	}
	// 2. [^\r\n\p{L}\p{N}]?\p{L}+
	if c != clsNewline && c != clsNumber {
		j := i + w
		if c != clsLetter {
			if j >= len(s) {
				goto numbers
			}
			c2, w2 := classL(s, j, marks)
			if c2 != clsLetter {
				goto numbers
			}
			j += w2
		}
		for j < len(s) {
			c2, w2 := classL(s, j, marks)
			if c2 != clsLetter {
				break
			}
			j += w2
		}
		return j - i
	}
numbers:
	// 3. \p{N}{1,digits}
	if c == clsNumber {
		j := i + w
		for k := 1; k < digits && j < len(s); k++ {
			c2, w2 := classL(s, j, marks)
			if c2 != clsNumber {
				break
			}
			j += w2
		}
		return j - i
	}
	// 4. ' '?[^\s\p{L}\p{N}]+[\r\n]*
	start, j := i, i
	if s[i] == ' ' {
		if i+1 >= len(s) {
			return 1
		}
		if c2, _ := classL(s, i+1, marks); c2 == clsOther {
			c, j = clsOther, i+1
		}
	}
	if c == clsOther {
		for j < len(s) {
			c2, w2 := classL(s, j, marks)
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
	return whitespaceRun(s, i, j, func(s string, j int) (uint8, int) { return classL(s, j, marks) })
}

// contractionASCII returns the length of a match of
// '[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD] at s[i:], or 0:
// (?i:'s|'t|'re|'ve|'m|'ll|'d) as llama.cpp rewrites it, with the case
// folded in ASCII only.
func contractionASCII(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	switch s[i+1] | 0x20 { // only 'X' and 'x' fold to 'x'
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v', 'l':
		if i+2 < len(s) {
			want := byte('e')
			if s[i+1]|0x20 == 'l' {
				want = 'l'
			}
			if s[i+2]|0x20 == want {
				return 3
			}
		}
	}
	return 0
}

// whitespaceRun ends a Llama-3-shaped pattern at a run of white space that
// starts at s[i] (j == i): \s*[\r\n]+ up to the last CR or LF of the run,
// else \s+(?!\S) (all but the last character unless the run ends the text),
// else \s+.
func whitespaceRun(s string, i, j int, class func(string, int) (uint8, int)) int {
	lastNL, runes, lastW := -1, 0, 0
	for j < len(s) {
		c2, w2 := class(s, j)
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
	switch {
	case lastNL >= 0:
		return lastNL - i
	case runes == 0: // no alternative matches: one character alone
		_, w := class(s, i)
		return w
	case j == len(s) || runes == 1:
		return j - i
	}
	return j - lastW - i
}

// matchGPT2 is GPT-2's split pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// (contractions in lower case only; an optional space before a run of
// letters, of numbers or of other characters).
func matchGPT2(s string, i int) int {
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return 3
			}
		}
	}
	c, w := classL(s, i, false)
	j := i + w
	if s[i] == ' ' && j < len(s) {
		if c2, w2 := classL(s, j, false); c2 != clsSpace && c2 != clsNewline {
			c, j = c2, j+w2 // the space and the first character of the run
		}
	}
	if c == clsLetter || c == clsNumber || c == clsOther {
		for j < len(s) {
			c2, w2 := classL(s, j, false)
			if c2 != c {
				break
			}
			j += w2
		}
		return j - i
	}
	// White space: \s+(?!\S) leaves the last character for the next piece
	// unless the run ends the text; a lone character is \s+.
	runes, lastW, k := 0, 0, i
	for k < len(s) {
		c2, w2 := classL(s, k, false)
		if c2 != clsSpace && c2 != clsNewline {
			break
		}
		k += w2
		lastW = w2
		runes++
	}
	if runes > 1 && k < len(s) {
		return k - lastW - i
	}
	return k - i
}

// matchDigit isolates each \p{N} character; the text between them is one
// piece (llama.cpp runs this regex with std::regex, keeping the gaps).
func matchDigit(s string, i int) int {
	c, w := classL(s, i, false)
	if c == clsNumber {
		return w
	}
	j := i + w
	for j < len(s) {
		c2, w2 := classL(s, j, false)
		if c2 == clsNumber {
			break
		}
		j += w2
	}
	return j - i
}

// splitWith cuts s by the patterns in turn (each splits the pieces of the
// one before) and calls emit with every final piece, in order.
func splitWith(stages []pattern, s string, emit func(string)) {
	first := stages[0]
	for i := 0; i < len(s); {
		n := first(s, i)
		if len(stages) == 1 {
			emit(s[i : i+n])
		} else {
			splitWith(stages[1:], s[i:i+n], emit)
		}
		i += n
	}
}

// Some pre-tokenizers are lists of plain regexes that llama.cpp runs with
// std::regex (ECMAScript): on a copy of the text where each character
// outside ASCII is collapsed to one byte for its category when the regex
// uses \p{...}, or on the code points otherwise, in both cases with white
// space outside ASCII turned into \v. Each regex cuts every piece into its
// matches and the text between them. The regexes used here are all of the
// shape \s?[C]+, [C]+ or [C]{k}, so a match is found by scanning.

// runPattern matches \s?[C]+ (optSpace), [C]+, or exactly n characters of
// C (n > 0), where in reports whether a character is in C: the piece at i is
// the match that starts there, or the text up to the next match.
func runPattern(optSpace bool, n int, in func(rune) bool) pattern {
	// matchAt returns the length of the match that starts at s[i], or 0.
	matchAt := func(s string, i int) int {
		j := i
		if n > 0 { // [C]{n}: all n characters present
			for range n {
				if j >= len(s) {
					return 0
				}
				r, w := nextLlama(s, j)
				if !in(r) {
					return 0
				}
				j += w
			}
			return j - i
		}
		// \s?[C]+: the space only if a character of C follows it.
		if r, w := nextLlama(s, j); optSpace && isWhiteSpace(r) && j+w < len(s) {
			if r2, _ := nextLlama(s, j+w); in(r2) {
				j += w
			}
		}
		k := j
		for k < len(s) {
			r, w := nextLlama(s, k)
			if !in(r) {
				break
			}
			k += w
		}
		if k == j {
			return 0
		}
		return k - i
	}
	return func(s string, i int) int {
		if m := matchAt(s, i); m > 0 {
			return m
		}
		j := i
		for j < len(s) {
			_, w := nextLlama(s, j)
			j += w
			if j < len(s) && matchAt(s, j) > 0 {
				break
			}
		}
		return j - i
	}
}

// matchTrailingSpace is \s+$: the white space that ends the piece is a
// piece of its own.
func matchTrailingSpace(s string, i int) int {
	j := len(s)
	for j > i {
		r, w := utf8.DecodeLastRuneInString(s[:j])
		if r == utf8.RuneError && w <= 1 || !isWhiteSpace(r) {
			break
		}
		j -= w
	}
	if j == i {
		return len(s) - i // all white space from here
	}
	return j - i
}

// rangeSet parses a regex character class body such as "A-Za-z\u00B5" into
// a membership test. White space outside ASCII never matches: llama.cpp
// turns it into \v first.
func rangeSet(class string) func(rune) bool {
	var ranges [][2]rune
	rs := []rune(class)
	for i := 0; i < len(rs); i++ {
		if i+2 < len(rs) && rs[i+1] == '-' {
			ranges = append(ranges, [2]rune{rs[i], rs[i+2]})
			i += 2
		} else {
			ranges = append(ranges, [2]rune{rs[i], rs[i]})
		}
	}
	return func(r rune) bool {
		if r > 0x7F && isWhiteSpace(r) {
			return false
		}
		for _, g := range ranges {
			if r >= g[0] && r <= g[1] {
				return true
			}
		}
		return false
	}
}

// Character classes of the collapsed text: \p{L}, \p{N}, \p{P} (ASCII
// letters, digits and punctuation, and the other characters of the
// category).
func inLetter(r rune) bool { return llamaCat(r)&catLetter != 0 }
func inNumber(r rune) bool { return llamaCat(r)&catNumber != 0 }
func inPunct(r rune) bool  { return llamaCat(r)&catPunct != 0 }
func isCRLF(r rune) bool   { return r == '\r' || r == '\n' }

var (
	// Falcon: [\p{P}\$\+<=>\^~\|`]+, GPT-2's pattern, [0-9][0-9][0-9].
	splitFalcon = []pattern{
		runPattern(false, 0, func(r rune) bool { return inPunct(r) || strings.ContainsRune("$+<=>^~|`", r) }),
		matchGPT2,
		runPattern(false, 3, func(r rune) bool { return r >= '0' && r <= '9' }),
	}
	// llama.cpp's default (a "gpt2" vocabulary without tokenizer.ggml.pre):
	// [\p{P}\$\+<=>\^~\|]+, GPT-2's pattern, \p{N}+, [0-9][0-9][0-9].
	splitDefault = []pattern{
		runPattern(false, 0, func(r rune) bool { return inPunct(r) || strings.ContainsRune("$+<=>^~|", r) }),
		matchGPT2,
		runPattern(false, 0, inNumber),
		runPattern(false, 3, func(r rune) bool { return r >= '0' && r <= '9' }),
	}
	// DeepSeek Coder: [\r\n], \s?\p{L}+, \s?\p{P}+, [一-龥ࠀ-一가-퟿]+, \p{N}.
	splitDeepSeekCoder = []pattern{
		runPattern(false, 1, isCRLF),
		runPattern(true, 0, inLetter),
		runPattern(true, 0, inPunct),
		runPattern(false, 0, rangeSet("\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF")),
		runPattern(false, 1, inNumber),
	}
	// DeepSeek LLM: [\r\n], \s?[Latin, Greek, Cyrillic, ... letters]+,
	// \s?[ASCII and full-width punctuation]+, \s+$, [一-龥ࠀ-一가-퟿]+, \p{N}+.
	splitDeepSeekLLM = []pattern{
		runPattern(false, 1, isCRLF),
		runPattern(true, 0, rangeSet("A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF"+
			"\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481"+
			"\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B"+
			"\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D"+
			"\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC"+
			"\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D"+
			"\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE"+
			"\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06"+
			"\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB"+
			"\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943")),
		runPattern(true, 0, rangeSet("!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002")),
		matchTrailingSpace,
		runPattern(false, 0, rangeSet("\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF")),
		runPattern(false, 0, inNumber),
	}
)
