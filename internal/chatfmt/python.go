package chatfmt

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PyStr is Python's str(v), what jinja2 prints for a value and what its
// join filter joins: a string as it is, True, False and None, numbers as
// Python prints the int or float they parse to, containers as their repr.
func PyStr(v Value) string {
	if v.Kind == String {
		return v.Str
	}
	var b strings.Builder
	pyRepr(&b, v)
	return b.String()
}

func pyRepr(b *strings.Builder, v Value) {
	switch v.Kind {
	case Null:
		b.WriteString("None")
	case Bool:
		if v.Bool {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case Number:
		switch s := dumpPython(v); s {
		case "Infinity":
			b.WriteString("inf")
		case "-Infinity":
			b.WriteString("-inf")
		default:
			b.WriteString(s)
		}
	case String:
		reprString(b, v.Str)
	case Array:
		b.WriteByte('[')
		for i, x := range v.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			pyRepr(b, x)
		}
		b.WriteByte(']')
	case Object:
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			reprString(b, k)
			b.WriteString(": ")
			pyRepr(b, v.Items[i])
		}
		b.WriteByte('}')
	}
}

// reprString is Python's repr of a str: single quotes unless the text has
// one and no double quote, printable characters as they are, the others
// escaped.
func reprString(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\\' || r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || r != utf8.RuneError && unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
}

func dumpPython(v Value) string {
	var b strings.Builder
	v.Dump(&b, Python, -1)
	return b.String()
}
