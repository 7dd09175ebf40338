package chat

import (
	"encoding/json"
	"strings"

	"github.com/smolgo/smolgo/internal/chatfmt"
)

// types is a set of JSON value types, what a schema allows a value to be.
type types uint8

const (
	tNull types = 1 << iota
	tBool
	tInteger
	tNumber
	tString
	tArray
	tObject
	tAll = tNull | tBool | tInteger | tNumber | tString | tArray | tObject
)

func (t types) has(u types) bool { return t&u != 0 }

// typeOf is the type of a JSON value (an integer literal counts as an
// integer).
func typeOf(v chatfmt.Value) types {
	switch v.Kind {
	case chatfmt.Null:
		return tNull
	case chatfmt.Bool:
		return tBool
	case chatfmt.Number:
		if strings.ContainsAny(string(v.Number), ".eE") {
			return tNumber
		}
		return tInteger
	case chatfmt.String:
		return tString
	case chatfmt.Array:
		return tArray
	}
	return tObject
}

// maxRefDepth bounds $ref chains.
const maxRefDepth = 32

// schemaTypes is the set of types a JSON schema allows, as llama.cpp reads
// it (common/json-schema.cpp, value_types): a $ref is its target's (a
// local one, #/$defs/... or #/definitions/..., inside root), oneOf and
// anyOf the union of their members', a list of types the union, a const or
// an enum the types of its values, "number" both number and integer; with
// no type, properties make an object, allOf the intersection of its
// members', items an array, pattern, minLength, maxLength or format a
// string; anything else allows every type.
func schemaTypes(s, root chatfmt.Value, depth int) types {
	if s.Kind != chatfmt.Object || depth > maxRefDepth {
		return tAll
	}
	if ref, ok := s.Get("$ref"); ok {
		target, ok := resolve(root, ref)
		if !ok {
			return tAll
		}
		return schemaTypes(target, root, depth+1)
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := s.Get(k); ok && alts.Kind == chatfmt.Array {
			var t types
			for _, a := range alts.Items {
				t |= schemaTypes(a, root, depth+1)
			}
			return t
		}
	}
	typ, _ := s.Get("type")
	if typ.Kind == chatfmt.Array {
		var t types
		for _, x := range typ.Items {
			if x.Kind == chatfmt.String {
				t |= named(x.Str)
			}
		}
		return t
	}
	if c, ok := s.Get("const"); ok {
		return typeOf(c)
	}
	if e, ok := s.Get("enum"); ok && e.Kind == chatfmt.Array {
		var t types
		for _, x := range e.Items {
			t |= typeOf(x)
		}
		return t
	}
	if typ.Kind == chatfmt.String {
		return named(typ.Str)
	}
	has := func(k string) bool { _, ok := s.Get(k); return ok }
	switch {
	case has("properties") || has("additionalProperties"):
		return tObject
	case has("allOf"):
		all, _ := s.Get("allOf")
		t := tAll
		for _, a := range all.Items {
			t &= schemaTypes(a, root, depth+1)
		}
		return t
	case has("items") || has("prefixItems"):
		return tArray
	case has("pattern") || has("minLength") || has("maxLength") || has("format"):
		return tString
	}
	return tAll
}

func named(t string) types {
	switch t {
	case "null":
		return tNull
	case "boolean":
		return tBool
	case "integer":
		return tInteger
	case "number":
		return tNumber | tInteger
	case "string":
		return tString
	case "array":
		return tArray
	case "object":
		return tObject
	}
	return 0
}

// resolve finds a local $ref (#/a/b, JSON-pointer escapes ~0 and ~1) in
// root.
func resolve(root, ref chatfmt.Value) (chatfmt.Value, bool) {
	if ref.Kind != chatfmt.String {
		return chatfmt.Value{}, false
	}
	path, ok := strings.CutPrefix(ref.Str, "#")
	if !ok {
		return chatfmt.Value{}, false
	}
	v := root
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		if v, ok = v.Get(part); !ok {
			return chatfmt.Value{}, false
		}
	}
	return v, true
}

// function is a tool as the parser and the grammar need it: its name, its
// parameters schema, and each parameter's schema and types, in order.
type function struct {
	name     string
	root     chatfmt.Value // the parameters schema
	params   []param
	byName   map[string]int
	required map[string]bool
}

type param struct {
	name   string
	schema chatfmt.Value
	types  types
}

// readFunction reads a tool in the OpenAI form or a bare function object.
func readFunction(raw json.RawMessage) (function, bool) {
	v, err := chatfmt.Parse(raw)
	if err != nil {
		return function{}, false
	}
	if fn, ok := v.Get("function"); ok {
		v = fn
	}
	name, ok := v.Get("name")
	if !ok || name.Kind != chatfmt.String || name.Str == "" {
		return function{}, false
	}
	f := function{name: name.Str, byName: map[string]int{}, required: map[string]bool{}}
	f.root, _ = v.Get("parameters")
	if props, ok := f.root.Get("properties"); ok && props.Kind == chatfmt.Object {
		for i, k := range props.Keys {
			f.byName[k] = len(f.params)
			f.params = append(f.params, param{name: k, schema: props.Items[i], types: schemaTypes(props.Items[i], f.root, 0)})
		}
	}
	if req, ok := f.root.Get("required"); ok && req.Kind == chatfmt.Array {
		for _, x := range req.Items {
			if x.Kind == chatfmt.String {
				f.required[x.Str] = true
			}
		}
	}
	return f, true
}

// typesOf is the types a call's parameter may have: its schema's, or any
// for a parameter the function does not declare.
func (f *function) typesOf(name string) types {
	if f == nil {
		return tAll
	}
	if i, ok := f.byName[name]; ok {
		return f.params[i].types
	}
	return tAll
}
