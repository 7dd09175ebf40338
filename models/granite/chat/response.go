package chat

import "strings"

// The tags of Granite 3.3's thinking mode: Options.Thinking asks the model
// to write its reasoning between <think> and </think> and its answer
// between <response> and </response>. In Granite's vocabulary they are
// ordinary text, spelled with several tokens.
const (
	ThinkOpen     = "<think>"
	ThinkClose    = "</think>"
	ResponseOpen  = "<response>"
	ResponseClose = "</response>"
)

// ResponseFilter takes the <response> and </response> tags out of a
// Granite 3.3 answer's content (what is left once the reasoning is taken
// out), as llama.cpp's Granite format did, while the text streams in: a
// piece that may be the start of a tag is held back until the next piece
// decides. The zero value is ready; a ResponseFilter is for one answer and
// not safe for concurrent use.
type ResponseFilter struct{ held string }

// Push takes the next piece of content and returns what is certain to be
// content, tags left out.
func (f *ResponseFilter) Push(s string) string {
	s = f.held + s
	f.held = ""
	var out strings.Builder
	for {
		i := strings.Index(s, "<")
		if i < 0 {
			out.WriteString(s)
			return out.String()
		}
		out.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, ResponseOpen):
			s = s[len(ResponseOpen):]
		case strings.HasPrefix(s, ResponseClose):
			s = s[len(ResponseClose):]
		case strings.HasPrefix(ResponseOpen, s) || strings.HasPrefix(ResponseClose, s):
			f.held = s // the start of a tag, or not: the next piece tells
			return out.String()
		default:
			out.WriteByte('<')
			s = s[1:]
		}
	}
}

// Flush ends the answer and returns the text held back (a partial tag at
// the end is text).
func (f *ResponseFilter) Flush() string {
	s := f.held
	f.held = ""
	return s
}
