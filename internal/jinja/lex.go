package jinja

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The lexer follows jinja2's (lexer.py) with trim_blocks and
// lstrip_blocks on, as transformers configures it:
//
//   - line breaks (\r\n, \r) become \n and one final line break is dropped
//     (keep_trailing_newline is off);
//   - {%- {{- {#- strip all white space before the tag, -%} -}} -#} all
//     white space after it;
//   - a block or comment tag (not {{ }}) alone on its line after spaces
//     and tabs takes them away (lstrip_blocks), unless it opens with {%+;
//   - %} and #} eat one line break after them (trim_blocks), unless +%}.

type tokKind uint8

const (
	tData tokKind = iota
	tVarBegin
	tVarEnd
	tBlockBegin
	tBlockEnd
	tName
	tString
	tInt
	tFloat
	tOp
	tEOF
)

type token struct {
	kind tokKind
	s    string // data, name, string value, operator
	n    int64
	f    float64
	line int
}

type lexer struct {
	src    string
	pos    int
	line   int
	toks   []token
	depth  []byte // open brackets inside a tag
	lstart bool   // the last match ended with a line break (jinja2's line_starting)
}

func isPySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

func pyRStrip(s string) string { return strings.TrimRightFunc(s, isPySpace) }

// skipSpace returns the length of the white space at the start of s.
func skipSpace(s string) int {
	return len(s) - len(strings.TrimLeftFunc(s, isPySpace))
}

func allSpace(s string) bool { return s != "" && skipSpace(s) == len(s) }

func normalizeNewlines(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

func lex(src string) ([]token, error) {
	src = normalizeNewlines(src)
	src = strings.TrimSuffix(src, "\n")
	lx := &lexer{src: src, line: 1, lstart: true}
	if err := lx.run(); err != nil {
		return nil, err
	}
	lx.toks = append(lx.toks, token{kind: tEOF, line: lx.line})
	return lx.toks, nil
}

func (lx *lexer) errorf(format string, args ...any) error {
	e := errorf(ErrSyntax, format, args...)
	e.Line = lx.line
	return e
}

func (lx *lexer) emit(t token) {
	t.line = lx.line
	lx.toks = append(lx.toks, t)
}

func (lx *lexer) advance(n int) {
	lx.line += strings.Count(lx.src[lx.pos:lx.pos+n], "\n")
	lx.pos += n
}

// stripText applies the opening tag's white-space control to the text
// before it.
func (lx *lexer) stripText(text string, sign byte, variable bool) string {
	switch {
	case sign == '-':
		return pyRStrip(text)
	case sign != '+' && !variable:
		l := strings.LastIndexByte(text, '\n') + 1
		if (l > 0 || lx.lstart) && allSpace(text[l:]) {
			return text[:l]
		}
	}
	return text
}

// rawBegin matches {%(-|+|)\s*raw\s*(-%}\s*|%}) at s and returns its length.
func rawTag(s, word string) (n int, sign byte, ok bool) {
	if !strings.HasPrefix(s, "{%") {
		return 0, 0, false
	}
	i := 2
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		sign = s[i]
		i++
	}
	i += skipSpace(s[i:])
	if !strings.HasPrefix(s[i:], word) {
		return 0, 0, false
	}
	i += len(word)
	i += skipSpace(s[i:])
	return i, sign, true
}

func (lx *lexer) run() error {
	for lx.pos < len(lx.src) {
		rest := lx.src[lx.pos:]
		i := strings.Index(rest, "{")
		for i >= 0 && (i+1 >= len(rest) || (rest[i+1] != '{' && rest[i+1] != '%' && rest[i+1] != '#')) {
			j := strings.Index(rest[i+1:], "{")
			if j < 0 {
				i = -1
				break
			}
			i += 1 + j
		}
		if i < 0 {
			lx.emit(token{kind: tData, s: rest})
			lx.advance(len(rest))
			return nil
		}
		text := rest[:i]
		tag := rest[i:]
		var sign byte
		if len(tag) > 2 && (tag[2] == '-' || tag[2] == '+') {
			sign = tag[2]
		}
		// {% raw %}
		if n, rsign, ok := rawTag(tag, "raw"); ok && (strings.HasPrefix(tag[n:], "%}") || strings.HasPrefix(tag[n:], "-%}")) {
			text = lx.stripText(text, rsign, false)
			if text != "" {
				lx.emit(token{kind: tData, s: text})
			}
			lx.advance(i)
			if err := lx.raw(n); err != nil {
				return err
			}
			continue
		}
		text = lx.stripText(text, sign, tag[1] == '{')
		if text != "" {
			lx.emit(token{kind: tData, s: text})
		}
		lx.advance(i)
		open := 2
		if sign != 0 {
			open = 3
		}
		switch tag[1] {
		case '#':
			lx.advance(open)
			if err := lx.comment(); err != nil {
				return err
			}
		case '{':
			lx.emit(token{kind: tVarBegin})
			lx.advance(open)
			if err := lx.inside(false); err != nil {
				return err
			}
		default:
			lx.emit(token{kind: tBlockBegin})
			lx.advance(open)
			if err := lx.inside(true); err != nil {
				return err
			}
		}
	}
	return nil
}

// raw reads a raw block from lx.pos, whose opening tag is n bytes long.
func (lx *lexer) raw(n int) error {
	if lx.src[lx.pos+n] == '-' {
		n += 3
		n += skipSpace(lx.src[lx.pos+n:])
	} else {
		n += 2
	}
	lx.advance(n)
	rest := lx.src[lx.pos:]
	for i := 0; i < len(rest); i++ {
		if rest[i] != '{' {
			continue
		}
		m, sign, ok := rawTag(rest[i:], "endraw")
		if !ok {
			continue
		}
		after := rest[i+m:]
		switch {
		case strings.HasPrefix(after, "+%}"):
			m += 3
		case strings.HasPrefix(after, "-%}"):
			m += 3
			m += skipSpace(rest[i+m:])
		case strings.HasPrefix(after, "%}"):
			m += 2
			if strings.HasPrefix(rest[i+m:], "\n") {
				m++
			}
		default:
			continue
		}
		text := lx.stripText(rest[:i], sign, false)
		if text != "" {
			lx.emit(token{kind: tData, s: text})
		}
		lx.lstart = strings.HasSuffix(rest[:i+m], "\n")
		lx.advance(i + m)
		return nil
	}
	return lx.errorf("Missing end of raw directive")
}

func (lx *lexer) comment() error {
	rest := lx.src[lx.pos:]
	for i := 0; i < len(rest); i++ {
		switch {
		case strings.HasPrefix(rest[i:], "+#}"):
			lx.finishTag(i + 3)
			return nil
		case strings.HasPrefix(rest[i:], "-#}"):
			n := i + 3
			n += skipSpace(rest[n:])
			lx.finishTag(n)
			return nil
		case strings.HasPrefix(rest[i:], "#}"):
			n := i + 2
			if strings.HasPrefix(rest[n:], "\n") {
				n++
			}
			lx.finishTag(n)
			return nil
		}
	}
	return lx.errorf("Missing end of comment tag")
}

func (lx *lexer) finishTag(n int) {
	lx.lstart = strings.HasSuffix(lx.src[lx.pos:lx.pos+n], "\n")
	lx.advance(n)
}

var operators = []string{"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}",
	">", "<", "=", ".", ":", "|", ",", ";"}

// inside reads the tokens of a {% %} (block) or {{ }} tag up to its end.
func (lx *lexer) inside(block bool) error {
	lx.depth = lx.depth[:0]
	for {
		if lx.pos >= len(lx.src) {
			if block {
				return lx.errorf("unexpected end of template, expected end of statement block")
			}
			return lx.errorf("unexpected end of template, expected end of print statement")
		}
		rest := lx.src[lx.pos:]
		if len(lx.depth) == 0 {
			if block {
				switch {
				case strings.HasPrefix(rest, "+%}"):
					lx.emit(token{kind: tBlockEnd})
					lx.finishTag(3)
					return nil
				case strings.HasPrefix(rest, "-%}"):
					lx.emit(token{kind: tBlockEnd})
					lx.finishTag(3 + skipSpace(rest[3:]))
					return nil
				case strings.HasPrefix(rest, "%}"):
					lx.emit(token{kind: tBlockEnd})
					n := 2
					if strings.HasPrefix(rest[2:], "\n") {
						n++
					}
					lx.finishTag(n)
					return nil
				}
			} else {
				switch {
				case strings.HasPrefix(rest, "-}}"):
					lx.emit(token{kind: tVarEnd})
					lx.finishTag(3 + skipSpace(rest[3:]))
					return nil
				case strings.HasPrefix(rest, "}}"):
					lx.emit(token{kind: tVarEnd})
					lx.finishTag(2)
					return nil
				}
			}
		}
		if n := skipSpace(rest); n > 0 {
			lx.finishTag(n)
			continue
		}
		if n, t, ok := lexNumber(rest, lx.pos > 0 && lx.src[lx.pos-1] == '.'); ok {
			lx.emit(t)
			lx.finishTag(n)
			continue
		}
		if r, _ := utf8.DecodeRuneInString(rest); r == '_' || unicode.IsLetter(r) {
			n := len(rest) - len(strings.TrimLeftFunc(rest, func(r rune) bool {
				return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
			}))
			lx.emit(token{kind: tName, s: rest[:n]})
			lx.finishTag(n)
			continue
		}
		if rest[0] == '\'' || rest[0] == '"' {
			n, s, err := lexString(rest)
			if err != nil {
				return lx.errorf("%v", err)
			}
			lx.emit(token{kind: tString, s: s})
			lx.finishTag(n)
			continue
		}
		op := ""
		for _, o := range operators {
			if strings.HasPrefix(rest, o) {
				op = o
				break
			}
		}
		if op == "" {
			r, _ := utf8.DecodeRuneInString(rest)
			return lx.errorf("unexpected char %s at %d", pyStringRepr(string(r)), lx.pos)
		}
		switch op {
		case "(", "[", "{":
			lx.depth = append(lx.depth, map[string]byte{"(": ')', "[": ']', "{": '}'}[op])
		case ")", "]", "}":
			if len(lx.depth) == 0 {
				return lx.errorf("unexpected '%s'", op)
			}
			want := lx.depth[len(lx.depth)-1]
			if want != op[0] {
				return lx.errorf("unexpected '%s', expected '%c'", op, want)
			}
			lx.depth = lx.depth[:len(lx.depth)-1]
		}
		lx.emit(token{kind: tOp, s: op})
		lx.finishTag(len(op))
	}
}

// lexNumber reads a float or integer literal at the start of s, as
// jinja2's float_re and integer_re do (underscores between digits).
func lexNumber(s string, afterDot bool) (int, token, bool) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, token{}, false
	}
	digits := func(i int) int { // (\d+_)*\d+ from i; returns the end, or i
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i {
			return i
		}
		for j+1 < len(s) && s[j] == '_' && s[j+1] >= '0' && s[j+1] <= '9' {
			j++
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
		}
		return j
	}
	if !afterDot {
		i := digits(0)
		j := i
		frac := false
		if j < len(s) && s[j] == '.' {
			if k := digits(j + 1); k > j+1 {
				j, frac = k, true
			}
		}
		exp := false
		if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
			k := j + 1
			if k < len(s) && (s[k] == '+' || s[k] == '-') {
				k++
			}
			if m := digits(k); m > k {
				j, exp = m, true
			}
		}
		if frac || exp {
			f, err := strconv.ParseFloat(strings.ReplaceAll(s[:j], "_", ""), 64)
			if err == nil {
				return j, token{kind: tFloat, f: f}, true
			}
		}
	}
	// integers: 0b, 0o, 0x, decimal
	if len(s) > 2 && s[0] == '0' {
		base := map[byte]int{'b': 2, 'B': 2, 'o': 8, 'O': 8, 'x': 16, 'X': 16}[s[1]]
		if base != 0 {
			j := 2
			for j < len(s) && (isDigitIn(s[j], base) || (s[j] == '_' && j+1 < len(s) && isDigitIn(s[j+1], base))) {
				j++
			}
			if j > 2 {
				n, err := strconv.ParseInt(strings.ReplaceAll(s[2:j], "_", ""), base, 64)
				if err != nil {
					return 0, token{}, false
				}
				return j, token{kind: tInt, n: n}, true
			}
		}
	}
	j := digits(0)
	if s[0] == '0' { // 0(_?0)*
		j = 1
		for j < len(s) && (s[j] == '0' || (s[j] == '_' && j+1 < len(s) && s[j+1] == '0')) {
			j++
		}
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s[:j], "_", ""), 10, 64)
	if err != nil {
		return 0, token{}, false
	}
	return j, token{kind: tInt, n: n}, true
}

func isDigitIn(c byte, base int) bool {
	switch base {
	case 2:
		return c == '0' || c == '1'
	case 8:
		return c >= '0' && c <= '7'
	}
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// lexString reads a quoted literal and decodes its escapes as Python's
// unicode-escape codec does (jinja2's way).
func lexString(s string) (int, string, error) {
	q := s[0]
	i := 1
	for i < len(s) && s[i] != q {
		if s[i] == '\\' {
			i++
		}
		i++
	}
	if i >= len(s) {
		return 0, "", errorf(ErrSyntax, "unexpected char %s", pyStringRepr(string(q)))
	}
	body := s[1:i]
	if strings.IndexByte(body, '\\') < 0 {
		return i + 1, body, nil
	}
	var b strings.Builder
	for j := 0; j < len(body); j++ {
		c := body[j]
		if c != '\\' || j+1 >= len(body) {
			b.WriteByte(c)
			continue
		}
		j++
		switch e := body[j]; e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if j+1+n > len(body) {
				return 0, "", errorf(ErrSyntax, "truncated \\%cXX escape", e)
			}
			v, err := strconv.ParseUint(body[j+1:j+1+n], 16, 32)
			if err != nil || v > unicode.MaxRune {
				return 0, "", errorf(ErrSyntax, "truncated \\%cXX escape", e)
			}
			b.WriteRune(rune(v))
			j += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			k := j
			for k < len(body) && k < j+3 && body[k] >= '0' && body[k] <= '7' {
				k++
			}
			v, _ := strconv.ParseUint(body[j:k], 8, 32)
			b.WriteRune(rune(v))
			j = k - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return i + 1, b.String(), nil
}
