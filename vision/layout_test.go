package vision

import (
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
)

// A prompt laid out by Split gets, segment after segment, mtmd's chunk
// positions: each segment starts where the previous one's Advance ends,
// and Positions gives its rows' (t, y, x).
func TestSegmentAdvancePositions(t *testing.T) {
	qwen := &Image{Chunks: []Chunk{{Text: "<s>"}, {Rows: 6, Advance: 3, GridW: 3, GridH: 2}, {Text: "</s>"}}}
	flat := &Image{Chunks: []Chunk{{Rows: 4, Advance: 4}}}
	p := func(t, y, x int32) backend.Position { return backend.Position{T: t, Y: y, X: x} }
	for _, c := range []struct {
		name    string
		seg     Segment
		pos0    int
		advance int
		want    []backend.Position
	}{
		{"text", Segment{Tokens: []int32{7, 8, 9}}, 5, 3, []backend.Position{p(5, 5, 5), p(6, 6, 6), p(7, 7, 7)}},
		{"M-RoPE image chunk", Segment{Image: qwen, Chunk: 1}, 4, 3,
			[]backend.Position{p(4, 4, 4), p(4, 4, 5), p(4, 4, 6), p(4, 5, 4), p(4, 5, 5), p(4, 5, 6)}},
		{"image chunk of a model without M-RoPE", Segment{Image: flat}, 2, 4, []backend.Position{p(2, 2, 2), p(2, 3, 2), p(2, 4, 2), p(2, 5, 2)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.seg.Advance(); got != c.advance {
				t.Errorf("Advance %d, want %d", got, c.advance)
			}
			got := c.seg.Positions(c.pos0)
			if !slices.Equal(got, c.want) {
				t.Errorf("Positions(%d) = %v\nwant %v", c.pos0, got, c.want)
			}
			if len(got) != c.seg.Rows() {
				t.Errorf("%d positions for %d rows", len(got), c.seg.Rows())
			}
		})
	}
}

// Split joins neighbouring text runs, keeps image chunks apart, asks for a
// BOS only for the text that opens the prompt, and refuses a prompt whose
// markers do not match the images.
func TestSplit(t *testing.T) {
	img := &Image{Chunks: []Chunk{{Text: "<"}, {Rows: 2, Advance: 2}, {Text: ">"}}}
	var firsts []string
	tokenize := func(text string, first, _ bool) []int32 {
		if first {
			firsts = append(firsts, text)
		}
		var ids []int32
		for _, r := range text {
			ids = append(ids, int32(r))
		}
		return ids
	}
	segs, err := Split("ab"+Marker+"c", Marker, []*Image{img}, tokenize)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range segs {
		if s.Image != nil {
			got = append(got, strings.Repeat("#", s.Rows()))
			continue
		}
		got = append(got, string(runes(s.Tokens)))
	}
	if want := []string{"ab<", "##", ">c"}; !slices.Equal(got, want) {
		t.Errorf("segments %q, want %q", got, want)
	}
	if !slices.Equal(firsts, []string{"ab"}) {
		t.Errorf("first text %q, want only %q", firsts, "ab")
	}
	for _, c := range []struct {
		prompt string
		imgs   []*Image
	}{
		{"no marker", []*Image{img}},
		{Marker + Marker, []*Image{img}},
		{Marker, nil},
	} {
		if _, err := Split(c.prompt, Marker, c.imgs, tokenize); err == nil || !strings.Contains(err.Error(), "image markers") {
			t.Errorf("%q with %d images: error %v, want one about the markers", c.prompt, len(c.imgs), err)
		}
	}
}

func runes(ids []int32) []rune {
	out := make([]rune, len(ids))
	for i, id := range ids {
		out[i] = rune(id)
	}
	return out
}

// otherProjector is an engine.Projector this package did not load.
type otherProjector struct{ engine.Projector }

func TestOf(t *testing.T) {
	pr := &Projector{}
	if got, ok := Of(engineProjector{pr}); !ok || got != pr {
		t.Errorf("Of(the engine's wrapper) = %p, %v; want %p, true", got, ok, pr)
	}
	for _, p := range []engine.Projector{nil, otherProjector{}, engineProjector{}} {
		if got, ok := Of(p); ok || got != nil {
			t.Errorf("Of(%T) = %p, %v; want nil, false", p, got, ok)
		}
	}
}
