package tokenizer

import "unicode/utf8"

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
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] | 0x20 {
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
