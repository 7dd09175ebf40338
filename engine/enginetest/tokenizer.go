package enginetest

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// The special tokens of the fake vocabulary, after the 256 bytes.
const (
	ImStart    int32 = 256 + iota // <|im_start|>
	ImEnd                         // <|im_end|>: ends a turn
	ThinkOpen                     // <think>
	ThinkClose                    // </think>
	firstPiece                    // the first id of a word piece
)

var specials = []string{"<|im_start|>", "<|im_end|>", "<think>", "</think>"}

// DefaultVocab is the size of a Tokenizer's vocabulary when New is given 0.
const DefaultVocab = 4096

// Tokenizer is a fake vocabulary: the 256 bytes, four special tokens (ImStart,
// ImEnd, ThinkOpen, ThinkClose) and word pieces numbered as first seen, up to
// a fixed size. A piece is a run of non-space characters with the spaces
// after it (Pieces), so that a text of words costs about one token per word,
// as with a real tokenizer; once the vocabulary is full, new pieces are
// written as bytes. It implements engine.Tokenizer and is safe for concurrent
// use.
type Tokenizer struct {
	size int

	mu     sync.Mutex
	ids    map[string]int32
	pieces []string
}

// NewTokenizer returns a tokenizer with a vocabulary of size ids (0:
// DefaultVocab; at least 260 + a few pieces).
func NewTokenizer(size int) *Tokenizer {
	if size <= 0 {
		size = DefaultVocab
	}
	return &Tokenizer{size: max(size, int(firstPiece)+1), ids: map[string]int32{}}
}

// Pieces splits text into the tokenizer's pieces: runs of non-space
// characters with the spaces, tabs and newlines after them, so that joining
// the pieces gives back the text.
func Pieces(s string) []string {
	var out []string
	start := 0
	inSpace := false
	for i, r := range s {
		space := r == ' ' || r == '\n' || r == '\t'
		if !space && inSpace && i > start {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// piece returns the id of a piece, numbering it if it is new and there is
// room; ok is false when it must be written as bytes.
func (t *Tokenizer) piece(p string) (int32, bool) {
	if len(p) == 1 {
		return int32(p[0]), true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[p]; ok {
		return id, true
	}
	if int(firstPiece)+len(t.pieces) >= t.size {
		return 0, false
	}
	id := firstPiece + int32(len(t.pieces))
	t.ids[p] = id
	t.pieces = append(t.pieces, p)
	return id, true
}

// pieceCount is the number of pieces given out.
func (t *Tokenizer) pieceCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pieces)
}

// Encode tokenizes text; with parseSpecial the four special strings become
// their tokens, otherwise they are plain text.
func (t *Tokenizer) Encode(text string, parseSpecial bool) []int32 {
	var ids []int32
	for text != "" {
		cut, sp := len(text), int32(-1)
		if parseSpecial {
			for i, s := range specials {
				if j := strings.Index(text, s); j >= 0 && j < cut {
					cut, sp = j, ImStart+int32(i)
				}
			}
		}
		ids = t.appendPlain(ids, text[:cut])
		if sp < 0 {
			break
		}
		ids = append(ids, sp)
		text = text[cut+len(specials[sp-ImStart]):]
	}
	return ids
}

// appendPlain appends the pieces of text.
func (t *Tokenizer) appendPlain(ids []int32, text string) []int32 {
	for _, p := range Pieces(text) {
		if id, ok := t.piece(p); ok {
			ids = append(ids, id)
			continue
		}
		for i := 0; i < len(p); i++ {
			ids = append(ids, int32(p[i]))
		}
	}
	return ids
}

// TokenBytes returns the bytes of token id (nil outside the vocabulary or
// for an id not given out yet).
func (t *Tokenizer) TokenBytes(id int32) []byte {
	switch {
	case id < 0:
		return nil
	case id < 256:
		return []byte{byte(id)}
	case id < firstPiece:
		return []byte(specials[id-ImStart])
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := int(id - firstPiece); i < len(t.pieces) {
		return []byte(t.pieces[i])
	}
	return nil
}

// Decode turns ids back into text, leaving special tokens out with
// skipSpecial; an id not given out is an error.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	var b strings.Builder
	for i, id := range ids {
		if id >= ImStart && id < firstPiece && skipSpecial {
			continue
		}
		p := t.TokenBytes(id)
		if p == nil {
			return "", fmt.Errorf("enginetest: token %d (at index %d) is not in the vocabulary", id, i)
		}
		b.Write(p)
	}
	return b.String(), nil
}

// Normal reports whether id is a byte or a word piece (not a special
// token, and given out).
func (t *Tokenizer) Normal(id int32) bool {
	return id >= 0 && id < ImStart || id >= firstPiece && t.TokenBytes(id) != nil
}

// Len is the vocabulary's size.
func (t *Tokenizer) Len() int { return t.size }

// EndOfGeneration is ImEnd.
func (t *Tokenizer) EndOfGeneration() []int32 { return []int32{ImEnd} }

// decoder streams text, holding back an incomplete UTF-8 character and
// leaving special tokens out.
type decoder struct {
	t   *Tokenizer
	buf []byte
}

func (d *decoder) Push(id int32) (string, error) {
	if id >= ImStart && id < firstPiece {
		return "", nil
	}
	p := d.t.TokenBytes(id)
	if p == nil {
		return "", fmt.Errorf("enginetest: token %d is not in the vocabulary", id)
	}
	d.buf = append(d.buf, p...)
	n := len(d.buf)
	if s := lastStart(d.buf); s < n && !utf8.FullRune(d.buf[s:]) {
		n = s // an incomplete character waits for its next bytes
	}
	out := string(d.buf[:n])
	d.buf = d.buf[n:]
	return out, nil
}

// lastStart is the index where the last UTF-8 character of b starts.
func lastStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-4; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return len(b)
}

func (d *decoder) Flush() string {
	out := strings.ToValidUTF8(string(d.buf), "\uFFFD")
	d.buf = nil
	return out
}
