package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/smolgo/smolgo/internal/chatfmt"
)

// pyString renders a JSON value the way jinja's `| string` filter prints the
// Python object json.loads would make of it: a string as itself, anything
// else as Python's repr ({'a': True, 'b': None, 'c': [1, 2.5]}), with object
// keys in their JSON order.
func pyString(raw json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("invalid JSON: %w", err)
	}
	if s, ok := tok.(string); ok {
		b.WriteString(s)
	} else if err := pyRepr(&b, dec, tok, 0); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err == nil {
		return "", fmt.Errorf("invalid JSON: more than one value")
	}
	return b.String(), nil
}

const maxDepth = 1000

// pyRepr writes the Python repr of the value that starts with tok.
func pyRepr(b *strings.Builder, dec *json.Decoder, tok json.Token, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("JSON nested deeper than %d", maxDepth)
	}
	switch v := tok.(type) {
	case json.Delim:
		closing, open := json.Delim('}'), "{"
		if v == '[' {
			closing, open = ']', "["
		}
		b.WriteString(open)
		for i := 0; ; i++ {
			t, err := dec.Token()
			if err != nil {
				return fmt.Errorf("invalid JSON: %w", err)
			}
			if t == closing {
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			if closing == '}' {
				writePyStr(b, t.(string)) // object keys are strings
				b.WriteString(": ")
				if t, err = dec.Token(); err != nil {
					return fmt.Errorf("invalid JSON: %w", err)
				}
			}
			if err := pyRepr(b, dec, t, depth+1); err != nil {
				return err
			}
		}
		b.WriteString(string(closing))
	case string:
		writePyStr(b, v)
	case json.Number:
		b.WriteString(pyNumber(v))
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case nil:
		b.WriteString("None")
	}
	return nil
}

// pyNumber is repr() of the int or float json.loads makes of n.
func pyNumber(n json.Number) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if s == "-0" {
			return "0"
		}
		return s // Python ints are exact
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil { // out of range: Python gives inf
		if strings.HasPrefix(s, "-") {
			return "-inf"
		}
		return "inf"
	}
	// repr(float): shortest digits; fixed notation when the decimal point
	// position is in (-4, 16], else d.ddde±XX.
	return chatfmt.ShortestFloat(f, 16)
}

// writePyStr writes repr() of a Python str: single quotes unless the text
// has a single quote and no double quote; backslash escapes for the quote,
// backslash, \t \n \r, and \x/\u/\U for characters that are not printable.
func writePyStr(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == utf8.RuneError:
			b.WriteRune(r)
		case r < 0x20 || r == 0x7F:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < utf8.RuneSelf || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xFF:
			fmt.Fprintf(b, `\x%02x`, r)
		case r <= 0xFFFF:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
}
