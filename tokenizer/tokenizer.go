package tokenizer

import (
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Kind tells how a token is treated when text is encoded and decoded.
type Kind uint8

const (
	// Normal tokens come out of byte-level BPE; their text is stored in the
	// byte-level alphabet.
	Normal Kind = iota
	// Special added tokens (GGUF type CONTROL, tokenizer.json "special":
	// true) are matched in text only when special parsing is on, and are
	// dropped by decoding with skipSpecial.
	Special
	// UserDefined added tokens (GGUF type USER_DEFINED, tokenizer.json
	// "special": false, such as SmolLM3's <think>) are always matched in
	// text and always decoded.
	UserDefined
	// Unused tokens are never produced by encoding.
	Unused
)

// Tokenizer is a byte-level BPE tokenizer with the Llama-3 pre-tokenizer.
// It is safe for concurrent use; its only mutable part is a word cache
// guarded by a mutex.
type Tokenizer struct {
	text  []string // id → token text as stored (byte-level alphabet or added-token content)
	kinds []Kind
	bytes []byte   // all decoded token bytes, back to back
	offs  []uint32 // id → bytes[offs[id]:offs[id+1]]

	vocab        map[string]int32  // raw bytes of each Normal token → id
	short        map[uint64]int32  // the same for tokens of at most 7 bytes, keyed by packShort
	merges       map[uint64]uint64 // left<<32|right → rank<<32|merged id
	byteID       [256]int32
	ignoreMerges bool
	added        addedSet
	pre          string

	bos, eos int32 // -1 when unknown
	addBOS   bool
	eog      []int32

	cache wordCache
	hot   sync.Pool    // of *hotWords, so each goroutine has its own
	seed  maphash.Seed // for hotWords.longKeys
}

// spec is what a loader hands to build: the vocabulary in id order, with
// texts in the byte-level alphabet for Normal tokens and raw content for
// added ones.
type spec struct {
	tokens       []string
	kinds        []Kind
	merges       [][2]string
	pre          string // for messages and Pre()
	ignoreMerges bool
	bos, eos     int32
	eot          int32
	addBOS       bool
}

func build(s spec) (*Tokenizer, error) {
	n := len(s.tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: empty vocabulary")
	}
	if n > 1<<31-1 {
		return nil, fmt.Errorf("tokenizer: vocabulary of %d tokens is too large", n)
	}
	if len(s.kinds) != n {
		return nil, fmt.Errorf("tokenizer: %d token kinds for %d tokens", len(s.kinds), n)
	}
	t := &Tokenizer{
		text:         s.tokens,
		kinds:        s.kinds,
		offs:         make([]uint32, n+1),
		vocab:        make(map[string]int32, n),
		short:        make(map[uint64]int32),
		merges:       make(map[uint64]uint64, len(s.merges)),
		ignoreMerges: s.ignoreMerges,
		pre:          s.pre,
		bos:          s.bos,
		eos:          s.eos,
		addBOS:       s.addBOS,
		seed:         maphash.MakeSeed(),
	}
	for i := range t.byteID {
		t.byteID[i] = -1
	}
	byText := make(map[string]int32, n) // byte-level text of Normal tokens → id
	var added []addedToken
	for id, tok := range s.tokens {
		raw, inAlphabet := unmapBytes(tok)
		switch s.kinds[id] {
		case Normal:
			if !inAlphabet {
				return nil, fmt.Errorf("tokenizer: token %d %q is not in the byte-level alphabet (not a byte-level BPE vocabulary?)", id, tok)
			}
			if _, dup := byText[tok]; !dup {
				byText[tok] = int32(id)
				t.vocab[string(raw)] = int32(id)
				if len(raw) <= 7 {
					t.short[packShort(string(raw))] = int32(id)
				}
			}
			if len(raw) == 1 && t.byteID[raw[0]] < 0 {
				t.byteID[raw[0]] = int32(id)
			}
		case Special, UserDefined:
			if tok == "" {
				return nil, fmt.Errorf("tokenizer: added token %d has empty content", id)
			}
			added = append(added, addedToken{text: tok, id: int32(id), special: s.kinds[id] == Special})
		}
		// Decoding follows Hugging Face's byte-level decoder: a token whose
		// characters are all in the alphabet stands for those bytes, any
		// other token for its own UTF-8 text.
		if !inAlphabet {
			raw = []byte(tok)
		}
		t.bytes = append(t.bytes, raw...)
		t.offs[id+1] = uint32(len(t.bytes))
	}
	for b, id := range t.byteID {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer: no token for byte 0x%02X: byte-level BPE needs all 256 (byte fallback is not implemented)", b)
		}
	}
	for rank, m := range s.merges {
		l, okl := byText[m[0]]
		r, okr := byText[m[1]]
		if !okl || !okr {
			return nil, fmt.Errorf("tokenizer: merge %d (%q %q) uses a token that is not in the vocabulary", rank, m[0], m[1])
		}
		merged, ok := byText[m[0]+m[1]]
		if !ok {
			return nil, fmt.Errorf("tokenizer: merge %d (%q %q): result %q is not in the vocabulary", rank, m[0], m[1], m[0]+m[1])
		}
		key := uint64(l)<<32 | uint64(r)
		if _, dup := t.merges[key]; !dup {
			t.merges[key] = uint64(rank)<<32 | uint64(merged)
		}
	}
	t.added = newAddedSet(added)
	t.eog = endOfGeneration(t, s.eos, s.eot)
	return t, nil
}

// endOfGeneration lists the ids that end a generated turn: EOS, EOT and the
// tokens with the conventional end-of-turn texts of Llama-3 and ChatML
// vocabularies (as llama.cpp marks them).
func endOfGeneration(t *Tokenizer, ids ...int32) []int32 {
	var eog []int32
	for _, id := range ids {
		if id >= 0 && int(id) < len(t.text) {
			eog = append(eog, id)
		}
	}
	for _, a := range t.added.tokens {
		switch a.text {
		case "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|im_end|>", "<|endoftext|>", "<|end|>", "<end_of_turn>":
			eog = append(eog, a.id)
		}
	}
	slices.Sort(eog)
	return slices.Compact(eog)
}

// Len returns the vocabulary size (the number of ids).
func (t *Tokenizer) Len() int { return len(t.text) }

// Token returns the stored text of token id: the byte-level form of a normal
// token (space shown as 'Ġ'), or the content of an added token. It returns
// "" for an id out of range.
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.text) {
		return ""
	}
	return t.text[id]
}

// Kind returns how token id is treated; ok is false for an id out of range.
func (t *Tokenizer) Kind(id int32) (k Kind, ok bool) {
	if id < 0 || int(id) >= len(t.kinds) {
		return 0, false
	}
	return t.kinds[id], true
}

// Normal reports whether id is a Normal token: one that byte-level BPE makes
// from text, as opposed to an added (special or user-defined) token.
func (t *Tokenizer) Normal(id int32) bool {
	k, ok := t.Kind(id)
	return ok && k == Normal
}

// ID returns the id of the token whose stored text is exactly s (an added
// token's content such as "<|im_end|>", or a normal token's byte-level text).
func (t *Tokenizer) ID(s string) (int32, bool) {
	if a, ok := t.added.byText[s]; ok {
		return a.id, true
	}
	if raw, ok := unmapBytes(s); ok {
		if id, ok := t.vocab[string(raw)]; ok && t.text[id] == s {
			return id, true
		}
	}
	return -1, false
}

// BOS returns the beginning-of-sequence id, if the vocabulary names one.
// Encode never adds it; see AddBOS.
func (t *Tokenizer) BOS() (int32, bool) { return t.bos, t.bos >= 0 }

// EOS returns the end-of-sequence id, if the vocabulary names one.
func (t *Tokenizer) EOS() (int32, bool) { return t.eos, t.eos >= 0 }

// AddBOS reports whether the model expects BOS before a prompt (GGUF
// tokenizer.ggml.add_bos_token). SmolLM3 does not.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// EndOfGeneration returns the sorted ids that end a generated turn: EOS, EOT
// and the added tokens named <|im_end|>, <|eot_id|>, <|eom_id|>,
// <|end_of_text|>, <|endoftext|>, <|end|> or <end_of_turn>.
func (t *Tokenizer) EndOfGeneration() []int32 { return slices.Clone(t.eog) }

// IsEndOfGeneration reports whether id ends a generated turn.
func (t *Tokenizer) IsEndOfGeneration(id int32) bool {
	_, found := slices.BinarySearch(t.eog, id)
	return found
}

// Pre names the pre-tokenizer (GGUF tokenizer.ggml.pre, or "llama3" for a
// tokenizer.json with the Llama-3 split pattern).
func (t *Tokenizer) Pre() string { return t.pre }

// IgnoreMerges reports whether a pre-token that is itself a vocabulary entry
// is emitted as that entry without running merges.
func (t *Tokenizer) IgnoreMerges() bool { return t.ignoreMerges }

// Encode tokenizes text and returns its ids. With parseSpecial, special
// added tokens written in the text (such as "<|im_end|>") become their ids;
// without it they are tokenized as ordinary text. User-defined added tokens
// (SmolLM3's <think>, <tool_call>, …) are recognised either way. Nothing is
// added: no BOS, no EOS. Any byte sequence, even invalid UTF-8, encodes, and
// decodes back to the same bytes.
func (t *Tokenizer) Encode(text string, parseSpecial bool) []int32 {
	return t.AppendEncode(make([]int32, 0, len(text)/3+1), text, parseSpecial)
}

// AppendEncode is Encode that appends to dst.
func (t *Tokenizer) AppendEncode(dst []int32, text string, parseSpecial bool) []int32 {
	return t.appendEncode(dst, text, func(int, int) bool { return parseSpecial })
}

// EncodeMarked tokenizes text with special tokens parsed everywhere except
// inside the literal byte ranges ([start, end) pairs), where they are
// ordinary text. It is how a chat prompt keeps its template's markers
// special while a user's message cannot forge them: the text between two
// special tokens is split and merged exactly as Encode would (a literal
// range does not cut a word in two). User-defined added tokens are
// recognised everywhere, as in Encode.
func (t *Tokenizer) EncodeMarked(text string, literal [][2]int) []int32 {
	dst := make([]int32, 0, len(text)/3+1)
	return t.appendEncode(dst, text, func(start, end int) bool {
		for _, r := range literal {
			if start < r[1] && r[0] < end {
				return false
			}
		}
		return true
	})
}

// appendEncode encodes text; special(start, end) says whether a special
// token found at bytes [start, end) of text counts as one.
func (t *Tokenizer) appendEncode(dst []int32, text string, special func(start, end int) bool) []int32 {
	hot, _ := t.hot.Get().(*hotWords)
	if hot == nil {
		hot = new(hotWords)
	}
	defer t.hot.Put(hot)
	base := 0
	for text != "" {
		pos, n, id := t.added.find(text, func(i, l int) bool { return special(base+i, base+i+l) })
		for seg := text[:pos]; seg != ""; {
			k := matchAt(seg, 0)
			dst = t.appendWord(dst, seg[:k], hot)
			seg = seg[k:]
		}
		if n == 0 {
			break
		}
		dst = append(dst, id)
		text = text[pos+n:]
		base += pos + n
	}
	return dst
}

// appendWord appends the ids of one pre-token.
func (t *Tokenizer) appendWord(dst []int32, w string, hot *hotWords) []int32 {
	if len(w) == 1 {
		return append(dst, t.byteID[w[0]])
	}
	if t.ignoreMerges {
		if len(w) <= 7 {
			k := packShort(w)
			h := (k * 0x9E3779B97F4A7C15) >> (64 - hotBits)
			if hot.keys[h] == k {
				return append(dst, hot.ids[h])
			}
			if id, ok := t.short[k]; ok {
				hot.keys[h], hot.ids[h] = k, id
				return append(dst, id)
			}
		} else {
			k := maphash.String(t.seed, w)
			h := k >> (64 - hotBits)
			if id := hot.longIDs[h]; hot.longKeys[h] == k && t.tokenIs(id, w) {
				return append(dst, id)
			}
			if id, ok := t.vocab[w]; ok {
				hot.longKeys[h], hot.longIDs[h] = k, id
				return append(dst, id)
			}
		}
	}
	if ids, ok := t.cache.get(w); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = t.merge(dst, w)
	t.cache.put(w, dst[start:])
	return dst
}

// hotWords is a small direct-mapped cache of short words seen recently and
// their ids: prose repeats a few thousand words, and this table (48 KB)
// stays in the CPU cache where the vocabulary maps do not.
type hotWords struct {
	keys [1 << hotBits]uint64 // packShort keys; 0 = empty
	ids  [1 << hotBits]int32
	// Longer words by their hash; a hit is confirmed against the token's bytes.
	longKeys [1 << hotBits]uint64
	longIDs  [1 << hotBits]int32
}

// tokenIs reports whether the bytes of token id are w.
func (t *Tokenizer) tokenIs(id int32, w string) bool {
	return string(t.bytes[t.offs[id]:t.offs[id+1]]) == w
}

const hotBits = 12

// packShort packs a word of at most 7 bytes and its length into one
// integer: most pre-tokens of prose are that short, and a map keyed by
// integers is looked up without touching the key's bytes elsewhere in memory.
func packShort(w string) uint64 {
	k := uint64(len(w)) << 56
	for i := 0; i < len(w); i++ {
		k |= uint64(w[i]) << (8 * i)
	}
	return k
}

// mergeKey packs a pair of ids into a merges key.
func mergeKey(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

// noRank marks a pair without a merge.
const noRank = ^uint32(0)

// rank returns the rank and result of merging l and r.
func (t *Tokenizer) rank(l, r int32) (uint32, int32) {
	if v, ok := t.merges[mergeKey(l, r)]; ok {
		return uint32(v >> 32), int32(uint32(v))
	}
	return noRank, -1
}

// merge runs byte-level BPE over the bytes of w and appends the result:
// start from one symbol per byte; repeatedly merge the adjacent pair with the
// lowest rank, the leftmost one when it occurs more than once, until no pair
// has a rank.
func (t *Tokenizer) merge(dst []int32, w string) []int32 {
	if len(w) > longWord {
		return t.mergeLong(dst, w)
	}
	var symBuf [longWord]int32
	var rankBuf [longWord]uint32
	var resBuf [longWord]int32
	n := len(w)
	sym, ranks, res := symBuf[:n], rankBuf[:n-1], resBuf[:n-1]
	for i := 0; i < n; i++ {
		sym[i] = t.byteID[w[i]]
	}
	for i := 0; i < n-1; i++ {
		ranks[i], res[i] = t.rank(sym[i], sym[i+1])
	}
	for n > 1 {
		best, at := noRank, -1
		for i, r := range ranks[:n-1] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		sym[at] = res[at]
		copy(sym[at+1:], sym[at+2:n])
		copy(ranks[at:], ranks[at+1:n-1])
		copy(res[at:], res[at+1:n-1])
		n--
		if at > 0 {
			ranks[at-1], res[at-1] = t.rank(sym[at-1], sym[at])
		}
		if at < n-1 {
			ranks[at], res[at] = t.rank(sym[at], sym[at+1])
		}
	}
	return append(dst, sym[:n]...)
}

// longWord is the length above which merge switches from rescanning an
// array to a priority queue (same result, O(n log n)).
const longWord = 128

// mergeLong is merge for long pre-tokens: a linked list of symbols and a
// heap of candidate pairs ordered by (rank, position), so that ties go to the
// leftmost pair exactly as in merge.
func (t *Tokenizer) mergeLong(dst []int32, w string) []int32 {
	n := len(w)
	sym := make([]int32, n)
	nxt := make([]int32, n)
	prv := make([]int32, n)
	for i := range n {
		sym[i] = t.byteID[w[i]]
		nxt[i], prv[i] = int32(i+1), int32(i-1)
	}
	nxt[n-1] = -1
	h := pairHeap{}
	push := func(i int32) {
		j := nxt[i]
		if j < 0 {
			return
		}
		if r, m := t.rank(sym[i], sym[j]); r != noRank {
			h.push(pair{rank: r, pos: i, right: j, l: sym[i], r: sym[j], merged: m})
		}
	}
	for i := range int32(n - 1) {
		push(i)
	}
	for h.len() > 0 {
		p := h.pop()
		if sym[p.pos] != p.l || nxt[p.pos] != p.right || sym[p.right] != p.r {
			continue // stale: one side was merged since
		}
		sym[p.pos] = p.merged
		sym[p.right] = -1
		nn := nxt[p.right]
		nxt[p.pos] = nn
		if nn >= 0 {
			prv[nn] = p.pos
		}
		if q := prv[p.pos]; q >= 0 {
			push(q)
		}
		push(p.pos)
	}
	for i := int32(0); i >= 0; i = nxt[i] {
		dst = append(dst, sym[i])
	}
	return dst
}

type pair struct {
	rank         uint32
	pos, right   int32
	l, r, merged int32
}

// pairHeap is a binary min-heap of pairs by (rank, pos).
type pairHeap struct{ a []pair }

func (h *pairHeap) len() int { return len(h.a) }

func less(x, y pair) bool { return x.rank < y.rank || x.rank == y.rank && x.pos < y.pos }

func (h *pairHeap) push(p pair) {
	h.a = append(h.a, p)
	i := len(h.a) - 1
	for i > 0 {
		j := (i - 1) / 2
		if !less(h.a[i], h.a[j]) {
			break
		}
		h.a[i], h.a[j] = h.a[j], h.a[i]
		i = j
	}
}

func (h *pairHeap) pop() pair {
	top := h.a[0]
	last := len(h.a) - 1
	h.a[0] = h.a[last]
	h.a = h.a[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < last && less(h.a[l], h.a[m]) {
			m = l
		}
		if r := l + 1; r < last && less(h.a[r], h.a[m]) {
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

// wordCache remembers the ids of pre-tokens that needed merges. It is
// bounded: when full it starts over.
type wordCache struct {
	mu sync.Mutex
	m  map[string][]int32
}

const cacheMax = 1 << 16

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.Lock()
	ids, ok := c.m[w]
	c.mu.Unlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	if len(w) > 64 {
		return
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheMax {
		c.m = make(map[string][]int32, 1024)
	}
	c.m[strings.Clone(w)] = slices.Clone(ids)
	c.mu.Unlock()
}

// addedToken is a token matched in raw text before pre-tokenization.
type addedToken struct {
	text    string
	id      int32
	special bool
}

// addedSet finds added tokens in text: at each position the longest active
// token that starts there.
type addedSet struct {
	tokens  []addedToken
	byText  map[string]addedToken
	lengths []int // distinct token lengths, longest first
	first   [256]bool
}

func newAddedSet(tokens []addedToken) addedSet {
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
