package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// Decode turns ids back into text the way Hugging Face's decoders do: the
// bytes of all tokens (TokenBytes) are concatenated, then read as UTF-8 with
// every maximal invalid subsequence replaced by one U+FFFD (as Rust's
// String::from_utf8_lossy does). With skipSpecial, special added tokens are
// left out; user-defined ones such as <think> are kept. For SentencePiece
// vocabularies that put a space before the text (add_space_prefix) and for
// WordPiece, the first token decoded loses its leading space, so that
// decoding Encode(s) gives s back (for WordPiece, s normalized). No other
// spaces are cleaned up. An id out of range is an error.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	first := true
	var b []byte
	for i, id := range ids {
		var err error
		if b, err = t.appendPiece(b, id, i, skipSpecial, &first); err != nil {
			return "", err
		}
	}
	return string(appendLossy(nil, b, true)), nil
}

// appendPiece appends the bytes of token id (the i-th of the ids being
// decoded), dropping the leading space of the first token not skipped when
// the vocabulary asks for it (*first tracks whether one was seen).
func (t *Tokenizer) appendPiece(dst []byte, id int32, i int, skipSpecial bool, first *bool) ([]byte, error) {
	if id < 0 || int(id) >= len(t.text) {
		return dst, fmt.Errorf("tokenizer: decode: id %d at position %d is out of range [0, %d)", id, i, len(t.text))
	}
	if skipSpecial && t.kinds[id] == Special {
		return dst, nil
	}
	b := t.bytes[t.offs[id]:t.offs[id+1]]
	if *first {
		*first = false
		if t.stripFirstSpace && len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
	}
	return append(dst, b...), nil
}

// AppendBytes appends the raw bytes that ids stand for (their TokenBytes,
// concatenated: no UTF-8 repair and no space dropped).
func (t *Tokenizer) AppendBytes(dst []byte, ids []int32, skipSpecial bool) ([]byte, error) {
	for i, id := range ids {
		if id < 0 || int(id) >= len(t.text) {
			return dst, fmt.Errorf("tokenizer: decode: id %d at position %d is out of range [0, %d)", id, i, len(t.text))
		}
		if skipSpecial && t.kinds[id] == Special {
			continue
		}
		dst = append(dst, t.bytes[t.offs[id]:t.offs[id+1]]...)
	}
	return dst, nil
}

// TokenBytes returns the raw bytes token id stands for (nil when out of
// range), as llama.cpp's llama_token_to_piece renders it with special
// tokens shown: a byte-level BPE token's bytes; for SentencePiece, Gemma 4
// and WordPiece a normal token's text with ▁ turned into a space, a byte
// token <0xXX> as that one byte, an added token's text, an unused token as
// nothing. The slice is shared: do not modify it.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	if id < 0 || int(id) >= len(t.text) {
		return nil
	}
	return t.bytes[t.offs[id]:t.offs[id+1]:t.offs[id+1]]
}

// appendLossy appends b as valid UTF-8, replacing each maximal subpart of an
// ill-formed sequence by U+FFFD. When final is false, an incomplete but so
// far valid sequence at the end of b is not consumed; appendLossy returns
// the output and, via the second result of lossyPrefix, how much of b it used.
func appendLossy(dst, b []byte, final bool) []byte {
	out, _ := lossyPrefix(dst, b, final)
	return out
}

// lossyPrefix is appendLossy that also returns the number of bytes of b it
// consumed.
func lossyPrefix(dst, b []byte, final bool) ([]byte, int) {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		need, lo, hi := seqInfo(c)
		if need == 0 {
			dst = append(dst, "\uFFFD"...)
			i++
			continue
		}
		// Count how many bytes of a valid sequence follow.
		j := i + 1
		for k := 0; k < need; k++ {
			if j >= len(b) {
				if !final {
					return dst, i // incomplete at the end: wait for more
				}
				break
			}
			x := b[j]
			if k == 0 && (x < lo || x > hi) || k > 0 && (x < 0x80 || x > 0xBF) {
				break
			}
			j++
		}
		if j-i == need+1 {
			dst = append(dst, b[i:j]...)
		} else {
			dst = append(dst, "\uFFFD"...)
		}
		i = j
	}
	return dst, len(b)
}

// seqInfo returns, for a lead byte, how many continuation bytes follow and
// the valid range of the first of them; need is 0 for a byte that cannot
// start a sequence.
func seqInfo(c byte) (need int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 1, 0x80, 0xBF
	case c == 0xE0:
		return 2, 0xA0, 0xBF
	case c == 0xED:
		return 2, 0x80, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		return 2, 0x80, 0xBF
	case c == 0xF0:
		return 3, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 3, 0x80, 0xBF
	case c == 0xF4:
		return 3, 0x80, 0x8F
	}
	return 0, 0, 0
}

// StreamDecoder turns ids into text one at a time, for printing tokens as
// they are generated. A character split across tokens (an emoji is often two
// or three) is held back until it is complete, so the pieces it returns are
// always valid UTF-8 and their concatenation equals Decode of all the ids.
type StreamDecoder struct {
	t           *Tokenizer
	skipSpecial bool
	pending     []byte
	first       bool // no token decoded yet (see Decode's leading space)
	n           int  // ids pushed, for error messages
}

// NewStreamDecoder returns a decoder over t; skipSpecial is as for Decode.
func (t *Tokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skipSpecial: skipSpecial, first: true}
}

// Continue tells the decoder that its ids continue text decoded before (a
// completion after its prompt), so the first token keeps the leading space
// that Decode drops at the start of a text: the prompt and the pieces
// together are then the whole text, as llama.cpp's token pieces are.
func (d *StreamDecoder) Continue() { d.first = false }

// Push adds one id and returns the text that is now complete (often "",
// while a multi-byte character is incomplete, such as a SentencePiece
// character spelled by byte tokens).
func (d *StreamDecoder) Push(id int32) (string, error) {
	var err error
	d.pending, err = d.t.appendPiece(d.pending, id, d.n, d.skipSpecial, &d.first)
	if err != nil {
		return "", err
	}
	d.n++
	out, used := lossyPrefix(nil, d.pending, false)
	d.pending = append(d.pending[:0], d.pending[used:]...)
	return string(out), nil
}

// Flush returns what is still held back (an incomplete character becomes
// U+FFFD) and resets the decoder.
func (d *StreamDecoder) Flush() string {
	out := appendLossy(nil, d.pending, true)
	d.pending = d.pending[:0]
	d.first, d.n = true, 0
	return string(out)
}
