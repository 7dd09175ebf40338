package tokenizer

import (
	"cmp"
	"slices"
	"sort"
)

// addedToken is a token matched in raw text before pre-tokenization.
type addedToken struct {
	text    string
	id      int32
	special bool
	// lstrip and rstrip: the white space before (after) the token is
	// dropped with it (llama.cpp sets them for a few models by name).
	lstrip, rstrip bool
	prio           int32 // rank in llama.cpp's order: longest first, then by id
}

// addedSet finds added tokens in text, in one of two orders:
//
//   - find (Hugging Face): at the leftmost position where an active token
//     starts, the longest one; then on from its end.
//   - partition (llama.cpp): the tokens one at a time, longest first, each
//     cut out wherever it occurs in the text that no longer token has
//     claimed.
//
// The two differ only when active tokens overlap in the text.
type addedSet struct {
	tokens  []addedToken
	byText  map[string]addedToken
	lengths []int // distinct token lengths, longest first
	first   [256]bool
}

func newAddedSet(tokens []addedToken) addedSet {
	slices.SortStableFunc(tokens, func(a, b addedToken) int {
		if c := cmp.Compare(len(b.text), len(a.text)); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for i := range tokens {
		tokens[i].prio = int32(i)
	}
	s := addedSet{tokens: tokens, byText: make(map[string]addedToken, len(tokens))}
	seen := map[int]bool{}
	for _, a := range tokens {
		if _, dup := s.byText[a.text]; dup {
			continue
		}
		s.byText[a.text] = a
		s.first[a.text[0]] = true
		if !seen[len(a.text)] {
			seen[len(a.text)] = true
			s.lengths = append(s.lengths, len(a.text))
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(s.lengths)))
	return s
}

// find returns the byte position, length and id of the first active added
// token in text, or (len(text), 0, -1) when there is none. A special token
// at [i, i+l) is active if special(i, l) says so; user-defined ones always
// are.
func (s *addedSet) find(text string, special func(i, l int) bool) (pos, n int, id int32) {
	if len(s.tokens) == 0 {
		return len(text), 0, -1
	}
	for i := 0; i < len(text); i++ {
		if !s.first[text[i]] {
			continue
		}
		for _, l := range s.lengths {
			if i+l > len(text) {
				continue
			}
			if a, ok := s.byText[text[i:i+l]]; ok && (!a.special || special(i, l)) {
				return i, l, a.id
			}
		}
	}
	return len(text), 0, -1
}

// part is a piece of text after added tokens are cut out: text[start:end],
// and the token's id, or -1 for text to tokenize.
type part struct {
	start, end int
	id         int32
}

// partition cuts the active added tokens out of text in llama.cpp's order
// (tokenizer_st_partition): every occurrence of the longest token in the
// text first, left to right and without overlap, then the next token in
// what is left between them, and so on. A token with rstrip (lstrip) also
// removes the ASCII white space after (before) it, up to the next token.
// It returns the parts in text order; dropped white space is in none.
func (s *addedSet) partition(text string, special func(i, l int) bool) []part {
	type cand struct {
		prio, pos, l int
		id           int32
		lstrip       bool
		rstrip       bool
	}
	var cands []cand
	if len(s.tokens) > 0 {
		for i := 0; i < len(text); i++ {
			if !s.first[text[i]] {
				continue
			}
			for _, l := range s.lengths {
				if i+l > len(text) {
					continue
				}
				if a, ok := s.byText[text[i:i+l]]; ok && (!a.special || special(i, l)) {
					cands = append(cands, cand{int(a.prio), i, l, a.id, a.lstrip, a.rstrip})
				}
			}
		}
	}
	if len(cands) == 0 {
		if text == "" {
			return nil
		}
		return []part{{0, len(text), -1}}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(a.prio, b.prio); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	const free, claimed, dropped = 0, 1, 2
	state := make([]uint8, len(text))
	var got []part
next:
	for _, c := range cands {
		for _, st := range state[c.pos : c.pos+c.l] {
			if st != free {
				continue next
			}
		}
		for k := c.pos; k < c.pos+c.l; k++ {
			state[k] = claimed
		}
		got = append(got, part{c.pos, c.pos + c.l, c.id})
		if c.rstrip {
			for k := c.pos + c.l; k < len(text) && state[k] == free && isCSpace(text[k]); k++ {
				state[k] = dropped
			}
		}
		if c.lstrip {
			for k := c.pos - 1; k >= 0 && state[k] == free && isCSpace(text[k]); k-- {
				state[k] = dropped
			}
		}
	}
	slices.SortFunc(got, func(a, b part) int { return cmp.Compare(a.start, b.start) })
	var parts []part
	at := 0
	flush := func(end int) {
		for at < end {
			for at < end && state[at] != free {
				at++
			}
			k := at
			for k < end && state[k] == free {
				k++
			}
			if k > at {
				parts = append(parts, part{at, k, -1})
			}
			at = k
		}
	}
	for _, g := range got {
		flush(g.start)
		parts = append(parts, g)
		at = g.end
	}
	flush(len(text))
	return parts
}

// isCSpace is C's isspace: the ASCII white space llama.cpp strips.
func isCSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
