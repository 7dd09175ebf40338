package jinja

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is the Python type a Value stands for.
type Kind uint8

const (
	// KindUndefined is jinja2's Undefined: a missing variable, attribute
	// or item. It prints as nothing, is false and iterates as empty; most
	// other uses are an error naming what was missing.
	KindUndefined Kind = iota
	KindNone
	KindBool
	KindInt
	KindFloat
	KindString
	KindList  // a Python list (or a sequence view: range, dict_items)
	KindTuple // a Python tuple
	KindDict  // a Python dict: keys in insertion order
	KindFunc  // a callable: a macro, a built-in, a bound method
	KindNamespace
	KindIter // a generator (map, select, reverse...): iterates once, always true
	kindLoop // the loop variable of a for loop
)

// Value is a template value. The zero Value is Undefined. Values are
// immutable once built (the sandbox forbids mutating methods), except
// namespaces, so they can be shared freely.
type Value struct {
	kind Kind
	n    int64   // bool (0/1), int
	f    float64 // float
	s    string  // string; Undefined's hint
	ref  any     // *List, *Dict, *Func, *Namespace, *iter, *loopState, *undefErr
}

// List is the body of a list or tuple value.
type List struct {
	items []Value
	view  string // "" for a list; "range", "dict_items", "dict_keys", "dict_values" for views
	repr  string // a range's repr, range(0, 3)
}

// Dict is an ordered dictionary: keys in insertion order, as Python's.
type Dict struct {
	keys  []Value
	vals  []Value
	index map[hashKey]int
}

// Func is a callable value.
type Func struct {
	name string
	call func(r *renderer, args []Value, kw []kwarg) (Value, error)
}

// Namespace is the mutable object namespace() makes.
type Namespace struct{ d *Dict }

type iter struct {
	items []Value
	used  bool
	what  string // Python's type name, for errors: generator, list_reverseiterator
}

type kwarg struct {
	name string
	v    Value
}

// undefErr says why a value is undefined, and what error using it raises.
type undefErr struct {
	kind ErrorKind // ErrUndefined, or ErrSecurity for an unsafe attribute
	msg  string
}

// Undefined returns an undefined value whose use raises an error with msg.
func undefined(msg string) Value {
	return Value{kind: KindUndefined, ref: &undefErr{kind: ErrUndefined, msg: msg}}
}

func unsafeAttr(obj Value, attr string) Value {
	return Value{kind: KindUndefined, ref: &undefErr{kind: ErrSecurity,
		msg: fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe.", attr, obj.TypeName())}}
}

// Constructors.

// None is Python's None.
func None() Value { return Value{kind: KindNone} }

// Bool returns a boolean value.
func Bool(b bool) Value {
	if b {
		return Value{kind: KindBool, n: 1}
	}
	return Value{kind: KindBool}
}

// Int returns an integer value.
func Int(i int64) Value { return Value{kind: KindInt, n: i} }

// Float returns a float value.
func Float(f float64) Value { return Value{kind: KindFloat, f: f} }

// String returns a string value.
func String(s string) Value { return Value{kind: KindString, s: s} }

// markup returns a markupsafe.Markup string: text already escaped, which
// + and % escape the other operand against (the safe and escape filters
// make them).
func markup(s string) Value { return Value{kind: KindString, s: s, n: 1} }

func (v Value) isMarkup() bool { return v.kind == KindString && v.n == 1 }

// keepMarkup returns s as a string of v's kind: Markup's methods return
// Markup.
func keepMarkup(v Value, s string) Value {
	if v.isMarkup() {
		return markup(s)
	}
	return String(s)
}

// escaped is markupsafe's escape(v) as text: Markup stays as it is.
func escaped(v Value) string {
	if v.isMarkup() {
		return v.s
	}
	return escapeHTML(v.String())
}

// ListOf returns a list value holding items (not copied).
func ListOf(items ...Value) Value { return Value{kind: KindList, ref: &List{items: items}} }

func tupleOf(items ...Value) Value { return Value{kind: KindTuple, ref: &List{items: items}} }

func viewOf(view string, items []Value) Value {
	return Value{kind: KindList, ref: &List{items: items, view: view}}
}

func iterOf(what string, items []Value) Value {
	return Value{kind: KindIter, ref: &iter{items: items, what: what}}
}

// NewDict returns an empty dictionary to fill with Set.
func NewDict() *Dict { return &Dict{index: map[hashKey]int{}} }

// DictValue returns d as a value; d must not change afterwards.
func DictValue(d *Dict) Value { return Value{kind: KindDict, ref: d} }

func funcValue(name string, call func(r *renderer, args []Value, kw []kwarg) (Value, error)) Value {
	return Value{kind: KindFunc, ref: &Func{name: name, call: call}}
}

// Set sets key k (a string) to v, keeping the first insertion's place.
func (d *Dict) Set(k string, v Value) { d.set(String(k), v) }

func (d *Dict) set(k, v Value) {
	h := k.hash()
	if i, ok := d.index[h]; ok {
		d.vals[i] = v
		return
	}
	d.index[h] = len(d.keys)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
}

func (d *Dict) get(k Value) (Value, bool) {
	if i, ok := d.index[k.hash()]; ok {
		return d.vals[i], true
	}
	return Value{}, false
}

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

func (d *Dict) copyDict() *Dict {
	c := &Dict{keys: append([]Value(nil), d.keys...), vals: append([]Value(nil), d.vals...), index: make(map[hashKey]int, len(d.keys))}
	for k, i := range d.index {
		c.index[k] = i
	}
	return c
}

// hashKey identifies a dictionary key as Python's hash and equality do:
// 1, 1.0 and True are one key.
type hashKey struct {
	kind Kind
	n    int64
	f    float64
	s    string
}

func (v Value) hash() hashKey {
	switch v.kind {
	case KindBool, KindInt:
		return hashKey{kind: KindInt, n: v.n}
	case KindFloat:
		if v.f == math.Trunc(v.f) && math.Abs(v.f) < 1<<62 {
			return hashKey{kind: KindInt, n: int64(v.f)}
		}
		return hashKey{kind: KindFloat, f: v.f}
	case KindString:
		return hashKey{kind: KindString, s: v.s}
	case KindNone, KindUndefined:
		return hashKey{kind: v.kind}
	case KindTuple:
		return hashKey{kind: KindTuple, s: v.Repr()}
	}
	return hashKey{kind: v.kind, s: fmt.Sprintf("%p", v.ref)}
}

// Accessors.

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

// Str returns a string value's text ("" for other kinds).
func (v Value) Str() string { return v.s }

func (v Value) list() []Value {
	if l, ok := v.ref.(*List); ok {
		return l.items
	}
	return nil
}

func (v Value) dict() *Dict {
	if d, ok := v.ref.(*Dict); ok {
		return d
	}
	return nil
}

func (v Value) isNumber() bool { return v.kind == KindInt || v.kind == KindFloat || v.kind == KindBool }

func (v Value) asFloat() float64 {
	if v.kind == KindFloat {
		return v.f
	}
	return float64(v.n)
}

// TypeName is Python's name for the value's type, as error messages use it.
func (v Value) TypeName() string {
	switch v.kind {
	case KindUndefined:
		return "Undefined"
	case KindNone:
		return "NoneType"
	case KindBool:
		return "bool"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindString:
		return "str"
	case KindList:
		if l := v.ref.(*List); l.view != "" {
			return l.view
		}
		return "list"
	case KindTuple:
		return "tuple"
	case KindDict:
		return "dict"
	case KindFunc:
		return "function"
	case KindNamespace:
		return "Namespace"
	case KindIter:
		return v.ref.(*iter).what
	case kindLoop:
		return "LoopContext"
	}
	return "object"
}

// Truth is Python's bool(v).
func (v Value) Truth() bool {
	switch v.kind {
	case KindUndefined, KindNone:
		return false
	case KindBool, KindInt:
		return v.n != 0
	case KindFloat:
		return v.f != 0
	case KindString:
		return v.s != ""
	case KindList, KindTuple:
		return len(v.list()) > 0
	case KindDict:
		return v.dict().Len() > 0
	}
	return true
}

// String is Python's str(v), what {{ v }} prints: None, True, 1.5, and the
// repr of lists and dicts; Undefined prints as nothing.
func (v Value) String() string {
	switch v.kind {
	case KindUndefined:
		return ""
	case KindString:
		return v.s
	}
	return v.Repr()
}

// Repr is Python's repr(v).
func (v Value) Repr() string {
	var b strings.Builder
	v.writeRepr(&b, 0)
	return b.String()
}

func (v Value) writeRepr(b *strings.Builder, depth int) {
	if depth > 100 {
		b.WriteString("...")
		return
	}
	switch v.kind {
	case KindUndefined:
		b.WriteString("Undefined")
	case KindNone:
		b.WriteString("None")
	case KindBool:
		if v.n != 0 {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case KindInt:
		b.WriteString(strconv.FormatInt(v.n, 10))
	case KindFloat:
		b.WriteString(pyFloat(v.f))
	case KindString:
		b.WriteString(pyStringRepr(v.s))
	case KindList, KindTuple:
		l := v.ref.(*List)
		switch l.view {
		case "range":
			b.WriteString(l.repr)
			return
		case "":
		default:
			b.WriteString(l.view)
			b.WriteString("([")
			defer b.WriteString("])")
		}
		open, close := "[", "]"
		if v.kind == KindTuple {
			open, close = "(", ")"
		}
		if l.view != "" {
			open, close = "", ""
		}
		b.WriteString(open)
		for i, x := range l.items {
			if i > 0 {
				b.WriteString(", ")
			}
			x.writeRepr(b, depth+1)
		}
		if v.kind == KindTuple && len(l.items) == 1 {
			b.WriteString(",")
		}
		b.WriteString(close)
	case KindDict:
		writeDictRepr(b, v.dict(), depth)
	case KindNamespace:
		b.WriteString("<Namespace ")
		writeDictRepr(b, v.ref.(*Namespace).d, depth)
		b.WriteString(">")
	case KindFunc:
		b.WriteString("<function " + v.ref.(*Func).name + ">")
	case KindIter:
		b.WriteString("<" + v.ref.(*iter).what + " object>")
	case kindLoop:
		b.WriteString("<LoopContext>")
	}
}

func writeDictRepr(b *strings.Builder, d *Dict, depth int) {
	b.WriteString("{")
	for i, k := range d.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		k.writeRepr(b, depth+1)
		b.WriteString(": ")
		d.vals[i].writeRepr(b, depth+1)
	}
	b.WriteString("}")
}

// pyFloat formats f as Python's repr(float) does: the shortest digits that
// read back, in positional notation for exponents -4 to 15, with ".0" on
// whole numbers.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	sign := ""
	if neg {
		sign = "-"
	}
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es = "-"
			exp = -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
	}
	if exp < 0 {
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	if len(digits) <= exp+1 {
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}

// pyStringRepr is Python's repr(str): single quotes unless the text has
// one and no double quote, backslash escapes for the quote, backslash,
// \t \n \r and characters Python does not print.
func pyStringRepr(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
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
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i-1])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x80 || unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// equal is Python's ==, with jinja2's Undefined equal only to Undefined.
func equal(a, b Value) bool {
	if a.isNumber() && b.isNumber() {
		if a.kind == KindFloat || b.kind == KindFloat {
			return a.asFloat() == b.asFloat()
		}
		return a.n == b.n
	}
	switch {
	case a.kind == KindUndefined || b.kind == KindUndefined:
		return a.kind == b.kind
	case a.kind != b.kind:
		return false
	}
	switch a.kind {
	case KindNone:
		return true
	case KindString:
		return a.s == b.s
	case KindList, KindTuple:
		x, y := a.list(), b.list()
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case KindDict:
		x, y := a.dict(), b.dict()
		if x.Len() != y.Len() {
			return false
		}
		for i, k := range x.keys {
			w, ok := y.get(k)
			if !ok || !equal(x.vals[i], w) {
				return false
			}
		}
		return true
	}
	return a.ref == b.ref
}

// compare orders a and b as Python's < does, or fails as Python does for
// unorderable types.
func compare(a, b Value, op string) (int, error) {
	if a.kind == KindUndefined || b.kind == KindUndefined {
		return 0, undefinedUse(a, b)
	}
	if a.isNumber() && b.isNumber() {
		if a.kind == KindFloat || b.kind == KindFloat {
			x, y := a.asFloat(), b.asFloat()
			switch {
			case x < y:
				return -1, nil
			case x > y:
				return 1, nil
			}
			return 0, nil
		}
		switch {
		case a.n < b.n:
			return -1, nil
		case a.n > b.n:
			return 1, nil
		}
		return 0, nil
	}
	if a.kind == KindString && b.kind == KindString {
		return strings.Compare(a.s, b.s), nil
	}
	if (a.kind == KindList || a.kind == KindTuple) && a.kind == b.kind {
		x, y := a.list(), b.list()
		for i := 0; i < len(x) && i < len(y); i++ {
			if equal(x[i], y[i]) {
				continue
			}
			return compare(x[i], y[i], op)
		}
		return len(x) - len(y), nil
	}
	return 0, errorf(ErrType, "'%s' not supported between instances of '%s' and '%s'", op, a.TypeName(), b.TypeName())
}

// undefinedUse is the error of using whichever of vs is undefined.
func undefinedUse(vs ...Value) error {
	for _, v := range vs {
		if v.kind == KindUndefined {
			if u, ok := v.ref.(*undefErr); ok {
				return errorf(u.kind, "%s", u.msg)
			}
			return errorf(ErrUndefined, "a value is undefined")
		}
	}
	return nil
}
