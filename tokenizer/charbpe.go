package tokenizer

// Gemma 4's tokenizer ("gemma4") as llama.cpp runs it: BPE over UTF-8
// characters rather than bytes. Spaces become ▁; the text is cut only into
// runs of newlines and runs of everything else (no word splitting), and
// merges run over each run by rank. A run of newlines that is itself a token
// is that token. A character that ends up alone and is not a token becomes
// its bytes' <0xXX> tokens.
//
// As for SentencePiece, no merge joins a ▁ to the character before it unless
// some merge has that character at the end of its left side, so each run is
// cut before such ▁s into chunks that are merged (and cached) alone.

// appendCharBPE tokenizes one stretch of text without added tokens.
func (t *Tokenizer) appendCharBPE(dst []int32, seg string) []int32 {
	seg = llamaSanitize(seg)
	buf := make([]byte, 0, len(seg)+len(seg)/4)
	for i := 0; i < len(seg); i++ {
		if seg[i] == ' ' {
			buf = append(buf, spaceMark...)
		} else {
			buf = append(buf, seg[i])
		}
	}
	text := string(buf)
	for i := 0; i < len(text); {
		nl := text[i] == '\n'
		j := i + 1
		for j < len(text) && (text[j] == '\n') == nl {
			j++
		}
		run := text[i:j]
		if id, ok := t.all[run]; ok && nl {
			dst = append(dst, id)
		} else {
			dst = t.eachChunk(dst, run, t.charChunk)
		}
		i = j
	}
	return dst
}

// charChunk merges the characters of one chunk. A character without a
// token is the symbol -2-offset, which never merges and becomes byte tokens.
func (t *Tokenizer) charChunk(dst []int32, text string) []int32 {
	var buf [longWord]int32
	sym := buf[:0]
	if len(text) > longWord {
		sym = make([]int32, 0, len(text))
	}
	for i := 0; i < len(text); {
		w := min(symLen(text[i]), len(text)-i)
		if id, ok := t.all[text[i:i+w]]; ok {
			sym = append(sym, id)
		} else {
			sym = append(sym, int32(-2-i))
		}
		i += w
	}
	n := len(dst)
	dst = t.mergeSyms(dst, sym)
	// Expand the characters without a token into byte tokens.
	for k := n; k < len(dst); k++ {
		if dst[k] >= 0 {
			continue
		}
		at := int(-2 - dst[k])
		w := min(symLen(text[at]), len(text)-at)
		var bytes []int32
		for _, c := range []byte(text[at : at+w]) {
			if b := t.byteTok[c]; b >= 0 {
				bytes = append(bytes, b) // llama.cpp drops a byte without a token
			}
		}
		dst = append(dst[:k], append(bytes, dst[k+1:]...)...)
		k += len(bytes) - 1
	}
	return dst
}
