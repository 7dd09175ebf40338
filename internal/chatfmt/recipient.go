package chatfmt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/toolcall"
)

// RecipientMark opens each message of a functionary v3.2 answer.
const RecipientMark = ">>>"

// RecipientAll is the recipient of text for the user.
const RecipientAll = "all"

// maxRecipient bounds a recipient's name: a longer first line is text.
const maxRecipient = 256

// RecipientParser reads functionary v3.2's answers, a run of messages
// each opened by ">>>" and its recipient's name on a line of its own:
// "all" for text to the user, a function's name for a call, whose
// arguments follow as a JSON object,
//
//	all
//	Let me check.>>>get_weather
//	{"city": "Paris"}>>>get_time
//	{}
//
// The template's generation prompt ends with ">>>", so the answer's first
// recipient comes without it (one written anyway is read the same). An
// answer whose first line is no recipient is all text, as is what follows
// a call without a ">>>". Arguments that are not a JSON object are a
// KindError event with their raw text. A RecipientParser is for one
// answer (as llama.cpp reads it: common/parsers/functionary-v3-2.cpp).
type RecipientParser struct {
	state int
	buf   string // the recipient line, or text held that may start ">>>"
	name  string
	body  strings.Builder
	scan  scanner
	raw   bool   // the arguments are not a JSON object
	tail  string // held end of raw arguments that may start ">>>"
	over  bool   // the arguments ran past toolcall.MaxCallBytes
	out   []toolcall.Event
	// textOnly: only "all" is a recipient (NewRecipientTextParser)
	textOnly bool
}

const (
	rcRecipient = iota // reading a recipient's line
	rcText             // text to the user, up to the next ">>>"
	rcArgs             // a call's arguments
	rcAfter            // after a call: white space, then ">>>" or text
)

// NewRecipientParser returns a parser for one answer.
func NewRecipientParser() *RecipientParser { return &RecipientParser{} }

// NewRecipientTextParser returns a parser for one answer to a request
// without tools: the recipient "all" is read as NewRecipientParser reads
// it, and a message to any other recipient is text.
func NewRecipientTextParser() *RecipientParser { return &RecipientParser{textOnly: true} }

// Push takes a token's text (the id is not needed).
func (p *RecipientParser) Push(_ int32, text string) []toolcall.Event {
	p.out = nil
	p.feed(text)
	return p.out
}

// Flush ends the answer.
func (p *RecipientParser) Flush() []toolcall.Event {
	p.out = nil
	switch p.state {
	case rcRecipient:
		if s := strings.TrimPrefix(p.buf, RecipientMark); s != RecipientAll && strings.TrimSpace(s) != "" {
			p.text(p.buf)
		}
	case rcText:
		p.text(p.buf)
	case rcArgs:
		p.write(p.tail)
		p.endArgs(false)
	case rcAfter:
		if strings.TrimSpace(p.buf) != "" {
			p.text(p.buf)
		}
	}
	p.buf, p.state = "", rcText
	return p.out
}

func (p *RecipientParser) feed(s string) {
	for s != "" {
		switch p.state {
		case rcRecipient:
			p.buf += s
			s = ""
			line := p.buf
			if strings.HasPrefix(RecipientMark, line) {
				return // ">>>" or a part of it: wait
			}
			line = strings.TrimPrefix(line, RecipientMark)
			i := strings.IndexByte(line, '\n')
			if i < 0 {
				if len(line) > maxRecipient || !isRecipient(line) && line != "" {
					s = p.notRecipient()
					continue
				}
				return
			}
			name, rest := strings.TrimSpace(line[:i]), line[i+1:]
			switch {
			case name == RecipientAll:
				p.state = rcText
			case isRecipient(name) && !p.textOnly:
				p.state, p.name = rcArgs, name
				p.body.Reset()
				p.scan, p.raw, p.tail, p.over = scanner{}, false, "", false
			default:
				s = p.notRecipient()
				continue
			}
			s, p.buf = rest, ""
		case rcText:
			s = p.buf + s
			p.buf = ""
			if i := strings.Index(s, RecipientMark); i >= 0 {
				p.text(s[:i])
				p.state, p.buf = rcRecipient, RecipientMark
				s = s[i+len(RecipientMark):]
				continue
			}
			k := partialSuffix(s, RecipientMark)
			p.text(s[:len(s)-k])
			p.buf = s[len(s)-k:]
			return
		case rcArgs:
			if !p.scan.started && !p.raw {
				s = strings.TrimLeft(s, " \t\r\n")
				if s == "" {
					return
				}
				p.raw = s[0] != '{'
			}
			if p.raw {
				// No JSON object: the text up to the next ">>>" is a
				// malformed call.
				look := p.tail + s
				i := strings.Index(look, RecipientMark)
				if i < 0 {
					k := partialSuffix(look, RecipientMark)
					p.write(look[:len(look)-k])
					p.tail = look[len(look)-k:]
					return
				}
				p.write(look[:i])
				p.tail, s = "", look[i+len(RecipientMark):]
				p.endArgs(false)
				p.state, p.buf = rcRecipient, RecipientMark
				continue
			}
			n, done := p.scan.feed(s)
			p.write(s[:n])
			s = s[n:]
			if done {
				p.endArgs(true)
				p.state = rcAfter
			}
		case rcAfter:
			s = p.buf + strings.TrimLeft(s, " \t\r\n")
			p.buf = ""
			if s == "" {
				return
			}
			if strings.HasPrefix(s, RecipientMark) {
				p.state, p.buf = rcRecipient, RecipientMark
				s = s[len(RecipientMark):]
				continue
			}
			if strings.HasPrefix(RecipientMark, s) {
				p.buf = s
				return
			}
			p.state = rcText
		}
	}
}

// notRecipient makes the line read as a recipient text: the ">>>" it
// started with is written out, and the rest returned to be read as text.
func (p *RecipientParser) notRecipient() string {
	s := p.buf
	p.buf, p.state = "", rcText
	if strings.HasPrefix(s, RecipientMark) {
		p.text(RecipientMark)
		s = s[len(RecipientMark):]
	}
	return s
}

// write adds s to the arguments read, up to toolcall.MaxCallBytes.
func (p *RecipientParser) write(s string) {
	if p.body.Len()+len(s) > toolcall.MaxCallBytes {
		p.over = true
		return
	}
	p.body.WriteString(s)
}

// endArgs reads the arguments of the call p.name (complete: the JSON
// object ended).
func (p *RecipientParser) endArgs(complete bool) {
	raw := p.body.String()
	p.body.Reset()
	switch {
	case p.over:
		p.out = append(p.out, Malformed(RecipientMark+p.name+"\n"+raw, fmt.Errorf("longer than %d bytes", toolcall.MaxCallBytes)))
	case !complete && !strings.HasPrefix(raw, "{"):
		p.out = append(p.out, Malformed(RecipientMark+p.name+"\n"+raw, errors.New("the arguments are not a JSON object")))
	case !complete:
		p.out = append(p.out, Malformed(RecipientMark+p.name+"\n"+raw, errors.New("the answer ended inside the arguments")))
	default:
		a, err := objectArgs(raw)
		if err != nil {
			p.out = append(p.out, Malformed(RecipientMark+p.name+"\n"+raw, err))
			return
		}
		p.out = append(p.out, toolcall.Event{Kind: toolcall.KindCall, Call: toolcall.Call{Name: p.name, Arguments: a}})
	}
}

func (p *RecipientParser) text(s string) {
	if s == "" {
		return
	}
	if n := len(p.out); n > 0 && p.out[n-1].Kind == toolcall.KindText {
		p.out[n-1].Text += s
		return
	}
	p.out = append(p.out, toolcall.Event{Kind: toolcall.KindText, Text: s})
}

// isRecipient reports whether s can be a recipient's name: a function's
// name (letters, digits, _ . - and :), not empty.
func isRecipient(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == ':') {
			return false
		}
	}
	return s != ""
}

// RecipientGrammar returns the grammar of a functionary v3.2 answer that
// calls the functions (names and params parallel): exactly one call, or
// with parallel one or more separated by ">>>". It starts right after the
// generation prompt's ">>>", with the function's name.
func RecipientGrammar(ctx context.Context, names []string, params []json.RawMessage, parallel bool) (*grammar.Grammar, error) {
	if len(names) == 0 || len(names) != len(params) {
		return nil, errors.New("chat: a call grammar needs at least one function")
	}
	var src strings.Builder
	subs := map[string]*grammar.Grammar{}
	alts := make([]string, len(names))
	for i, name := range names {
		if !isRecipient(name) || name == RecipientAll {
			return nil, fmt.Errorf("chat: function %d: %q is not a name functionary v3.2 can call", i, name)
		}
		p := params[i]
		if s := strings.TrimSpace(string(p)); s == "" || s == "null" {
			p = json.RawMessage(`{"type":"object"}`)
		}
		g, err := grammar.FromJSONSchemaContext(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("chat: function %q: %w", name, err)
		}
		args := fmt.Sprintf("args%d", i)
		subs[args] = g
		alts[i] = GBNFLiteral(name+"\n") + " " + args
	}
	src.WriteString("root ::= call")
	if parallel {
		src.WriteString(" ( " + GBNFLiteral(RecipientMark) + " call )*")
	}
	src.WriteString("\ncall ::= " + strings.Join(alts, " | ") + "\n")
	return grammar.Compose(ctx, src.String(), subs)
}
