package reftest

import (
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/toolcall"
)

// Token is one generated token for a parser test: its id (-1 for plain
// text) and its text.
type Token struct {
	ID   int32
	Text string
}

// Split cuts text into tokens of n bytes (the last one shorter).
func Split(text string, n int) []Token {
	var out []Token
	for len(text) > n {
		out = append(out, Token{-1, text[:n]})
		text = text[n:]
	}
	return append(out, Token{-1, text})
}

// Summary writes events compactly, adjacent texts merged: text:"…",
// call:name{args}, error:"raw".
func Summary(events []toolcall.Event) string {
	var parts []string
	text := ""
	flush := func() {
		if text != "" {
			parts = append(parts, fmt.Sprintf("text:%q", text))
			text = ""
		}
	}
	for _, e := range events {
		switch e.Kind {
		case toolcall.KindText:
			text += e.Text
		case toolcall.KindCall:
			flush()
			parts = append(parts, "call:"+e.Call.Name+string(e.Call.Arguments))
		case toolcall.KindError:
			flush()
			parts = append(parts, fmt.Sprintf("error:%q", e.Raw))
		}
	}
	flush()
	return strings.Join(parts, " ")
}
