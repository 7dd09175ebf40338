package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/smolgo/smolgo/internal/chatfmt"
	"github.com/smolgo/smolgo/toolcall"
)

// The markers around a block of calls: special tokens of LFM2's
// vocabulary.
const (
	CallStart = "<|tool_call_start|>"
	CallEnd   = "<|tool_call_end|>"
)

// maxDepth bounds the nesting of lists and dicts in a value.
const maxDepth = chatfmt.MaxDepth

// ParseCalls reads the text between CallStart and CallEnd: a list of
// calls, [NAME(KEY=VALUE, …), …] (the brackets may be left out around a
// single call), with white space allowed between any two of its parts.
// Each call's arguments become a JSON object ({} for none); a repeated
// argument, a positional argument, a value that is not a literal (a
// variable, an expression) or an empty list is an error saying where.
func ParseCalls(body string) ([]toolcall.Call, error) {
	p := &pyParser{s: body}
	p.space()
	bracketed := p.eat('[')
	var calls []toolcall.Call
	for {
		p.space()
		if bracketed && p.peek() == ']' && len(calls) > 0 {
			break // a trailing comma
		}
		c, err := p.call()
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
		p.space()
		if !bracketed || !p.eat(',') {
			break
		}
	}
	p.space()
	if bracketed && !p.eat(']') {
		return nil, p.errorf("want , or ] after call %d", len(calls))
	}
	p.space()
	if p.i < len(p.s) {
		return nil, p.errorf("unexpected text after the calls")
	}
	return calls, nil
}

// pyParser reads Python literals out of s from byte i on.
type pyParser struct {
	s     string
	i     int
	depth int
}

func (p *pyParser) errorf(format string, args ...any) error {
	near := p.s[p.i:min(len(p.s), p.i+20)]
	return fmt.Errorf("byte %d (near %q): %s", p.i, near, fmt.Sprintf(format, args...))
}

func (p *pyParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *pyParser) eat(c byte) bool {
	if p.peek() == c && p.i < len(p.s) {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isNameByte(c byte) bool  { return isNameStart(c) || '0' <= c && c <= '9' }

// ident reads a Python identifier; dotted adds '.' and '-' to the bytes
// after the first (function names such as "browser.open").
func (p *pyParser) ident(dotted bool) string {
	start := p.i
	if !isNameStart(p.peek()) {
		return ""
	}
	for p.i < len(p.s) && (isNameByte(p.s[p.i]) || dotted && (p.s[p.i] == '.' || p.s[p.i] == '-')) {
		p.i++
	}
	return p.s[start:p.i]
}

// call reads NAME(KEY=VALUE, …).
func (p *pyParser) call() (toolcall.Call, error) {
	name := p.ident(true)
	if name == "" {
		return toolcall.Call{}, p.errorf("want a function name")
	}
	p.space()
	if !p.eat('(') {
		return toolcall.Call{}, p.errorf("want ( after %s", name)
	}
	var b strings.Builder
	b.WriteByte('{')
	seen := map[string]bool{}
	for {
		p.space()
		if p.eat(')') {
			break
		}
		key := p.ident(false)
		if key == "" {
			return toolcall.Call{}, p.errorf("%s: want a keyword argument (KEY=VALUE)", name)
		}
		p.space()
		if !p.eat('=') {
			return toolcall.Call{}, p.errorf("%s: want = after %s (arguments are keyword arguments)", name, key)
		}
		if seen[key] {
			return toolcall.Call{}, p.errorf("%s: argument %s given twice", name, key)
		}
		seen[key] = true
		if len(seen) > 1 {
			b.WriteByte(',')
		}
		chatfmt.WriteJSONString(&b, key)
		b.WriteByte(':')
		p.space()
		if err := p.value(&b); err != nil {
			return toolcall.Call{}, fmt.Errorf("%s(%s=…): %w", name, key, err)
		}
		p.space()
		if p.eat(')') {
			break
		}
		if !p.eat(',') {
			return toolcall.Call{}, p.errorf("%s: want , or ) after argument %s", name, key)
		}
	}
	b.WriteByte('}')
	return toolcall.Call{Name: name, Arguments: json.RawMessage(b.String())}, nil
}

// value reads one literal and writes it to b as JSON.
func (p *pyParser) value(b *strings.Builder) error {
	switch c := p.peek(); {
	case c == '"' || c == '\'':
		s, err := p.str()
		if err != nil {
			return err
		}
		chatfmt.WriteJSONString(b, s)
		return nil
	case c == '[' || c == '{':
		return p.container(b)
	case c == '-' || '0' <= c && c <= '9':
		return p.number(b)
	}
	start := p.i
	word := p.ident(false)
	switch word {
	case "True", "true":
		b.WriteString("true")
	case "False", "false":
		b.WriteString("false")
	case "None", "null":
		b.WriteString("null")
	default:
		p.i = start
		return p.errorf("want a literal value (a string, a number, True, False, None, a list or a dict)")
	}
	return nil
}

// container reads a list or a dict.
func (p *pyParser) container(b *strings.Builder) error {
	if p.depth++; p.depth > maxDepth {
		return p.errorf("values nested deeper than %d", maxDepth)
	}
	defer func() { p.depth-- }()
	open := p.s[p.i]
	close := byte(']')
	if open == '{' {
		close = '}'
	}
	p.i++
	b.WriteByte(open)
	for n := 0; ; n++ {
		p.space()
		if p.eat(close) {
			break
		}
		if n > 0 {
			b.WriteByte(',')
		}
		if open == '{' {
			if c := p.peek(); c != '"' && c != '\'' {
				return p.errorf("want a string key in a dict")
			}
			k, err := p.str()
			if err != nil {
				return err
			}
			chatfmt.WriteJSONString(b, k)
			p.space()
			if !p.eat(':') {
				return p.errorf("want : after a dict key")
			}
			b.WriteByte(':')
			p.space()
		}
		if err := p.value(b); err != nil {
			return err
		}
		p.space()
		if p.eat(close) {
			break
		}
		if !p.eat(',') {
			return p.errorf("want , or %c", close)
		}
	}
	b.WriteByte(close)
	return nil
}

// number reads a JSON number and writes it as it is.
func (p *pyParser) number(b *strings.Builder) error {
	start := p.i
	p.eat('-')
	digits := func() int {
		n := 0
		for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	switch {
	case p.eat('0'):
	case digits() == 0:
		return p.errorf("want a number")
	}
	if p.eat('.') && digits() == 0 {
		return p.errorf("want digits after the decimal point")
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if digits() == 0 {
			return p.errorf("want digits in the exponent")
		}
	}
	if isNameByte(p.peek()) || p.peek() == '.' {
		return p.errorf("not a number")
	}
	b.WriteString(p.s[start:p.i])
	return nil
}

var errUnterminated = errors.New("the string is not closed")

// str reads a string in single or double quotes: any UTF-8 text, with
// the escapes \\, \/, \b, \f, \n, \r, \t, \uXXXX (UTF-16, surrogate pairs
// joined), \" and \'.
func (p *pyParser) str() (string, error) {
	quote := p.s[p.i]
	p.i++
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return "", errUnterminated
		}
		c := p.s[p.i]
		switch {
		case c == quote:
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", errUnterminated
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '\\', '/', '"', '\'':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.errorf(`want 4 hex digits after \u`)
				}
				if utf16.IsSurrogate(r) && strings.HasPrefix(p.s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					if r2, ok := p.hex4(); ok && utf16.DecodeRune(r, r2) != utf8.RuneError {
						r = utf16.DecodeRune(r, r2)
					} else {
						p.i = save
					}
				}
				b.WriteRune(r) // a lone surrogate is U+FFFD
			default:
				p.i -= 2
				return "", p.errorf(`the escape \%c is not one of \\ \/ \" \' \b \f \n \r \t \uXXXX`, e)
			}
		default:
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			b.WriteString(p.s[p.i : p.i+n])
			p.i += n
		}
	}
}

func (p *pyParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}
