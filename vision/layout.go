package vision

import (
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/backend"
)

// Marker is where an image goes in a prompt's text: mtmd's default
// marker.
const Marker = "<__media__>"

// A Segment is one run of a prompt as the text model reads it: tokens, or
// the rows of one image chunk.
type Segment struct {
	Tokens []int32 // a text run (nil for an image chunk)
	Image  *Image  // the image of an image chunk
	Chunk  int     // the chunk's index in Image.Chunks
}

// Rows is the number of rows the segment takes: its tokens, or the image
// chunk's rows.
func (s Segment) Rows() int {
	if s.Image != nil {
		return s.Image.Chunks[s.Chunk].Rows
	}
	return len(s.Tokens)
}

// Advance is how many positions the segment moves the sequence on: its
// tokens' count, or the image chunk's Advance (fewer than its rows for
// M-RoPE). A segment that starts at position pos0 is followed by one at
// pos0 + Advance, which is mtmd's pos0 of the next chunk.
func (s Segment) Advance() int {
	if s.Image != nil {
		return s.Image.Chunks[s.Chunk].Advance
	}
	return len(s.Tokens)
}

// Positions are the M-RoPE positions of the segment's rows when it starts
// at position pos0: MRoPEPositions for an image chunk, TextPositions for
// text. A text model without M-RoPE needs none (its rows sit at their
// places in the cache).
func (s Segment) Positions(pos0 int) []backend.Position {
	if s.Image != nil {
		return MRoPEPositions(s.Image.Chunks[s.Chunk], pos0)
	}
	return TextPositions(pos0, len(s.Tokens))
}

// Split cuts prompt at its markers (one per image, in order) into segments
// as mtmd_tokenize does: the text between markers tokenized by tokenize
// (first tells it whether the text opens the prompt, for a BOS token), each
// image as its chunks, their delimiter text tokenized too (special tokens
// parsed), and neighbouring text runs joined.
func Split(prompt, marker string, imgs []*Image, tokenize func(text string, first, delimiter bool) []int32) ([]Segment, error) {
	parts := strings.Split(prompt, marker)
	if len(parts)-1 != len(imgs) {
		return nil, fmt.Errorf("vision: the prompt has %d image markers for %d images", len(parts)-1, len(imgs))
	}
	var segs []Segment
	text := func(ids []int32) {
		if len(ids) == 0 {
			return
		}
		if n := len(segs); n > 0 && segs[n-1].Image == nil {
			segs[n-1].Tokens = append(segs[n-1].Tokens, ids...)
			return
		}
		segs = append(segs, Segment{Tokens: append([]int32(nil), ids...)})
	}
	for i, p := range parts {
		if p != "" || i == 0 {
			text(tokenize(p, i == 0, false))
		}
		if i == len(imgs) {
			break
		}
		for k, c := range imgs[i].Chunks {
			if c.Rows == 0 {
				text(tokenize(c.Text, false, true))
				continue
			}
			segs = append(segs, Segment{Image: imgs[i], Chunk: k})
		}
	}
	return segs, nil
}

// MRoPEPositions are an M-RoPE image chunk's rows' positions when it
// starts at position pos0 (mtmd's decoder positions): every row at
// temporal position pos0, row r at line pos0 + r/GridW and column
// pos0 + r%GridW.
func MRoPEPositions(c Chunk, pos0 int) []backend.Position {
	out := make([]backend.Position, c.Rows)
	for r := range out {
		out[r] = backend.Position{T: int32(pos0), Y: int32(pos0 + r/max(1, c.GridW)), X: int32(pos0 + r%max(1, c.GridW))}
	}
	return out
}

// TextPositions are the positions of n text rows from pos: every stream
// the same.
func TextPositions(pos, n int) []backend.Position {
	out := make([]backend.Position, n)
	for i := range out {
		p := int32(pos + i)
		out[i] = backend.Position{T: p, Y: p, X: p}
	}
	return out
}
