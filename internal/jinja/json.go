package jinja

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FromJSON decodes a JSON text into a value as Python's json.loads does:
// objects keep their keys' order, integers stay integers.
func FromJSON(data []byte) (Value, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeJSON(d, 0)
	if err != nil {
		return Value{}, fmt.Errorf("jinja: JSON: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return Value{}, fmt.Errorf("jinja: JSON: data after the value")
	}
	return v, nil
}

// MustJSON is FromJSON for literals known to be valid; it panics otherwise.
func MustJSON(s string) Value {
	v, err := FromJSON([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

const maxJSONDepth = 1000

func decodeJSON(d *json.Decoder, depth int) (Value, error) {
	if depth > maxJSONDepth {
		return Value{}, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	t, err := d.Token()
	if err != nil {
		return Value{}, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '[':
			var items []Value
			for d.More() {
				v, err := decodeJSON(d, depth+1)
				if err != nil {
					return Value{}, err
				}
				items = append(items, v)
			}
			if _, err := d.Token(); err != nil {
				return Value{}, err
			}
			return ListOf(items...), nil
		case '{':
			out := NewDict()
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return Value{}, err
				}
				v, err := decodeJSON(d, depth+1)
				if err != nil {
					return Value{}, err
				}
				out.Set(k.(string), v)
			}
			if _, err := d.Token(); err != nil {
				return Value{}, err
			}
			return DictValue(out), nil
		}
		return Value{}, fmt.Errorf("unexpected %v", t)
	case string:
		return String(t), nil
	case json.Number:
		if !strings.ContainsAny(string(t), ".eE") {
			if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
				return Int(i), nil
			}
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return Value{}, err
		}
		return Float(f), nil
	case bool:
		return Bool(t), nil
	case nil:
		return None(), nil
	}
	return Value{}, fmt.Errorf("unexpected token %v", t)
}

// jsonOptions are json.dumps' arguments that chat templates pass.
type jsonOptions struct {
	ensureASCII bool
	indent      *string // nil: one line
	itemSep     string
	keySep      string
	sortKeys    bool
}

// toJSON is Python's json.dumps(v, ...) (transformers' tojson filter).
func (r *renderer) toJSON(v Value, o jsonOptions) (string, error) {
	var b strings.Builder
	if err := r.writeJSON(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (r *renderer) writeJSON(b *strings.Builder, v Value, o jsonOptions, level int) error {
	if level > maxJSONDepth {
		return errorf(ErrType, "maximum recursion depth exceeded while encoding a JSON object")
	}
	if err := r.checkLen(b.Len()); err != nil {
		return err
	}
	newline := func(l int) {
		if o.indent != nil {
			b.WriteByte('\n')
			for range l {
				b.WriteString(*o.indent)
			}
		}
	}
	switch v.kind {
	case KindNone:
		b.WriteString("null")
	case KindBool:
		if v.n != 0 {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case KindInt:
		b.WriteString(strconv.FormatInt(v.n, 10))
	case KindFloat:
		b.WriteString(jsonFloat(v.f))
	case KindString:
		writeJSONString(b, v.s, o.ensureASCII)
	case KindList, KindTuple:
		if l := v.ref.(*List); l.view != "" {
			return errorf(ErrType, "Object of type %s is not JSON serializable", v.TypeName())
		}
		items := v.list()
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, x := range items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(level + 1)
			if err := r.writeJSON(b, x, o, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte(']')
	case KindDict:
		d := v.dict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		order := make([]int, d.Len())
		keys := make([]string, d.Len())
		for i, k := range d.keys {
			order[i] = i
			switch k.kind {
			case KindString:
				keys[i] = k.s
			case KindInt, KindBool, KindFloat, KindNone:
				var kb strings.Builder
				r.writeJSON(&kb, k, o, level+1)
				keys[i] = kb.String()
			default:
				return errorf(ErrType, "keys must be str, int, float, bool or None, not %s", k.TypeName())
			}
		}
		if o.sortKeys {
			for _, k := range d.keys {
				if k.kind != KindString {
					return errorf(ErrType, "'<' not supported between instances of mixed key types")
				}
			}
			sort.SliceStable(order, func(i, j int) bool { return keys[order[i]] < keys[order[j]] })
		}
		b.WriteByte('{')
		for n, i := range order {
			if n > 0 {
				b.WriteString(o.itemSep)
			}
			newline(level + 1)
			writeJSONString(b, keys[i], o.ensureASCII)
			b.WriteString(o.keySep)
			if err := r.writeJSON(b, d.vals[i], o, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte('}')
	default:
		return errorf(ErrType, "Object of type %s is not JSON serializable", v.TypeName())
	}
	return nil
}

func jsonFloat(f float64) string {
	switch s := pyFloat(f); s {
	case "inf":
		return "Infinity"
	case "-inf":
		return "-Infinity"
	case "nan":
		return "NaN"
	default:
		return s
	}
}

// writeJSONString quotes s as Python's json.dumps does: \" \\ \n \r \t \b
// \f, other control characters as \u00XX, and with ensureASCII every
// non-ASCII character as \uXXXX (surrogate pairs above U+FFFF).
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			default:
				if c < 0x20 {
					fmt.Fprintf(b, `\u%04x`, c)
				} else {
					b.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !ensureASCII {
			b.WriteString(s[i : i+n])
		} else if r >= 0x10000 {
			r -= 0x10000
			fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		} else {
			fmt.Fprintf(b, `\u%04x`, r)
		}
		i += n
	}
	b.WriteByte('"')
}
