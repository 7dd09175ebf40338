package grammar

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The JSON-schema subset, translated to GBNF text (kept as the Grammar's
// String) and compiled like any other grammar.

// jsonPrimitives are the rules every JSON grammar starts from. Whitespace is
// bounded (one space, or a newline and up to 20 spaces or tabs) so that a
// model cannot fill its budget with it; numbers are bounded to what
// float64 holds (16 significant digits, two exponent digits).
const jsonPrimitives = `ws ::= | " " | "\n" [ \t]{0,20}
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
string ::= "\"" char* "\""
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
`

// JSONValue returns a grammar for any JSON value.
func JSONValue() *Grammar { return MustParse("root ::= value\n" + jsonPrimitives) }

// JSONObject returns a grammar for any JSON object: OpenAI's
// response_format {"type": "json_object"}.
func JSONObject() *Grammar { return MustParse("root ::= object\n" + jsonPrimitives) }

// FromJSONSchema compiles a JSON schema to a grammar whose language is JSON
// text valid under the schema. See the package documentation for the
// supported subset; any other keyword is an error that names it and where
// it is.
func FromJSONSchema(schema []byte) (*Grammar, error) {
	return FromJSONSchemaContext(context.Background(), schema)
}

// FromJSONSchemaContext is FromJSONSchema under a context: it returns
// ctx.Err() once it sees ctx done. Compilation is near-linear in the size
// of the schema (each $ref target and each object on the way to one is
// parsed once) and bounded (maxSchemaRules, MaxProgram).
func FromJSONSchemaContext(ctx context.Context, schema []byte) (*Grammar, error) {
	src, err := jsonSchemaGBNF(ctx, schema)
	if err != nil {
		return nil, err
	}
	return ParseContext(ctx, src)
}

// JSONSchemaGBNF translates a JSON schema to GBNF text (what FromJSONSchema
// compiles), for inspection or for editing by hand.
func JSONSchemaGBNF(schema []byte) (string, error) {
	return jsonSchemaGBNF(context.Background(), schema)
}

func jsonSchemaGBNF(ctx context.Context, schema []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	sc := newSchemaCompiler(ctx)
	sc.root = schema
	root, err := sc.compile(json.RawMessage(schema), "", 0)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("root ::= " + root + "\n")
	for _, r := range sc.rules {
		b.WriteString(r + "\n")
	}
	b.WriteString(jsonPrimitives)
	return b.String(), nil
}

// maxSchemaDepth bounds schema nesting.
const maxSchemaDepth = 64

type schemaCompiler struct {
	rules     []string
	byBody    map[string]string
	root      []byte            // the whole schema, for $ref
	refs      map[string]string // $ref → its rule
	nrefs     int               // rules made for $ref (of every root)
	npatterns int               // patterns compiled (their rules' prefixes)
	cc        *canceller
	// objects caches the objects on the way of $refs, by JSON pointer, so
	// that each is parsed once however many $refs go through it (4,000
	// references into one $defs would otherwise parse it 4,000 times).
	objects map[string]map[string]json.RawMessage
}

// resolve returns the part of the schema that the local reference ref
// ("#", "#/$defs/name") names.
func (sc *schemaCompiler) resolve(ref, where string) (json.RawMessage, error) {
	if ref != "#" && !strings.HasPrefix(ref, "#/") {
		return nil, errAt(where+"/$ref", "%q: only references inside the schema (#/...) are supported", ref)
	}
	if sc.objects == nil {
		sc.objects = map[string]map[string]json.RawMessage{}
	}
	target := json.RawMessage(sc.root)
	if ref == "#" {
		return target, nil
	}
	prefix := "#"
	for _, part := range strings.Split(ref[2:], "/") {
		obj, ok := sc.objects[prefix]
		if !ok {
			if err := json.Unmarshal(target, &obj); err != nil {
				return nil, errAt(where+"/$ref", "%q: %q is not inside an object", ref, part)
			}
			sc.objects[prefix] = obj
		}
		prefix += "/" + part
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		next, ok := obj[part]
		if !ok {
			return nil, errAt(where+"/$ref", "%q: no %q", ref, part)
		}
		target = next
	}
	return target, nil
}

func newSchemaCompiler(ctx context.Context) *schemaCompiler {
	return &schemaCompiler{byBody: map[string]string{}, refs: map[string]string{}, cc: &canceller{ctx: ctx}}
}

// maxSchemaRules bounds the rules a schema compiles to.
const maxSchemaRules = 1 << 17

// rule names body as a rule (once per distinct body) and returns the name.
func (sc *schemaCompiler) rule(body string) string {
	if name, ok := sc.byBody[body]; ok {
		return name
	}
	name := "s" + strconv.Itoa(len(sc.rules))
	sc.byBody[body] = name
	sc.rules = append(sc.rules, name+" ::= "+body)
	return name
}

// Keywords that only annotate and are ignored.
var schemaAnnotations = []string{"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
	"discriminator",        // OpenAPI's hint beside oneOf; the branches' const tags do the work
	"$defs", "definitions"} // definitions are compiled when a $ref uses them

var schemaKeywords = []string{"type", "properties", "required", "additionalProperties", "propertyNames", "minProperties", "maxProperties",
	"items", "prefixItems", "additionalItems", "minItems", "maxItems", "enum", "const", "minLength", "maxLength", "pattern", "format",
	"anyOf", "oneOf", "$ref", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}

type schemaError struct {
	where string
	msg   string
}

func (e *schemaError) Error() string {
	where := e.where
	if where == "" {
		where = "/"
	}
	return "grammar: JSON schema at " + where + ": " + e.msg
}

func errAt(where, format string, args ...any) error {
	return &schemaError{where, fmt.Sprintf(format, args...)}
}

func (sc *schemaCompiler) compile(raw json.RawMessage, where string, depth int) (string, error) {
	if depth > maxSchemaDepth {
		return "", errAt(where, "nested deeper than %d levels", maxSchemaDepth)
	}
	if err := sc.cc.check(); err != nil {
		return "", err
	}
	if len(sc.rules) > maxSchemaRules {
		return "", errAt(where, "the schema is too large: it takes more than %d grammar rules", maxSchemaRules)
	}
	raw = bytes.TrimSpace(raw)
	switch string(raw) {
	case "true":
		return "value", nil
	case "false":
		return "", errAt(where, "the schema false matches nothing")
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errAt(where, "not a schema object: %v", err)
	}
	for k := range s {
		if !slices.Contains(schemaKeywords, k) && !slices.Contains(schemaAnnotations, k) {
			return "", errAt(where, "keyword %q is not supported (supported: %s)", k, strings.Join(schemaKeywords, ", "))
		}
	}
	if v, ok := s["$ref"]; ok {
		for k := range s {
			if k != "$ref" && slices.Contains(schemaKeywords, k) {
				return "", errAt(where, "keyword %q beside $ref is not supported", k)
			}
		}
		return sc.ref(v, where, depth)
	}
	if v, ok := s["const"]; ok {
		return literal(v, where+"/const")
	}
	if v, ok := s["enum"]; ok {
		var vals []json.RawMessage
		if err := json.Unmarshal(v, &vals); err != nil || len(vals) == 0 {
			return "", errAt(where+"/enum", "must be a non-empty array")
		}
		var alts []string
		for i, val := range vals {
			lit, err := literal(val, fmt.Sprintf("%s/enum/%d", where, i))
			if err != nil {
				return "", err
			}
			alts = append(alts, lit)
		}
		return sc.rule(strings.Join(alts, " | ")), nil
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		v, ok := s[kw]
		if !ok {
			continue
		}
		var subs []json.RawMessage
		if err := json.Unmarshal(v, &subs); err != nil || len(subs) == 0 {
			return "", errAt(where+"/"+kw, "must be a non-empty array of schemas")
		}
		for k := range s {
			if k != kw && slices.Contains(schemaKeywords, k) {
				return "", errAt(where, "keyword %q beside %s is not supported (move it into each branch)", k, kw)
			}
		}
		if kw == "oneOf" {
			if err := sc.checkDisjoint(subs, where+"/oneOf"); err != nil {
				return "", err
			}
		}
		var alts []string
		for i, sub := range subs {
			r, err := sc.compile(sub, fmt.Sprintf("%s/%s/%d", where, kw, i), depth+1)
			if err != nil {
				return "", err
			}
			alts = append(alts, r)
		}
		return sc.rule(strings.Join(alts, " | ")), nil
	}

	var types []string
	if v, ok := s["type"]; ok {
		var one string
		if json.Unmarshal(v, &one) == nil {
			types = []string{one}
		} else if json.Unmarshal(v, &types) != nil || len(types) == 0 {
			return "", errAt(where+"/type", "must be a type name or a non-empty array of them")
		}
	} else {
		switch {
		case hasAny(s, "properties", "additionalProperties", "required", "propertyNames", "minProperties", "maxProperties"):
			types = []string{"object"}
		case hasAny(s, "items", "prefixItems", "additionalItems", "minItems", "maxItems"):
			types = []string{"array"}
		case hasAny(s, "minLength", "maxLength", "pattern", "format"):
			types = []string{"string"}
		case hasAny(s, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
			types = []string{"number"}
		default:
			return "value", nil
		}
	}
	var alts []string
	for _, t := range types {
		var r string
		var err error
		switch t {
		case "string":
			r, err = sc.str(s, where)
		case "integer":
			r, err = sc.integer(s, where)
		case "number":
			r, err = sc.number(s, where)
		case "boolean", "null":
			r = t
		case "object":
			r, err = sc.object(s, where, depth)
		case "array":
			r, err = sc.array(s, where, depth)
		default:
			err = errAt(where+"/type", "unknown type %q", t)
		}
		if err != nil {
			return "", err
		}
		alts = append(alts, r)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return sc.rule(strings.Join(alts, " | ")), nil
}

// ref compiles a local reference ("#/$defs/name", "#") to a rule of its
// own, once, so that recursive schemas become recursive rules.
func (sc *schemaCompiler) ref(v json.RawMessage, where string, depth int) (string, error) {
	var ref string
	if err := json.Unmarshal(v, &ref); err != nil {
		return "", errAt(where+"/$ref", "must be a string")
	}
	if name, ok := sc.refs[ref]; ok {
		return name, nil
	}
	target, err := sc.resolve(ref, where)
	if err != nil {
		return "", err
	}
	// Name the rule before compiling its body, which may refer back to it.
	name := "r" + strconv.Itoa(sc.nrefs)
	sc.nrefs++
	sc.refs[ref] = name
	i := len(sc.rules)
	sc.rules = append(sc.rules, "")
	body, err := sc.compile(target, ref[1:], depth+1)
	if err != nil {
		return "", err
	}
	sc.rules[i] = name + " ::= " + body
	return name, nil
}

func hasAny(s map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

// count reads a non-negative integer keyword; ok is false when absent. A
// maximum (maxLength, maxItems, ...) above maxRepeat is lowered to it: the
// output then stays within both.
func count(s map[string]json.RawMessage, key, where string) (n int, ok bool, err error) {
	v, ok := s[key]
	if !ok {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || f < 0 || f != math.Trunc(f) || f > maxRepeat && !strings.HasPrefix(key, "max") {
		return 0, false, errAt(where+"/"+key, "must be an integer from 0 to %d", maxRepeat)
	}
	return int(min(f, maxRepeat)), true, nil
}

// bounds reads a min/max keyword pair as a GBNF repetition suffix.
func bounds(s map[string]json.RawMessage, minKey, maxKey, where string) (lo, hi int, err error) {
	lo, _, err = count(s, minKey, where)
	if err != nil {
		return 0, 0, err
	}
	hi, ok, err := count(s, maxKey, where)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		hi = -1
	} else if hi < lo {
		return 0, 0, errAt(where, "%s %d is below %s %d", maxKey, hi, minKey, lo)
	}
	return lo, hi, nil
}

func repeat(lo, hi int) string {
	switch {
	case hi < 0:
		return fmt.Sprintf("{%d,}", lo)
	case lo == hi:
		return fmt.Sprintf("{%d}", lo)
	}
	return fmt.Sprintf("{%d,%d}", lo, hi)
}

func (sc *schemaCompiler) str(s map[string]json.RawMessage, where string) (string, error) {
	lo, hi, err := bounds(s, "minLength", "maxLength", where)
	if err != nil {
		return "", err
	}
	var patterns []string
	key := "pattern"
	if v, ok := s["pattern"]; ok {
		var p string
		if err := json.Unmarshal(v, &p); err != nil {
			return "", errAt(where+"/pattern", "must be a string")
		}
		if p != "" {
			patterns = append(patterns, p)
		}
	}
	if v, ok := s["format"]; ok {
		var name string
		if err := json.Unmarshal(v, &name); err != nil {
			return "", errAt(where+"/format", "must be a string")
		}
		if !slices.Contains(annotationFormats, name) {
			f, ok := stringFormats[name]
			if !ok {
				return "", errAt(where+"/format", "format %q is not supported (supported: %s)", name, formatNames())
			}
			// A pattern beside a format (zod 4 writes both) must hold too:
			// the grammar is their intersection.
			if len(patterns) == 0 {
				key = "format"
			}
			patterns = append(patterns, f)
		}
	}
	if len(patterns) > 0 {
		body, err := sc.patternGBNF(patterns, lo, hi)
		if err != nil {
			return "", errAt(where+"/"+key, "keyword %q: %v (pattern %q)", key, err, patterns[0])
		}
		return sc.rule(body), nil
	}
	if lo == 0 && hi < 0 {
		return "string", nil
	}
	return sc.rule(`"\"" char` + repeat(lo, hi) + ` "\""`), nil
}

// objectKeys returns the keys of a JSON object in their order.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("must be an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// literal returns a GBNF literal for the JSON value v (compact form).
func literal(v json.RawMessage, where string) (string, error) {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return "", errAt(where, "%v", err)
	}
	b, err := marshalNoEscape(x)
	if err != nil {
		return "", errAt(where, "%v", err)
	}
	return gbnfLiteral(b), nil
}

func marshalNoEscape(x any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// gbnfLiteral quotes b as a GBNF string literal.
func gbnfLiteral(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c == '\n':
			sb.WriteString(`\n`)
		case c < 0x20 || c == 0x7F:
			fmt.Fprintf(&sb, `\x%02X`, c)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
