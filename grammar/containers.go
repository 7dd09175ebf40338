package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Arrays and objects of JSON schemas.

func (sc *schemaCompiler) array(s map[string]json.RawMessage, where string, depth int) (string, error) {
	// Tuples: prefixItems, then items for the rest (2020-12), or items as
	// an array, then additionalItems (drafts 4 to 2019-09).
	var prefix []json.RawMessage
	prefixKey, restKey := "prefixItems", "items"
	if v, ok := s["items"]; ok && bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
		prefixKey, restKey = "items", "additionalItems"
	} else if _, ok := s["additionalItems"]; ok {
		return "", errAt(where+"/additionalItems", "is only supported beside items as an array")
	}
	if v, ok := s[prefixKey]; ok {
		if err := json.Unmarshal(v, &prefix); err != nil || len(prefix) > maxRepeat {
			return "", errAt(where+"/"+prefixKey, "must be an array of at most %d schemas", maxRepeat)
		}
	}
	item := "value"
	if v, ok := s[restKey]; ok {
		if string(bytes.TrimSpace(v)) == "false" {
			item = ""
		} else {
			var err error
			if item, err = sc.compile(v, where+"/"+restKey, depth+1); err != nil {
				return "", err
			}
		}
	}
	lo, hi, err := bounds(s, "minItems", "maxItems", where)
	if err != nil {
		return "", err
	}
	k := len(prefix)
	if item == "" && (hi < 0 || hi > k) {
		hi = k
	}
	if hi >= 0 && lo > hi {
		return "", errAt(where, "minItems %d is more than the %d items allowed", lo, hi)
	}
	if k == 0 {
		switch {
		case hi == 0:
			return sc.rule(`"[" ws "]"`), nil
		case lo == 0:
			more := "*"
			if hi > 0 {
				more = repeat(0, hi-1)
			}
			return sc.rule(fmt.Sprintf(`"[" ws ( %s ws ( "," ws %s ws )%s )? "]"`, item, item, more)), nil
		}
		h := -1
		if hi > 0 {
			h = hi - 1
		}
		return sc.rule(fmt.Sprintf(`"[" ws %s ws ( "," ws %s ws )%s "]"`, item, item, repeat(lo-1, h))), nil
	}
	// tail is what follows the first i items, "]" included; built from the
	// end.
	last := k
	if hi >= 0 {
		last = min(k, hi)
	}
	tail := `"]"`
	if last == k && item != "" && (hi < 0 || hi > k) {
		h := -1
		if hi >= 0 {
			h = hi - k
		}
		tail = sc.rule(fmt.Sprintf(`( "," ws %s ws )%s "]"`, item, repeat(max(lo-k, 0), h)))
	}
	for i := last - 1; i >= 0; i-- {
		v, err := sc.compile(prefix[i], fmt.Sprintf("%s/%s/%d", where, prefixKey, i), depth+1)
		if err != nil {
			return "", err
		}
		elem := v + " ws " + tail
		if i > 0 {
			elem = `"," ws ` + elem
		}
		if i+1 > lo {
			// i+1 items are enough: the array may end before item i.
			elem = `"]" | ` + elem
		}
		tail = sc.rule(elem)
	}
	return sc.rule(`"[" ws ` + tail), nil
}

// maxObjectRules bounds the rules an object with minProperties or
// maxProperties takes (one per property and count).
const maxObjectRules = 1 << 16

func (sc *schemaCompiler) object(s map[string]json.RawMessage, where string, depth int) (string, error) {
	extra := "value"
	if v, ok := s["additionalProperties"]; ok {
		switch string(bytes.TrimSpace(v)) {
		case "false":
			extra = ""
		case "true":
		default:
			var err error
			if extra, err = sc.compile(v, where+"/additionalProperties", depth+1); err != nil {
				return "", err
			}
		}
	}
	var required []string
	if v, ok := s["required"]; ok {
		if err := json.Unmarshal(v, &required); err != nil {
			return "", errAt(where+"/required", "must be an array of property names")
		}
	}
	lo, hi, err := bounds(s, "minProperties", "maxProperties", where)
	if err != nil {
		return "", err
	}
	props, ok := s["properties"]
	if !ok {
		return sc.record(s, where, depth, extra, required, lo, hi)
	}
	if _, ok := s["propertyNames"]; ok {
		return "", errAt(where+"/propertyNames", "propertyNames beside properties is not supported")
	}
	names, err := objectKeys(props)
	if err != nil {
		return "", errAt(where+"/properties", "%v", err)
	}
	var propSchemas map[string]json.RawMessage
	if err := json.Unmarshal(props, &propSchemas); err != nil {
		return "", errAt(where+"/properties", "%v", err)
	}
	for _, r := range required {
		if _, ok := propSchemas[r]; !ok {
			return "", errAt(where+"/required", "required property %q is not in properties", r)
		}
	}
	var kvs []string
	var req []bool
	for _, name := range names {
		val, err := sc.compile(propSchemas[name], where+"/properties/"+jsonPointerEscape(name), depth+1)
		if err != nil {
			return "", err
		}
		key, _ := marshalNoEscape(name)
		kvs = append(kvs, gbnfLiteral(key)+` ws ":" ws `+val+" ws")
		req = append(req, slices.Contains(required, name))
	}
	return sc.properties(kvs, req, lo, hi, where)
}

// properties writes an object of the given properties, in their order,
// the optional ones possibly left out, with from lo to hi of them (hi < 0:
// no maximum). Additional properties are not generated.
//
// rest(i, c) is the rest of the object from property i on when c
// properties were written (so a comma comes first when c > 0); counts
// above what the bounds can tell apart are merged, so without bounds there
// are two rules per property.
func (sc *schemaCompiler) properties(kvs []string, required []bool, lo, hi int, where string) (string, error) {
	n := len(kvs)
	if lo > n {
		return "", errAt(where, "minProperties %d is more than the %d properties (additional properties are not generated beside properties)", lo, n)
	}
	top := max(lo, 1) // counts from here on are alike
	if hi >= 0 {
		top = hi
	}
	if (n+1)*(top+1) > maxObjectRules {
		return "", errAt(where, "%d properties with minProperties/maxProperties up to %d take too many rules", n, top)
	}
	// needed[i]: required properties from i on.
	needed := make([]int, n+1)
	for i := n - 1; i >= 0; i-- {
		needed[i] = needed[i+1]
		if required[i] {
			needed[i]++
		}
	}
	clamp := func(c int) int { return min(c, top) }
	// feasible: rest(i, c) can end between the bounds.
	feasible := func(i, c int) bool {
		return (hi < 0 || c+needed[i] <= hi) && c+n-i >= lo
	}
	next := make([]string, top+1) // rest(i+1, ·)
	cur := make([]string, top+1)
	for c := 0; c <= top; c++ {
		if c >= lo && feasible(n, c) {
			next[c] = `"}"`
		}
	}
	for i := n - 1; i >= 0; i-- {
		for c := 0; c <= top; c++ {
			cur[c] = ""
			if c > i || !feasible(i, c) {
				continue // unreachable, or cannot end well
			}
			var alts []string
			if (hi < 0 || c < hi) && next[clamp(c+1)] != "" {
				kv := kvs[i] + " " + next[clamp(c+1)]
				if c > 0 {
					kv = `"," ws ` + kv
				}
				alts = append(alts, kv)
			}
			if !required[i] && next[c] != "" {
				alts = append(alts, next[c])
			}
			if len(alts) > 0 {
				cur[c] = sc.rule(strings.Join(alts, " | "))
			}
		}
		next, cur = cur, next
	}
	if next[0] == "" {
		return "", errAt(where, "no object has between %d and %d of these properties with the required ones", lo, hi)
	}
	return sc.rule(`"{" ws ` + next[0]), nil
}

// record writes an object without declared properties: a map whose keys
// follow propertyNames and whose values follow additionalProperties.
func (sc *schemaCompiler) record(s map[string]json.RawMessage, where string, depth int, extra string, required []string, lo, hi int) (string, error) {
	if len(required) > 0 {
		return "", errAt(where+"/required", "required properties without a properties keyword are not supported")
	}
	if extra == "" {
		hi = 0
	}
	if hi >= 0 && lo > hi {
		return "", errAt(where, "minProperties %d is more than the %d properties allowed", lo, hi)
	}
	key := "string"
	if v, ok := s["propertyNames"]; ok {
		names, err := sc.propertyNames(v, where+"/propertyNames", depth)
		if err != nil {
			return "", err
		}
		if names != nil {
			// A fixed set of keys is an object of optional properties: each
			// key at most once, so that the counts hold.
			if extra == "" {
				extra = "value"
			}
			var kvs []string
			for _, name := range names {
				kvs = append(kvs, gbnfLiteral(name)+` ws ":" ws `+extra+" ws")
			}
			return sc.properties(kvs, make([]bool, len(kvs)), lo, hi, where)
		}
		if key, err = sc.compile(v, where+"/propertyNames", depth+1); err != nil {
			return "", err
		}
	}
	if hi == 0 {
		return sc.rule(`"{" ws "}"`), nil
	}
	if lo > 1 {
		// Free keys may repeat, and a repeated key counts once.
		return "", errAt(where+"/minProperties", "minProperties above 1 is only supported with properties or a propertyNames enum (free keys could repeat)")
	}
	if extra == "value" && key == "string" && lo == 0 && hi < 0 {
		return "object", nil
	}
	kv := key + ` ws ":" ws ` + extra + " ws"
	more := "*"
	if hi > 0 {
		more = repeat(0, hi-1)
	}
	body := kv + ` ( "," ws ` + kv + ` )` + more
	if lo == 0 {
		body = "( " + body + " )?"
	}
	return sc.rule(`"{" ws ` + body + ` "}"`), nil
}

// propertyNames checks that a propertyNames schema is about strings. For a
// const or an enum it returns the keys (as JSON strings); for other
// schemas nil, and the caller compiles them.
func (sc *schemaCompiler) propertyNames(v json.RawMessage, where string, depth int) ([][]byte, error) {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, errAt(where, "must be a schema object")
	}
	var vals []json.RawMessage
	if c, ok := s["const"]; ok {
		vals = []json.RawMessage{c}
	} else if e, ok := s["enum"]; ok {
		if err := json.Unmarshal(e, &vals); err != nil {
			return nil, errAt(where+"/enum", "must be an array")
		}
	}
	if vals != nil {
		var keys [][]byte
		for i, x := range vals {
			var name string
			if err := json.Unmarshal(x, &name); err != nil {
				return nil, errAt(fmt.Sprintf("%s/enum/%d", where, i), "property names are strings")
			}
			key, _ := marshalNoEscape(name)
			if !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) }) {
				keys = append(keys, key)
			}
		}
		return keys, nil
	}
	for k, x := range s {
		switch k {
		case "type":
			if string(bytes.TrimSpace(x)) != `"string"` {
				return nil, errAt(where+"/type", "property names are strings")
			}
		case "pattern", "format", "minLength", "maxLength":
		default:
			if slices.Contains(schemaKeywords, k) {
				return nil, errAt(where, "keyword %q is not supported in propertyNames (supported: type string, pattern, format, minLength, maxLength, const, enum)", k)
			}
		}
	}
	return nil, nil
}

// A shape is what checkDisjoint knows of a schema: the JSON types its
// values may have, the values themselves when it lists them (const, enum),
// and for objects the listed values of required properties (the tags of a
// discriminated union).
type shape struct {
	types  uint8    // bit per jsonType
	values []string // compact JSON; nil: not listed
	tags   map[string][]string
}

var jsonTypes = []string{"object", "array", "string", "number", "boolean", "null"}

const allTypes = 1<<6 - 1

func typeBit(t string) uint8 {
	if t == "integer" {
		t = "number"
	}
	if i := slices.Index(jsonTypes, t); i >= 0 {
		return 1 << i
	}
	return allTypes
}

// valueShape is the shape of the values listed by const or enum.
func valueShape(vals []json.RawMessage) shape {
	sh := shape{values: []string{}}
	for _, v := range vals {
		var x any
		if json.Unmarshal(v, &x) != nil {
			return shape{types: allTypes}
		}
		b, _ := marshalNoEscape(x)
		sh.values = append(sh.values, string(b))
		switch x.(type) {
		case map[string]any:
			sh.types |= typeBit("object")
		case []any:
			sh.types |= typeBit("array")
		case string:
			sh.types |= typeBit("string")
		case float64:
			sh.types |= typeBit("number")
		case bool:
			sh.types |= typeBit("boolean")
		default:
			sh.types |= typeBit("null")
		}
	}
	return sh
}

// shapeOf summarizes a schema for checkDisjoint (conservatively: when in
// doubt, everything).
func (sc *schemaCompiler) shapeOf(raw json.RawMessage, depth int) shape {
	var s map[string]json.RawMessage
	if depth > maxSchemaDepth || json.Unmarshal(raw, &s) != nil {
		return shape{types: allTypes}
	}
	if v, ok := s["$ref"]; ok {
		var ref string
		if json.Unmarshal(v, &ref) != nil {
			return shape{types: allTypes}
		}
		target, err := sc.resolve(ref, "")
		if err != nil {
			return shape{types: allTypes}
		}
		return sc.shapeOf(target, depth+1)
	}
	if v, ok := s["const"]; ok {
		return valueShape([]json.RawMessage{v})
	}
	if v, ok := s["enum"]; ok {
		var vals []json.RawMessage
		if json.Unmarshal(v, &vals) != nil {
			return shape{types: allTypes}
		}
		return valueShape(vals)
	}
	sh := shape{types: allTypes}
	if v, ok := s["type"]; ok {
		var types []string
		var one string
		if json.Unmarshal(v, &one) == nil {
			types = []string{one}
		} else if json.Unmarshal(v, &types) != nil {
			return sh
		}
		sh.types = 0
		for _, t := range types {
			sh.types |= typeBit(t)
		}
	} else if _, ok := s["properties"]; ok {
		sh.types = typeBit("object")
	}
	if sh.types != typeBit("object") {
		return sh
	}
	var required []string
	var props map[string]json.RawMessage
	_ = json.Unmarshal(s["required"], &required)
	_ = json.Unmarshal(s["properties"], &props)
	for _, r := range required {
		if p, ok := props[r]; ok {
			if ps := sc.shapeOf(p, depth+1); ps.values != nil {
				if sh.tags == nil {
					sh.tags = map[string][]string{}
				}
				sh.tags[r] = ps.values
			}
		}
	}
	return sh
}

// disjoint reports whether no value can have both shapes.
func (a shape) disjoint(b shape) bool {
	if a.types&b.types == 0 {
		return true
	}
	common := func(x, y []string) bool {
		return slices.ContainsFunc(x, func(v string) bool { return slices.Contains(y, v) })
	}
	if a.values != nil && b.values != nil && !common(a.values, b.values) {
		return true
	}
	for k, va := range a.tags {
		if vb, ok := b.tags[k]; ok && !common(va, vb) {
			return true
		}
	}
	return false
}

// maxOneOf bounds the branches of a oneOf.
const maxOneOf = 256

// checkDisjoint accepts oneOf only when no value can match two branches,
// so that compiling it as anyOf is exact: the branches have different
// types, different listed values, or are objects with a required property
// of different listed values (a discriminated union, as Pydantic writes
// them).
func (sc *schemaCompiler) checkDisjoint(subs []json.RawMessage, where string) error {
	if len(subs) > maxOneOf {
		return errAt(where, "more than %d branches (every pair is compared): use anyOf, or an enum", maxOneOf)
	}
	shapes := make([]shape, len(subs))
	for i, sub := range subs {
		shapes[i] = sc.shapeOf(sub, 0)
	}
	for i := range shapes {
		for j := i + 1; j < len(shapes); j++ {
			if !shapes[i].disjoint(shapes[j]) {
				return errAt(where, "branches %d and %d may match the same value; oneOf is supported when the branches are disjoint "+
					"(different types, different const or enum values, or objects whose required property has different const values): use anyOf if a value may match both", i, j)
			}
		}
	}
	return nil
}
