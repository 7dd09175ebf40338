package goldentest

import (
	"strings"
	"testing"
)

// TestCheckRows: a reference may keep every prefill row or some positions
// of a long prompt, but only increasing ones ending at the prompt's last
// token, each with the vocabulary's logits; anything else is named.
func TestCheckRows(t *testing.T) {
	const V = 3
	row := func(pos, n int) Row { return Row{Pos: pos, Logits: make([]float32, n)} }
	tokens := []int32{1, 2, 3, 4, 5}
	cases := []struct {
		name    string
		prefill []Row
		decode  []Row
		want    string // "" when valid
	}{
		{"every row", []Row{row(0, V), row(1, V), row(2, V), row(3, V), row(4, V)}, []Row{row(5, V)}, ""},
		{"a subset", []Row{row(0, V), row(2, V), row(4, V)}, nil, ""},
		{"the last only", []Row{row(4, V)}, nil, ""},
		{"no rows", nil, nil, "0 golden prefill rows for 5 tokens"},
		{"too many", []Row{row(0, V), row(1, V), row(2, V), row(3, V), row(4, V), row(4, V)}, nil, "6 golden prefill rows"},
		{"not increasing", []Row{row(2, V), row(2, V), row(4, V)}, nil, "row 1 is at position 2"},
		{"out of range", []Row{row(0, V), row(5, V)}, nil, "row 1 is at position 5"},
		{"negative", []Row{row(-1, V), row(4, V)}, nil, "row 0 is at position -1"},
		{"without the last", []Row{row(0, V), row(3, V)}, nil, "at position 3, not the prompt's last (4)"},
		{"short row", []Row{row(0, V), row(4, V-1)}, nil, "position 4 has 2 logits, want 3"},
		{"long decode row", []Row{row(4, V)}, []Row{row(5, V+1)}, "decode row at position 5 has 4 logits"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkRows(Prompt{Name: "p", Tokens: tokens, Prefill: c.prefill, Decode: c.decode}, V)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
