package tokenizer

// The gpt-4o pre-tokenizer (OpenAI's o200k pattern: Phi-4-mini, Llama 4,
// MiniMax-M2) as llama.cpp runs it.
//
// The model's tokenizer.json has the pattern
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// (one line in the file). llama.cpp (llama-vocab.cpp) replaces it with
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?
//	|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// and has no hand-written code for it: std::regex (ECMAScript, first
// alternative that matches, greedy with backtracking) runs it on a copy of
// the text in which every character outside ASCII is one byte for its
// class (src/unicode.cpp). What that means for the splits:
//
//   - "Upper case" is a letter that is not a-z, "lower case" one that is
//     not A-Z: every letter outside ASCII is both (À, é, 東), and there is
//     no title or modifier case.
//   - \p{M} is gone: a combining mark is not a letter (e + U+0301 is two
//     pieces), it is one of the characters [^\s\p{L}\p{N}] takes.
//   - Contractions follow a word only, in ASCII case ('S, 'll, not 'ſ);
//     a lone 's is the apostrophe before the letters, as any punctuation.
//
// The two word alternatives, with backtracking, come to this (matchGPT4o's
// word): take the longest run of upper-case letters; if an a-z letter
// follows, the word goes on over the lower-case letters after it;
// otherwise, if the run holds a letter outside ASCII, the word ends just
// after the last one (backtracking gave the letters after it back: "ÀBC"
// is "À" then "BC", where Hugging Face keeps "ÀBC"); otherwise the word is
// the run of A-Z. An optional contraction ends it.

// splitGPT4o is the gpt-4o pre-tokenizer: one pattern.
var splitGPT4o = []pattern{matchGPT4o}

// matchGPT4o returns the length of the piece at s[i:] under llama.cpp's
// gpt-4o pattern (above). s has been through llamaSanitize.
func matchGPT4o(s string, i int) int {
	c, w := classL(s, i, false)
	// 1 and 2: [^\r\n\p{L}\p{N}]? and a word.
	j := i
	if c == clsSpace || c == clsOther {
		j = i + w
	}
	if j < len(s) {
		if c2, _ := classL(s, j, false); c2 == clsLetter {
			return gpt4oWord(s, j) - i
		}
	}
	// 3. \p{N}{1,3}
	if c == clsNumber {
		j := i + w
		for k := 1; k < 3 && j < len(s); k++ {
			c2, w2 := classL(s, j, false)
			if c2 != clsNumber {
				break
			}
			j += w2
		}
		return j - i
	}
	// 4. ' '?[^\s\p{L}\p{N}]+[\r\n/]*
	j = i
	if s[i] == ' ' && i+1 < len(s) {
		if c2, _ := classL(s, i+1, false); c2 == clsOther {
			c, j = clsOther, i+1
		}
	}
	if c == clsOther {
		for j < len(s) {
			c2, w2 := classL(s, j, false)
			if c2 != clsOther {
				break
			}
			j += w2
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
			j++
		}
		return j - i
	}
	// 5, 6, 7: white space.
	return whitespaceRun(s, i, i, func(s string, j int) (uint8, int) { return classL(s, j, false) })
}

// gpt4oWord returns the end of the word that starts with the letter at
// s[j], its contraction included.
func gpt4oWord(s string, j int) int {
	// The longest run of "upper case": A-Z and letters outside ASCII.
	e, lastWide := j, -1
	for e < len(s) {
		if b := s[e]; b >= 'A' && b <= 'Z' {
			e++
			continue
		} else if b < 0x80 {
			break
		}
		c, w := classL(s, e, false)
		if c != clsLetter {
			break
		}
		e += w
		lastWide = e
	}
	end := e
	switch {
	case e < len(s) && s[e] >= 'a' && s[e] <= 'z':
		// Lower case follows: a-z and letters outside ASCII.
		for end < len(s) {
			if b := s[end]; b >= 'a' && b <= 'z' {
				end++
				continue
			} else if b < 0x80 {
				break
			}
			c, w := classL(s, end, false)
			if c != clsLetter {
				break
			}
			end += w
		}
	case lastWide >= 0:
		// The first alternative backtracks to its last "lower-case" letter.
		end = lastWide
	}
	return end + contractionASCII(s, end)
}
