package chatfmt

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/smolgo/smolgo/engine"
)

// Builder is a strings.Builder that records the ranges written with
// Literal: the text that came from the caller (message contents, tool
// definitions), which a prompt tokenizes as plain text
// (tokenizer.EncodeMarked) so that a user cannot forge the template's
// markers.
type Builder struct {
	strings.Builder
	spans [][2]int
}

// Literal writes text that came from the caller and records its range.
// Adjacent literals are merged into one range.
func (b *Builder) Literal(s string) {
	if s == "" {
		return
	}
	start := b.Len()
	b.WriteString(s)
	if n := len(b.spans); n > 0 && b.spans[n-1][1] == start {
		b.spans[n-1][1] = b.Len()
		return
	}
	b.spans = append(b.spans, [2]int{start, b.Len()})
}

// Spans returns the recorded [start, end) ranges, in order.
func (b *Builder) Spans() [][2]int { return b.spans }

// IsPySpace reports whether Python's str.isspace() is true for r: Unicode
// White_Space plus the separators U+001C–U+001F.
func IsPySpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1C && r <= 0x1F
}

// Strip is Python's str.strip() (and Jinja's trim filter).
func Strip(s string) string { return strings.TrimFunc(s, IsPySpace) }

// RStrip is Python's str.rstrip().
func RStrip(s string) string { return strings.TrimRightFunc(s, IsPySpace) }

// ErrNoMessages is what every template returns for an empty conversation
// (each chat package names it ErrNoMessages too).
var ErrNoMessages = errors.New("chat: no messages to render")

// Check is what every template checks before it renders: a conversation
// of at least one message (ErrNoMessages), with the roles CheckRoles
// allows.
func Check(msgs []engine.Message) error {
	if len(msgs) == 0 {
		return ErrNoMessages
	}
	return CheckRoles(msgs)
}

// CheckRoles returns an error naming the first message whose role is not
// system, user, assistant or tool, or that has tool calls without being
// the assistant's (the templates would drop those calls, or the message).
func CheckRoles(msgs []engine.Message) error {
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return fmt.Errorf("chat: message %d: role %q is not one of system, user, assistant, tool", i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != "assistant" {
			return fmt.Errorf("chat: message %d: a %s message has tool calls; only the assistant's have", i, m.Role)
		}
	}
	return nil
}
