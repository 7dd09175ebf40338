package tokenizer

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// spaceMark is U+2581 (LOWER ONE EIGHTH BLOCK), which SentencePiece
// vocabularies, Gemma 4's and llama.cpp's WordPiece ones write for a space.
const spaceMark = "\u2581"

// buildText fills the tables of the vocabularies whose tokens are plain
// UTF-8 text (charBPE, sentencePiece, wordPiece): every token by its text,
// the byte tokens, the scores or merges, and what each token decodes to.
func (t *Tokenizer) buildText(s spec) ([]addedToken, error) {
	n := len(s.tokens)
	if s.byteTokens != nil && len(s.byteTokens) != n {
		return nil, fmt.Errorf("tokenizer: %d byte-token flags for %d tokens", len(s.byteTokens), n)
	}
	if s.kind == sentencePiece && s.scores != nil && len(s.scores) != n {
		return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(s.scores), n)
	}
	for id, v := range s.scores {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("tokenizer: score of token %d is %v, not a finite number", id, v)
		}
	}
	t.all = make(map[string]int32, n)
	t.scores = s.scores
	t.addSpacePrefix = s.spacePrefix
	t.lower, t.stripAccents = s.lower, s.stripAccents
	t.stripFirstSpace = s.kind == sentencePiece && s.spacePrefix || s.kind == wordPiece
	var added []addedToken
	seenLen := map[int]bool{}
	for id, tok := range s.tokens {
		if tok == "" {
			// llama.cpp renames empty tokens so that each text is unique.
			tok = "[EMPTY_" + strconv.Itoa(id) + "]"
			s.tokens[id] = tok
		}
		t.all[tok] = int32(id) // the last of duplicates wins, as in llama.cpp
		if s.kind == wordPiece && !seenLen[len(tok)] {
			seenLen[len(tok)] = true
			t.lengths = append(t.lengths, len(tok))
		}
		var piece string
		switch s.kinds[id] {
		case Normal:
			piece = tok
			if s.byteTokens != nil && s.byteTokens[id] {
				if b, ok := parseByteToken(tok); ok {
					piece = string([]byte{b})
				}
			} else {
				piece = strings.ReplaceAll(tok, spaceMark, " ")
			}
		case Special, UserDefined:
			piece = tok
			added = append(added, addedToken{text: tok, id: int32(id), special: s.kinds[id] == Special})
		case Unused:
			// llama.cpp renders unused tokens as nothing.
		}
		t.bytes = append(t.bytes, piece...)
		t.offs[id+1] = uint32(len(t.bytes))
	}
	slices.SortFunc(t.lengths, func(a, b int) int { return b - a })
	for b := range t.byteTok {
		t.byteTok[b] = -1
		if id, ok := t.all[fmt.Sprintf("<0x%02X>", b)]; ok {
			t.byteTok[b] = id
		} else if id, ok := t.all[string([]byte{byte(b)})]; ok && s.kind == sentencePiece {
			t.byteTok[b] = id // llama.cpp's fallback: the byte itself as a token
		}
	}
	switch s.kind {
	case charBPE:
		if err := t.buildCharMerges(s.merges); err != nil {
			return nil, err
		}
	case sentencePiece:
		if s.scores == nil {
			t.scores = make([]float32, n) // llama.cpp's default score
		}
		t.glue = spmGlue(s.tokens)
	}
	return added, nil
}

// parseByteToken reads a byte token's text, <0xXX>.
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[3:5], 16, 8)
	return byte(v), err == nil
}

// buildCharMerges ranks Gemma 4's merges by id pairs. Each side and the
// result must be a token.
func (t *Tokenizer) buildCharMerges(merges [][2]string) error {
	t.merges = make(map[uint64]uint64, len(merges))
	glue := map[string]bool{}
	for rank, m := range merges {
		l, okl := t.all[m[0]]
		r, okr := t.all[m[1]]
		if !okl || !okr {
			return fmt.Errorf("tokenizer: merge %d (%q %q) uses a token that is not in the vocabulary", rank, m[0], m[1])
		}
		merged, ok := t.all[m[0]+m[1]]
		if !ok {
			return fmt.Errorf("tokenizer: merge %d (%q %q): result %q is not in the vocabulary", rank, m[0], m[1], m[0]+m[1])
		}
		key := mergeKey(l, r)
		if _, dup := t.merges[key]; !dup {
			t.merges[key] = uint64(rank)<<32 | uint64(merged)
		}
		// A merge of "x" with "▁..." joins a chunk boundary before that ▁.
		if strings.HasPrefix(m[1], spaceMark) {
			if c, ok := lastRune(m[0]); ok && c != spaceMark {
				glue[c] = true
			}
		}
	}
	t.glue = glue
	return nil
}

// spmGlue returns the characters that some token has right before a ▁
// (other than ▁ itself): SentencePiece merges cannot join text across a ▁
// that follows any other character, so the text can be cut there and each
// chunk tokenized (and cached) alone. It returns nil, turning chunking off,
// if a token is not valid UTF-8.
func spmGlue(tokens []string) map[string]bool {
	glue := map[string]bool{}
	for _, tok := range tokens {
		if !utf8.ValidString(tok) {
			return nil
		}
		for i := 1; i < len(tok); {
			k := strings.Index(tok[i:], spaceMark)
			if k < 0 {
				break
			}
			if c, ok := lastRune(tok[:i+k]); ok && c != spaceMark {
				glue[c] = true
			}
			i += k + len(spaceMark)
		}
	}
	return glue
}

// lastRune returns the last character of s as a string.
func lastRune(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	_, w := utf8.DecodeLastRuneInString(s)
	return s[len(s)-w:], true
}
