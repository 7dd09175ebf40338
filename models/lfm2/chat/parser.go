package chat

import (
	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/toolcall"
)

// Calls is LFM2's syntax as a chatfmt.MarkedCalls: a block between
// CallStart and CallEnd, read by ParseCalls.
var Calls = chatfmt.MarkedCalls{Begin: CallStart, End: CallEnd, Body: ParseCalls}

// ToolParser reads LFM2's tool calls out of an answer as its tokens
// arrive. Text outside the blocks is passed on (a possible start of a
// marker held back until the next token decides); each block gives its
// calls, or an error event with its text when ParseCalls cannot read it or
// the answer ends inside it. The markers count whether they come as their
// special tokens (by id, with the empty text decoding gives them) or as
// text, whole or split across tokens (as a grammar spells them). It is for
// one answer and not safe for concurrent use.
type ToolParser struct {
	startID, endID int32
	p              *chatfmt.MarkedParser
}

// NewToolParser returns a parser for one answer; startID and endID are
// the ids of CallStart and CallEnd in the model's vocabulary, or -1.
func NewToolParser(startID, endID int32) *ToolParser {
	return &ToolParser{startID: startID, endID: endID, p: chatfmt.NewMarkedParser(Calls)}
}

// Push takes one generated token's id and text and returns the events it
// completes.
func (t *ToolParser) Push(id int32, text string) []toolcall.Event {
	if text == "" && id >= 0 {
		switch id {
		case t.startID:
			text = CallStart
		case t.endID:
			text = CallEnd
		}
	}
	return t.p.Push(id, text)
}

// Flush ends the answer.
func (t *ToolParser) Flush() []toolcall.Event { return t.p.Flush() }
