package chatfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Value is a JSON value as Python's json.loads (or nlohmann::json's parse)
// holds it: objects keep their keys in order, a repeated key keeps its first
// place and its last value, numbers keep their text.
type Value struct {
	Kind   Kind
	Str    string      // String; Number: the literal
	Bool   bool        // Bool
	Keys   []string    // Object
	Items  []Value     // Object (values, beside Keys) and Array
	Number json.Number // Number
}

// Kind is the type of a Value.
type Kind int

// The kinds of JSON values.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// Get returns the value of key in an object.
func (v Value) Get(key string) (Value, bool) {
	if v.Kind != Object {
		return Value{}, false
	}
	for i, k := range v.Keys {
		if k == key {
			return v.Items[i], true
		}
	}
	return Value{}, false
}

// MaxDepth bounds the nesting of the JSON values read.
const MaxDepth = 1000

// Parse reads one JSON value.
func Parse(raw []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return Value{}, fmt.Errorf("invalid JSON: %w", err)
	}
	v, err := parseValue(dec, tok, 0)
	if err != nil {
		return Value{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Value{}, errors.New("invalid JSON: more than one value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder, tok json.Token, depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, fmt.Errorf("JSON nested deeper than %d", MaxDepth)
	}
	switch t := tok.(type) {
	case nil:
		return Value{Kind: Null}, nil
	case bool:
		return Value{Kind: Bool, Bool: t}, nil
	case json.Number:
		return Value{Kind: Number, Number: t}, nil
	case string:
		return Value{Kind: String, Str: t}, nil
	case json.Delim:
		v := Value{Kind: Array}
		if t == '{' {
			v.Kind = Object
		}
		for {
			tok, err := dec.Token()
			if err != nil {
				return Value{}, fmt.Errorf("invalid JSON: %w", err)
			}
			if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
				return v, nil
			}
			key := ""
			if v.Kind == Object {
				key = tok.(string) // the decoder only gives strings here
				if tok, err = dec.Token(); err != nil {
					return Value{}, fmt.Errorf("invalid JSON: %w", err)
				}
			}
			item, err := parseValue(dec, tok, depth+1)
			if err != nil {
				return Value{}, err
			}
			if v.Kind == Object {
				if i := indexOf(v.Keys, key); i >= 0 {
					v.Items[i] = item
					continue
				}
				v.Keys = append(v.Keys, key)
			}
			v.Items = append(v.Items, item)
		}
	}
	return Value{}, fmt.Errorf("invalid JSON token %v", tok)
}

func indexOf(keys []string, k string) int {
	for i, x := range keys {
		if x == k {
			return i
		}
	}
	return -1
}

// Style says how Dump prints.
type Style int

const (
	// Python is json.dumps(v, ensure_ascii=False), the tojson filter of
	// Hugging Face's chat templates: ", " and ": " on one line, or the given
	// indent; floats as Python's repr.
	Python Style = iota
	// Nlohmann is nlohmann::json's dump(indent): "," and ":" on one line
	// (not used), or the given indent; floats fixed while the decimal
	// point is within 15 digits.
	Nlohmann
	// Minja is minja::Value's dump(indent, to_json=true), which llama.cpp's
	// template polyfills print tool lists with: like Nlohmann, except that
	// an empty array or object still gets its line breaks ("[\n  \n]").
	Minja
)

// Dumps parses raw and prints it in style, with indent spaces per level
// (indent < 0: on one line).
func Dumps(raw []byte, style Style, indent int) (string, error) {
	v, err := Parse(raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	v.Dump(&b, style, indent)
	return b.String(), nil
}

// Dump prints v.
func (v Value) Dump(b *strings.Builder, style Style, indent int) {
	v.dump(b, style, indent, 0)
}

func (v Value) dump(b *strings.Builder, style Style, indent, level int) {
	switch v.Kind {
	case Null:
		b.WriteString("null")
	case Bool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case Number:
		b.WriteString(formatNumber(v.Number, style))
	case String:
		WriteJSONString(b, v.Str)
	case Array, Object:
		open, closing := "[", "]"
		if v.Kind == Object {
			open, closing = "{", "}"
		}
		b.WriteString(open)
		if len(v.Items) == 0 && !(style == Minja && indent >= 0) {
			b.WriteString(closing)
			return
		}
		newline := func(level int) {
			if indent >= 0 {
				b.WriteByte('\n')
				b.WriteString(strings.Repeat(" ", level*indent))
			}
		}
		newline(level + 1)
		for i, item := range v.Items {
			if i > 0 {
				b.WriteByte(',')
				if indent < 0 {
					b.WriteByte(' ')
				}
				newline(level + 1)
			}
			if v.Kind == Object {
				WriteJSONString(b, v.Keys[i])
				b.WriteString(": ")
			}
			item.dump(b, style, indent, level+1)
		}
		newline(level)
		b.WriteString(closing)
	}
}

// WriteJSONString writes s as a JSON string the way json.dumps with
// ensure_ascii=False (and nlohmann::json) does: only the quote, the
// backslash and control characters are escaped.
func WriteJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
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
	}
	b.WriteByte('"')
}

// JSONString is WriteJSONString's result.
func JSONString(s string) string {
	var b strings.Builder
	WriteJSONString(&b, s)
	return b.String()
}

// formatNumber prints the int or float that a JSON number literal parses to.
func formatNumber(n json.Number, style Style) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if strings.TrimLeft(s, "-0") == "" {
			return "0" // Python's int("-0") is 0
		}
		if style != Python {
			// nlohmann keeps integers that fit 64 bits; a larger one
			// is a double.
			if _, err := strconv.ParseInt(s, 10, 64); err != nil {
				if _, err := strconv.ParseUint(s, 10, 64); err != nil {
					return formatFloat(s, style)
				}
			}
		}
		return s // Python ints are exact
	}
	return formatFloat(s, style)
}

// formatFloat prints a float as Python's repr (fixed notation while the
// decimal point is within 16 digits) or nlohmann's dump (within 15), else
// as d.ddde±XX.
func formatFloat(s string, style Style) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) { // out of range
		if style != Python {
			return "null" // nlohmann dumps infinities as null
		}
		if strings.HasPrefix(s, "-") {
			return "-Infinity"
		}
		return "Infinity"
	}
	maxDecpt := 16
	if style != Python {
		maxDecpt = 15
	}
	return ShortestFloat(f, maxDecpt)
}

// ShortestFloat prints a finite f with the shortest digits that read back
// as f, in fixed notation while the decimal point is within maxDecpt digits
// (and not more than 4 places after the point's left of the first digit),
// else as d.ddde±XX: Python's float repr with maxDecpt 16, nlohmann's JSON
// dump with 15.
func ShortestFloat(f float64, maxDecpt int) string {
	e := strconv.FormatFloat(f, 'e', -1, 64) // "-1.2345e+06"
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	neg := strings.HasPrefix(mant, "-")
	digits := strings.Replace(strings.TrimPrefix(mant, "-"), ".", "", 1)
	decpt := x + 1
	var out string
	switch {
	case decpt > -4 && decpt <= maxDecpt:
		if decpt <= 0 {
			out = "0." + strings.Repeat("0", -decpt) + digits
		} else if decpt >= len(digits) {
			out = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		} else {
			out = digits[:decpt] + "." + digits[decpt:]
		}
	default:
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		sign := "+"
		if x < 0 {
			sign, x = "-", -x
		}
		out += fmt.Sprintf("e%s%02d", sign, x)
	}
	if neg {
		out = "-" + out
	}
	return out
}
