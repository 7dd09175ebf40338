package tokenizer

import (
	"math"
	"strings"
)

// SentencePiece as llama.cpp runs it (llm_tokenizer_spm): the text's spaces
// become ▁ (with one more ▁ in front when add_space_prefix is set and the
// text starts the input or follows an added token), the text is cut into
// characters by their UTF-8 lead bytes, and then, for as long as possible,
// the adjacent pair whose concatenation is a token with the highest score
// (the leftmost pair on a tie) is joined. Every token counts, whatever its
// type. A character left that is not a token becomes its bytes' <0xXX>
// tokens (byte fallback).
//
// Joining never reaches across a ▁ that follows a character no token has
// before a ▁ (spmGlue), so the text is cut there into chunks, each
// tokenized alone and cached; the result is the same as for the whole text.

// appendSPM tokenizes one stretch of text without added tokens.
func (t *Tokenizer) appendSPM(dst []int32, seg string, prefix bool) []int32 {
	var sb strings.Builder
	sb.Grow(len(seg) + len(seg)/4 + 3)
	if prefix {
		sb.WriteString(spaceMark)
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] == ' ' {
			sb.WriteString(spaceMark)
		} else {
			sb.WriteByte(seg[i])
		}
	}
	text := sb.String()
	return t.eachChunk(dst, text, t.spmChunk)
}

// symLen is llama.cpp's unicode_len_utf8: the length of the character that
// lead byte c starts (1 for a continuation byte).
func symLen(c byte) int {
	switch {
	case c < 0xC0:
		return 1
	case c < 0xE0:
		return 2
	case c < 0xF0:
		return 3
	}
	return 4
}

// eachChunk cuts text before every ▁ that starts a character and follows
// a character outside t.glue (and not ▁), and appends the ids of each
// chunk, through the word cache.
func (t *Tokenizer) eachChunk(dst []int32, text string, chunk func([]int32, string) []int32) []int32 {
	if t.glue == nil {
		return chunk(dst, text)
	}
	start, prev := 0, -1 // chunk start; start of the previous character
	for i := 0; i < len(text); {
		w := min(symLen(text[i]), len(text)-i)
		if prev >= 0 && strings.HasPrefix(text[i:], spaceMark) {
			if p := text[prev:i]; p != spaceMark && !t.glue[p] {
				dst = t.cachedChunk(dst, text[start:i], chunk)
				start = i
			}
		}
		prev = i
		i += w
	}
	return t.cachedChunk(dst, text[start:], chunk)
}

func (t *Tokenizer) cachedChunk(dst []int32, c string, chunk func([]int32, string) []int32) []int32 {
	if ids, ok := t.cache.get(c); ok {
		return append(dst, ids...)
	}
	n := len(dst)
	dst = chunk(dst, c)
	t.cache.put(c, dst[n:])
	return dst
}

// spmChunk runs SentencePiece over one chunk.
func (t *Tokenizer) spmChunk(dst []int32, text string) []int32 {
	// Symbols: byte ranges [start[k], end[k]) with their token, or -1.
	var startBuf, endBuf [longWord]int32
	var idBuf, pairBuf [longWord]int32
	var scoreBuf [longWord]float32
	n := 0
	for i := 0; i < len(text); n++ {
		i += min(symLen(text[i]), len(text)-i)
	}
	if n > longWord {
		return t.spmChunkLong(dst, text)
	}
	start, end, id := startBuf[:n], endBuf[:n], idBuf[:n]
	for i, k := 0, 0; i < len(text); k++ {
		w := min(symLen(text[i]), len(text)-i)
		start[k], end[k], id[k] = int32(i), int32(i+w), -1
		if tok, ok := t.all[text[i:i+w]]; ok {
			id[k] = tok
		}
		i += w
	}
	pair, score := pairBuf[:max(n-1, 0)], scoreBuf[:max(n-1, 0)]
	look := func(k int) {
		pair[k], score[k] = -1, 0
		if tok, ok := t.all[text[start[k]:end[k+1]]]; ok {
			pair[k], score[k] = tok, t.scores[tok]
		}
	}
	for k := range pair {
		look(k)
	}
	for n > 1 {
		at, best := -1, float32(math.Inf(-1))
		for k, p := range pair[:n-1] {
			if p >= 0 && (at < 0 || score[k] > best) {
				at, best = k, score[k]
			}
		}
		if at < 0 {
			break
		}
		end[at], id[at] = end[at+1], pair[at]
		copy(start[at+1:], start[at+2:n])
		copy(end[at+1:], end[at+2:n])
		copy(id[at+1:], id[at+2:n])
		copy(pair[at:], pair[at+1:n-1])
		copy(score[at:], score[at+1:n-1])
		n--
		if at > 0 {
			look(at - 1)
		}
		if at < n-1 {
			look(at)
		}
	}
	for k := range n {
		dst = t.appendSymbol(dst, id[k], text[start[k]:end[k]])
	}
	return dst
}

// appendSymbol appends a final symbol: its token, or the byte tokens of its
// bytes (the unknown token for a byte without one; llama.cpp fails there).
func (t *Tokenizer) appendSymbol(dst []int32, id int32, text string) []int32 {
	if id >= 0 {
		return append(dst, id)
	}
	for i := 0; i < len(text); i++ {
		if b := t.byteTok[text[i]]; b >= 0 {
			dst = append(dst, b)
		} else if t.unk >= 0 {
			dst = append(dst, t.unk)
		}
	}
	return dst
}

// spmChunkLong is spmChunk for long chunks: a linked list of symbols and a
// heap of candidate pairs, best score first, then leftmost. A pair is stale
// once either side has changed, which llama.cpp detects by the sides'
// lengths no longer adding up to the pair's.
func (t *Tokenizer) spmChunkLong(dst []int32, text string) []int32 {
	type sym struct {
		start, n   int32
		prev, next int32
		id         int32
	}
	if text == "" {
		return dst
	}
	var syms []sym
	for i := 0; i < len(text); {
		w := min(symLen(text[i]), len(text)-i)
		k := int32(len(syms))
		s := sym{start: int32(i), n: int32(w), prev: k - 1, next: k + 1, id: -1}
		if tok, ok := t.all[text[i:i+w]]; ok {
			s.id = tok
		}
		syms = append(syms, s)
		i += w
	}
	syms[len(syms)-1].next = -1
	h := spmHeap{}
	push := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		a, b := syms[l], syms[r]
		if tok, ok := t.all[text[a.start:b.start+b.n]]; ok {
			h.push(spmPair{score: t.scores[tok], left: l, right: r, size: a.n + b.n, id: tok})
		}
	}
	for k := int32(1); k < int32(len(syms)); k++ {
		push(k-1, k)
	}
	for h.len() > 0 {
		p := h.pop()
		l, r := &syms[p.left], &syms[p.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != p.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.id = p.id
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = p.left
		}
		push(l.prev, p.left)
		push(p.left, l.next)
	}
	for k := int32(0); k >= 0; k = syms[k].next {
		s := syms[k]
		dst = t.appendSymbol(dst, s.id, text[s.start:s.start+s.n])
	}
	return dst
}

type spmPair struct {
	score       float32
	left, right int32
	size        int32
	id          int32
}

// spmHeap is a binary heap of pairs: highest score first, then leftmost.
type spmHeap struct{ a []spmPair }

func (h *spmHeap) len() int { return len(h.a) }

func spmBefore(x, y spmPair) bool {
	return x.score > y.score || x.score == y.score && x.left < y.left
}

func (h *spmHeap) push(p spmPair) {
	h.a = append(h.a, p)
	for i := len(h.a) - 1; i > 0; {
		j := (i - 1) / 2
		if !spmBefore(h.a[i], h.a[j]) {
			break
		}
		h.a[i], h.a[j] = h.a[j], h.a[i]
		i = j
	}
}

func (h *spmHeap) pop() spmPair {
	top := h.a[0]
	last := len(h.a) - 1
	h.a[0] = h.a[last]
	h.a = h.a[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < last && spmBefore(h.a[l], h.a[m]) {
			m = l
		}
		if r := l + 1; r < last && spmBefore(h.a[r], h.a[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.a[i], h.a[m] = h.a[m], h.a[i]
		i = m
	}
	return top
}
