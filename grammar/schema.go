package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
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
	src, err := JSONSchemaGBNF(schema)
	if err != nil {
		return nil, err
	}
	return Parse(src)
}

// JSONSchemaGBNF translates a JSON schema to GBNF text (what FromJSONSchema
// compiles), for inspection or for editing by hand.
func JSONSchemaGBNF(schema []byte) (string, error) {
	sc := &schemaCompiler{byBody: map[string]string{}, root: schema, refs: map[string]string{}}
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
	rules  []string
	byBody map[string]string
	root   []byte            // the whole schema, for $ref
	refs   map[string]string // $ref → its rule
	nrefs  int               // rules made for $ref (of every root)
}

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
	"$defs", "definitions"} // definitions are compiled when a $ref uses them

var schemaKeywords = []string{"type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "enum", "const", "minLength", "maxLength", "anyOf", "$ref",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}

// numberBounds are the keywords that bound numbers (integers only here).
var numberBounds = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}

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
	if v, ok := s["anyOf"]; ok {
		var subs []json.RawMessage
		if err := json.Unmarshal(v, &subs); err != nil || len(subs) == 0 {
			return "", errAt(where+"/anyOf", "must be a non-empty array of schemas")
		}
		for k := range s {
			if k != "anyOf" && slices.Contains(schemaKeywords, k) {
				return "", errAt(where, "keyword %q beside anyOf is not supported (move it into each branch)", k)
			}
		}
		var alts []string
		for i, sub := range subs {
			r, err := sc.compile(sub, fmt.Sprintf("%s/anyOf/%d", where, i), depth+1)
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
		case s["properties"] != nil || s["additionalProperties"] != nil || s["required"] != nil:
			types = []string{"object"}
		case s["items"] != nil || s["minItems"] != nil || s["maxItems"] != nil:
			types = []string{"array"}
		case s["minLength"] != nil || s["maxLength"] != nil:
			types = []string{"string"}
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
			for _, k := range numberBounds {
				if _, ok := s[k]; ok {
					err = errAt(where, "keyword %q is only supported on integers, not on numbers", k)
				}
			}
			r = t
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
	if ref != "#" && !strings.HasPrefix(ref, "#/") {
		return "", errAt(where+"/$ref", "%q: only references inside the schema (#/...) are supported", ref)
	}
	target := json.RawMessage(sc.root)
	if ref != "#" {
		for _, part := range strings.Split(ref[2:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(target, &obj); err != nil {
				return "", errAt(where+"/$ref", "%q: %q is not inside an object", ref, part)
			}
			next, ok := obj[part]
			if !ok {
				return "", errAt(where+"/$ref", "%q: no %q", ref, part)
			}
			target = next
		}
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

// count reads a non-negative integer keyword; ok is false when absent.
func count(s map[string]json.RawMessage, key, where string) (n int, ok bool, err error) {
	v, ok := s[key]
	if !ok {
		return 0, false, nil
	}
	if err := json.Unmarshal(v, &n); err != nil || n < 0 || n > maxRepeat {
		return 0, false, errAt(where+"/"+key, "must be an integer from 0 to %d", maxRepeat)
	}
	return n, true, nil
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
	if lo == 0 && hi < 0 {
		return "string", nil
	}
	return sc.rule(`"\"" char` + repeat(lo, hi) + ` "\""`), nil
}

func (sc *schemaCompiler) array(s map[string]json.RawMessage, where string, depth int) (string, error) {
	item := "value"
	if v, ok := s["items"]; ok {
		var err error
		if item, err = sc.compile(v, where+"/items", depth+1); err != nil {
			return "", err
		}
	}
	lo, hi, err := bounds(s, "minItems", "maxItems", where)
	if err != nil {
		return "", err
	}
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
	props, ok := s["properties"]
	if !ok {
		if len(required) > 0 {
			return "", errAt(where+"/required", "required properties without a properties keyword are not supported")
		}
		if extra == "" {
			return sc.rule(`"{" ws "}"`), nil
		}
		if extra == "value" {
			return "object", nil
		}
		kv := `string ws ":" ws ` + extra + " ws"
		return sc.rule(`"{" ws ( ` + kv + ` ( "," ws ` + kv + ` )* )? "}"`), nil
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
	// Properties come in schema order; each optional one may be left out.
	// first(i) is the rest of the object from property i when nothing was
	// written yet, rest(i) when something was (so a comma comes first).
	type prop struct {
		kv       string
		required bool
	}
	var ps []prop
	for _, name := range names {
		val, err := sc.compile(propSchemas[name], where+"/properties/"+jsonPointerEscape(name), depth+1)
		if err != nil {
			return "", err
		}
		key, _ := marshalNoEscape(name)
		ps = append(ps, prop{kv: gbnfLiteral(key) + ` ws ":" ws ` + val + " ws", required: slices.Contains(required, name)})
	}
	first, rest := `"}"`, `"}"`
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		withComma := `"," ws ` + p.kv + " " + rest
		without := p.kv + " " + rest
		if p.required {
			first = sc.rule(without)
			rest = sc.rule(withComma)
		} else {
			first = sc.rule(without + " | " + first)
			rest = sc.rule(withComma + " | " + rest)
		}
	}
	return sc.rule(`"{" ws ` + first), nil
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

// Function is a tool a model may call: its name and the JSON schema of its
// arguments (nil: any object).
type Function struct {
	Name       string
	Parameters json.RawMessage
}

// ToolCalls returns a grammar for one or more calls of funcs in the form
// SmolLM3 (and Hermes-style models) write them:
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// with the name one of funcs and the arguments valid under its
// parameters schema. It is how a server honours tool_choice "required" or a
// named function: the model can only call.
func ToolCalls(funcs []Function) (*Grammar, error) {
	if len(funcs) == 0 {
		return nil, errors.New("grammar: ToolCalls needs at least one function")
	}
	sc := &schemaCompiler{byBody: map[string]string{}}
	var alts []string
	for _, f := range funcs {
		params := bytes.TrimSpace(f.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object"}`)
		}
		sc.root, sc.refs = params, map[string]string{}
		args, err := sc.compile(params, "", 0)
		if err != nil {
			return nil, fmt.Errorf("grammar: function %q: %w", f.Name, err)
		}
		name, _ := marshalNoEscape(f.Name)
		alts = append(alts, gbnfLiteral([]byte(`{"name": `+string(name)+`, "arguments": `))+" "+args+` "}"`)
	}
	var b strings.Builder
	b.WriteString("root ::= call (\"\\n\" call)*\n")
	b.WriteString("call ::= \"<tool_call>\\n\" ( " + strings.Join(alts, " | ") + " ) \"\\n</tool_call>\"\n")
	for _, r := range sc.rules {
		b.WriteString(r + "\n")
	}
	b.WriteString(jsonPrimitives)
	return Parse(b.String())
}

// integer compiles an integer type with its bounds.
func (sc *schemaCompiler) integer(s map[string]json.RawMessage, where string) (string, error) {
	var lo, hi int64
	hasLo, hasHi := false, false
	for _, k := range numberBounds {
		v, ok := s[k]
		if !ok {
			continue
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return "", errAt(where+"/"+k, "must be a number")
		}
		if math.Abs(f) > 1e16 {
			return "", errAt(where+"/"+k, "%v is beyond the 16-digit integers this grammar writes", f)
		}
		switch k {
		case "minimum", "exclusiveMinimum":
			b := int64(math.Ceil(f))
			if k == "exclusiveMinimum" && float64(b) == f {
				b++
			}
			if !hasLo || b > lo {
				lo, hasLo = b, true
			}
		default:
			b := int64(math.Floor(f))
			if k == "exclusiveMaximum" && float64(b) == f {
				b--
			}
			if !hasHi || b < hi {
				hi, hasHi = b, true
			}
		}
	}
	if !hasLo && !hasHi {
		return "integer", nil
	}
	if hasLo && hasHi && lo > hi {
		return "", errAt(where, "no integer lies between the bounds (from %d to %d)", lo, hi)
	}
	return sc.rule(intRangeGBNF(lo, hi, hasLo, hasHi)), nil
}
