package grammar

import (
	"bytes"
	"fmt"
	"math"
	"slices"
)

// Vocab is a model's vocabulary prepared for masking: the byte strings of
// its tokens stored as a trie, flattened in depth-first order so that a mask
// is one forward pass over a few arrays. A Vocab is immutable and safe for
// concurrent use; build it once per model and share it between constraints.
type Vocab struct {
	size   int
	eog    []int32
	tokens [][]byte

	// Trie node i (preorder) is reached by byte node[i]&0xFF from its
	// parent, at depth node[i]>>nodeDepthShift; its subtree ends before node
	// next[i]. The tokens whose bytes end exactly at node i are
	// ids[first[i]:first[i+1]]; node[i]&nodeHasTokens says if there are any.
	node     []uint32
	next     []int32
	first    []int32
	ids      []int32
	maxDepth int
	root     [256]int32 // the node of each first byte, or -1
	bytes    [256]bool  // whether the byte is a token on its own
}

// maxTokenBytes bounds the length of one token's byte string.
const maxTokenBytes = 1 << 12

const (
	nodeHasTokens  = 1 << 8
	nodeDepthShift = 9
)

// NewVocab prepares a vocabulary. tokens[i] is the byte string that token
// id i stands for; a nil or empty entry is a token that constrained output
// never uses (give nil for control tokens such as <|im_start|>, whose text
// must not appear inside generated JSON). eog lists the ids that end the
// generation (<|im_end|>, EOS): a Constraint allows them exactly when the
// output is complete. The Vocab keeps tokens: do not modify them afterwards.
func NewVocab(tokens [][]byte, eog []int32) (*Vocab, error) {
	v := &Vocab{size: len(tokens), tokens: tokens}
	for _, id := range eog {
		if id < 0 || int(id) >= len(tokens) {
			return nil, fmt.Errorf("grammar: end-of-generation id %d is outside the vocabulary of %d tokens", id, len(tokens))
		}
		v.eog = append(v.eog, id)
	}
	slices.Sort(v.eog)
	v.eog = slices.Compact(v.eog)
	var order []int32
	for id, b := range tokens {
		if len(b) == 0 || slices.Contains(v.eog, int32(id)) {
			continue
		}
		if len(b) > maxTokenBytes {
			return nil, fmt.Errorf("grammar: token %d is %d bytes long, above the limit of %d", id, len(b), maxTokenBytes)
		}
		order = append(order, int32(id))
	}
	slices.SortStableFunc(order, func(a, b int32) int { return bytes.Compare(tokens[a], tokens[b]) })

	var path []int32 // node index at each depth of the current path
	var prev []byte
	var owner []int32 // node of each entry of ids
	for _, id := range order {
		b := tokens[id]
		lcp := 0
		for lcp < len(prev) && lcp < len(b) && prev[lcp] == b[lcp] {
			lcp++
		}
		for len(path) > lcp {
			v.next[path[len(path)-1]] = int32(len(v.node))
			path = path[:len(path)-1]
		}
		for d := lcp; d < len(b); d++ {
			path = append(path, int32(len(v.node)))
			v.node = append(v.node, uint32(d+1)<<nodeDepthShift|uint32(b[d]))
			v.next = append(v.next, 0)
		}
		v.ids = append(v.ids, id)
		owner = append(owner, path[len(b)-1])
		v.node[path[len(b)-1]] |= nodeHasTokens
		v.maxDepth = max(v.maxDepth, len(b))
		prev = b
	}
	for _, n := range path {
		v.next[n] = int32(len(v.node))
	}
	for i := range v.root {
		v.root[i] = -1
	}
	for i := 0; i < len(v.node); i = int(v.next[i]) {
		v.root[byte(v.node[i])] = int32(i)
		v.bytes[byte(v.node[i])] = v.node[i]&nodeHasTokens != 0
	}
	v.first = make([]int32, len(v.node)+1)
	for _, n := range owner {
		v.first[n+1]++
	}
	for i := 1; i < len(v.first); i++ {
		v.first[i] += v.first[i-1]
	}
	return v, nil
}

// Len returns the number of token ids.
func (v *Vocab) Len() int { return v.size }

// EndOfGeneration returns the sorted end-of-generation ids.
func (v *Vocab) EndOfGeneration() []int32 { return v.eog }

func (v *Vocab) isEOG(id int32) bool {
	_, ok := slices.BinarySearch(v.eog, id)
	return ok
}

// Nodes returns the number of trie nodes: the most byte steps one mask can
// take.
func (v *Vocab) Nodes() int { return len(v.node) }

// child returns the trie node under node i (-1: the root) reached by byte
// c, or -1.
func (v *Vocab) child(i int32, c byte) int32 {
	if i < 0 {
		return v.root[c]
	}
	d := v.node[i] >> nodeDepthShift
	for j := i + 1; j < v.next[i] && int(j) < len(v.node); j = v.next[j] {
		if v.node[j]>>nodeDepthShift != d+1 {
			break
		}
		if byte(v.node[j]) == c {
			return j
		}
	}
	return -1
}

// noSpelling is spell's answer for text the vocabulary cannot spell.
const noSpelling = math.MaxInt32

// spell returns the fewest tokens whose bytes, concatenated, are w
// (noSpelling if there is no such sequence), by dynamic programming from
// the end of w over the trie: best[j] is the fewest tokens for w[j:].
func (v *Vocab) spell(w []byte, best []int32) int32 {
	best = best[:len(w)+1]
	best[len(w)] = 0
	for j := len(w) - 1; j >= 0; j-- {
		b := int32(noSpelling)
		for k, n := j, v.child(-1, w[j]); n >= 0; n = v.child(n, w[k]) {
			k++
			if v.node[n]&nodeHasTokens != 0 && best[k] < noSpelling {
				b = min(b, 1+best[k])
			}
			if k == len(w) {
				break
			}
		}
		best[j] = b
	}
	return best[0]
}
