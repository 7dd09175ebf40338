package chat

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/smolgo/smolgo/internal/chatfmt"
)

// value is a JSON value as the template's expressions see it under jinja2:
// a lookup of a missing key (or any key of a value that is not an object)
// is undefined, which is false, equal to nothing and prints as nothing.
type value struct {
	v       chatfmt.Value
	defined bool
}

func defined(v chatfmt.Value) value { return value{v: v, defined: true} }

// attr is v.name and v['name'] (the template's tool schemas never name a
// method of dict, list or str, which jinja2 would find first).
func (v value) attr(name string) value {
	if !v.defined {
		return value{}
	}
	x, ok := v.v.Get(name)
	return value{v: x, defined: ok}
}

// truthy is Python's bool(): undefined, null, false, zero, "" and empty
// containers are false.
func (v value) truthy() bool {
	if !v.defined {
		return false
	}
	switch v.v.Kind {
	case chatfmt.Bool:
		return v.v.Bool
	case chatfmt.Number:
		f, err := strconv.ParseFloat(string(v.v.Number), 64)
		return err != nil || f != 0 // an out-of-range literal is ±inf: true
	case chatfmt.String:
		return v.v.Str != ""
	case chatfmt.Array, chatfmt.Object:
		return len(v.v.Items) > 0
	}
	return false
}

// is reports whether v is the string s (Python's ==).
func (v value) is(s string) bool {
	return v.defined && v.v.Kind == chatfmt.String && v.v.Str == s
}

// iterate is Python's iteration over v (a for loop, join): an array's
// items, an object's keys, a string's characters. Anything else is not
// iterable, a TypeError.
func (v value) iterate() ([]chatfmt.Value, error) {
	switch {
	case !v.defined:
		return nil, nil // jinja2 iterates an undefined value as empty
	case v.v.Kind == chatfmt.Array:
		return v.v.Items, nil
	case v.v.Kind == chatfmt.Object:
		out := make([]chatfmt.Value, len(v.v.Keys))
		for i, k := range v.v.Keys {
			out[i] = chatfmt.Value{Kind: chatfmt.String, Str: k}
		}
		return out, nil
	case v.v.Kind == chatfmt.String:
		var out []chatfmt.Value
		for _, r := range v.v.Str {
			out = append(out, chatfmt.Value{Kind: chatfmt.String, Str: string(r)})
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s is not iterable", pyType(v.v))
}

// contains is Python's name in v for the template's `name in (v or [])`:
// a list holds name as an element, an object as a key, a string as a
// substring; a false v is the empty list.
func (v value) contains(name string) (bool, error) {
	if !v.truthy() {
		return false, nil
	}
	switch v.v.Kind {
	case chatfmt.Array:
		for _, x := range v.v.Items {
			if x.Kind == chatfmt.String && x.Str == name {
				return true, nil
			}
		}
		return false, nil
	case chatfmt.Object:
		_, ok := v.v.Get(name)
		return ok, nil
	case chatfmt.String:
		return strings.Contains(v.v.Str, name), nil
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", pyType(v.v))
}

// concat is the template's "text" + v: Python adds only a str to a str.
func concat(v value) (string, error) {
	if !v.defined {
		return "", fmt.Errorf("a template variable is undefined")
	}
	if v.v.Kind != chatfmt.String {
		return "", fmt.Errorf(`can only concatenate str (not "%s") to str`, pyType(v.v))
	}
	return v.v.Str, nil
}

func pyType(v chatfmt.Value) string {
	switch v.Kind {
	case chatfmt.Null:
		return "NoneType"
	case chatfmt.Bool:
		return "bool"
	case chatfmt.Number:
		if strings.ContainsAny(string(v.Number), ".eE") {
			return "float"
		}
		return "int"
	case chatfmt.String:
		return "str"
	case chatfmt.Array:
		return "list"
	}
	return "dict"
}

// tojson is the template's tojson filter: json.dumps(v, ensure_ascii=False).
func tojson(v chatfmt.Value) string {
	var b strings.Builder
	v.Dump(&b, chatfmt.Python, -1)
	return b.String()
}
