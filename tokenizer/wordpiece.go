package tokenizer

import "unicode/utf8"

// WordPiece as llama.cpp runs it (llm_tokenizer_wpm), for BERT-style
// embedding models. The converter stores a word-initial piece "the" as
// "▁the" and a continuation "##ing" as plain "ing", so:
//
//  1. The text is normalized and cut into words (BERT's BasicTokenizer):
//     with strip_accents each character is replaced by the first character
//     of its canonical decomposition ("é" → "e") and combining marks are
//     dropped; white space ends a word; NUL, U+FFFD and control characters
//     are dropped; with lowercase each character is lower-cased;
//     punctuation, ASCII symbols and CJK ideographs are words of their own.
//  2. Each word, with ▁ in front, is covered from the left by the longest
//     tokens that match; if some position has no token, the whole word is
//     [UNK].

// appendWPM tokenizes one stretch of text without added tokens.
func (t *Tokenizer) appendWPM(dst []int32, seg string) []int32 {
	var buf [64]byte
	word := buf[:0]
	flush := func() {
		if len(word) == 0 {
			return
		}
		if ids, ok := t.cache.getBytes(word); ok {
			dst = append(dst, ids...)
		} else {
			w := string(word)
			n := len(dst)
			dst = t.wpmWord(dst, w)
			t.cache.put(w, dst[n:])
		}
		word = word[:0]
	}
	for i := 0; i < len(seg); {
		r, w := llamaDecodeRune(seg, i)
		i += w
		if t.stripAccents {
			r = llamaNFDFirst(r)
		}
		f := llamaCat(r)
		switch {
		case f&catSpace != 0:
			flush()
			continue
		case r == 0 || r == utf8.RuneError || f&catControl != 0 || r > utf8.MaxRune:
			continue
		case t.stripAccents && f&catMark != 0:
			continue
		}
		out := r
		if t.lower {
			out = llamaLower(r)
		}
		if f&catPunct != 0 || r < 0x7F && f&catSymbol != 0 || isCJK(r) {
			flush()
			word = utf8.AppendRune(word, out)
			flush()
			continue
		}
		word = utf8.AppendRune(word, out)
	}
	flush()
	return dst
}

// wpmWord covers ▁word by the longest tokens from the left, or gives [UNK].
func (t *Tokenizer) wpmWord(dst []int32, word string) []int32 {
	w := spaceMark + word
	n0 := len(dst)
	for i := 0; i < len(w); {
		found := false
		// The longest token first: only lengths some token has (llama.cpp
		// tries every length up to the longest token's; same result).
		for _, l := range t.lengths {
			if i+l > len(w) {
				continue
			}
			if id, ok := t.all[w[i:i+l]]; ok {
				dst = append(dst, id)
				i, found = i+l, true
				break
			}
		}
		if !found {
			dst = dst[:n0]
			break
		}
	}
	if len(dst) == n0 && t.unk >= 0 {
		dst = append(dst, t.unk)
	}
	return dst
}

// isCJK reports the CJK ideograph blocks BERT splits into single-character
// words (as Hugging Face and llama.cpp list them; note U+2B820–U+2B91F is
// left out, as in Hugging Face's Rust code).
func isCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF ||
		r >= 0x20000 && r <= 0x2A6DF || r >= 0x2A700 && r <= 0x2B73F ||
		r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}
