package think

import (
	"slices"
	"strings"
	"testing"
)

// tok is one generated token fed to a Parser: an id and its text.
type tok struct {
	id   int32
	text string
}

const openID, closeID = 128002, 128003

// texts makes tokens without tag ids from text pieces.
func texts(pieces ...string) []tok {
	var ts []tok
	for _, p := range pieces {
		ts = append(ts, tok{1, p})
	}
	return ts
}

func run(p *Parser, toks []tok) []Segment {
	var all []Segment
	add := func(segs []Segment) {
		for _, s := range segs {
			if s.Text == "" {
				panic("empty segment")
			}
			if n := len(all); n > 0 && all[n-1].Kind == s.Kind {
				all[n-1].Text += s.Text
			} else {
				all = append(all, s)
			}
		}
	}
	for _, t := range toks {
		add(p.Push(t.id, t.text))
	}
	add(p.Flush())
	return all
}

func R(s string) Segment { return Segment{Reasoning, s} }
func C(s string) Segment { return Segment{Content, s} }

func TestParser(t *testing.T) {
	tests := []struct {
		name       string
		toks       []tok
		opts       ParserOptions
		want       []Segment
		inThinkEnd bool
	}{
		{"ids", []tok{{openID, "<think>"}, {1, "\nhmm"}, {1, "\n"}, {closeID, "</think>"}, {1, "\n\nHi"}}, ParserOptions{},
			[]Segment{R("\nhmm\n"), C("\n\nHi")}, false},
		{"ids trimmed", []tok{{openID, "<think>"}, {1, "\nhmm"}, {1, "\n"}, {closeID, "</think>"}, {1, "\n\nHi"}}, ParserOptions{TrimSpace: true},
			[]Segment{R("hmm"), C("Hi")}, false},
		{"text tags whole", texts("<think>a</think>b"), ParserOptions{}, []Segment{R("a"), C("b")}, false},
		{"text tags split", texts("<th", "ink>", "a b", "</", "thi", "nk", ">", "ans"), ParserOptions{},
			[]Segment{R("a b"), C("ans")}, false},
		{"split one char at a time", texts(strings.Split(" <think>y</think>z", "")...), ParserOptions{},
			[]Segment{C(" "), R("y"), C("z")}, false},
		{"open tag after the answer began is content", texts("x<think>y</think>z"), ParserOptions{}, []Segment{C("x<think>yz")}, false},
		{"open tag id after the answer began is content", []tok{{1, "x"}, {openID, "<think>"}, {1, "y"}}, ParserOptions{}, []Segment{C("x<think>y")}, false},
		{"one block only", texts("<think>a</think>b<think>c</think>"), ParserOptions{}, []Segment{R("a"), C("b<think>c")}, false},
		{"one block only, even with no answer between", []tok{{openID, "<think>"}, {closeID, "</think>"}, {openID, "<think>"}, {1, "c"}}, ParserOptions{},
			[]Segment{C("<think>c")}, false},
		{"missing close tag", texts("<think>", "still thinking"), ParserOptions{}, []Segment{R("still thinking")}, true},
		{"partial close tag at end", texts("<think>", "abc</thi"), ParserOptions{}, []Segment{R("abc</thi")}, true},
		{"near miss is text", texts("a <thin", "g> b"), ParserOptions{}, []Segment{C("a <thing> b")}, false},
		{"less-than is text", texts("1 <", " 2"), ParserOptions{}, []Segment{C("1 < 2")}, false},
		{"no think at all", texts("Hello", " world"), ParserOptions{}, []Segment{C("Hello world")}, false},
		{"empty think block (no-think output)", texts("<think>\n\n</think>\n", "Paris."), ParserOptions{TrimSpace: true},
			[]Segment{C("Paris.")}, false},
		{"stray close tag dropped", []tok{{1, "a"}, {closeID, "</think>"}, {1, "b</think>c"}}, ParserOptions{}, []Segment{C("abc")}, false},
		{"open tag inside reasoning is text", []tok{{openID, "<think>"}, {openID, "<think>"}, {1, "x<think>"}}, ParserOptions{},
			[]Segment{R("<think>x<think>")}, true},
		{"start in reasoning", texts("a", "</think>", "b"), ParserOptions{StartInReasoning: true}, []Segment{R("a"), C("b")}, false},
		{"trim keeps inner space", texts("<think>\n a \n\n b", " \n", "</think>", "\n", "\n", "c "), ParserOptions{TrimSpace: true},
			[]Segment{R("a \n\n b"), C("c ")}, false},
		{"trim at unfinished end", texts("<think>x  \n"), ParserOptions{TrimSpace: true}, []Segment{R("x")}, true},
		{"tag ids split by text", []tok{{1, "<"}, {openID, "<think>"}, {1, "r"}, {closeID, "</think>"}}, ParserOptions{},
			[]Segment{C("<<think>r")}, false},
		{"white space before the open tag", []tok{{1, "\n "}, {openID, "<think>"}, {1, "r"}, {closeID, "</think>"}}, ParserOptions{},
			[]Segment{C("\n "), R("r")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewParser(openID, closeID, tt.opts)
			got := run(p, tt.toks)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if p.InReasoning() != tt.inThinkEnd {
				t.Errorf("InReasoning at end = %v, want %v", p.InReasoning(), tt.inThinkEnd)
			}
		})
	}
}

// Whatever the split of the text into pieces, the segments are the same.
func TestParserSplitInvariance(t *testing.T) {
	const text = "<think>\nLet me see: a<b, </thinking> is not a tag.\n</think>\n\nThe answer <is> 42.</th"
	want := run(NewParser(-1, -1, ParserOptions{}), texts(text))
	for cut1 := 0; cut1 <= len(text); cut1++ {
		for cut2 := cut1; cut2 <= len(text); cut2 += 3 {
			got := run(NewParser(-1, -1, ParserOptions{}), texts(text[:cut1], text[cut1:cut2], text[cut2:]))
			if !slices.Equal(got, want) {
				t.Fatalf("cuts %d,%d: got %q, want %q", cut1, cut2, got, want)
			}
		}
	}
	if len(want) != 2 || want[0].Kind != Reasoning || want[1].Text != "\n\nThe answer <is> 42.</th" {
		t.Errorf("segments %q", want)
	}
}

// However a text is cut into pieces, the parser finds the same segments,
// and without TrimSpace the segments join back to the text minus its tags.
func FuzzParser(f *testing.F) {
	f.Add("<think>\na</think>b", uint8(3), uint8(9))
	f.Add("x</think><think><thi", uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, s string, c1, c2 uint8) {
		i, j := min(int(c1), len(s)), min(int(c2), len(s))
		if i > j {
			i, j = j, i
		}
		for _, trim := range []bool{false, true} {
			o := ParserOptions{TrimSpace: trim}
			want := run(NewParser(-1, -1, o), texts(s))
			got := run(NewParser(-1, -1, o), texts(s[:i], s[i:j], s[j:]))
			if !slices.Equal(got, want) {
				t.Fatalf("%q cut at %d,%d (trim %v): %q, whole: %q", s, i, j, trim, got, want)
			}
		}
	})
}
