package jinja

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The filters, tests and global functions of jinja2 3.1 that chat templates
// use, with transformers' tojson, raise_exception and strftime_now.
// Filters that are not deterministic (random) or reach outside the
// template (urlize's links aside, none do) are left out.

type filterFunc func(r *renderer, x Value, args []Value, kw []kwarg) (Value, error)

type testFunc func(r *renderer, x Value, args []Value) (bool, error)

var filters map[string]filterFunc

var tests map[string]testFunc

func init() {
	filters = map[string]filterFunc{
		"abs":         fAbs,
		"attr":        fAttr,
		"batch":       fBatch,
		"capitalize":  strFilter(pyCapitalize),
		"center":      fCenter,
		"count":       fLength,
		"d":           fDefault,
		"default":     fDefault,
		"dictsort":    fDictsort,
		"e":           fEscape,
		"escape":      fEscape,
		"forceescape": fForceEscape,
		"first":       fFirst,
		"float":       fFloat,
		"format":      fFormat,
		"groupby":     fGroupby,
		"indent":      fIndent,
		"int":         fInt,
		"items":       fItems,
		"join":        fJoin,
		"last":        fLast,
		"length":      fLength,
		"list":        fList,
		"lower":       strFilter(strings.ToLower),
		"map":         fMap,
		"max":         fMinMax(1),
		"min":         fMinMax(-1),
		"reject":      fSelect(false, false),
		"rejectattr":  fSelect(false, true),
		"replace":     fReplace,
		"reverse":     fReverse,
		"round":       fRound,
		"safe":        func(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) { return markup(x.String()), nil },
		"select":      fSelect(true, false),
		"selectattr":  fSelect(true, true),
		"sort":        fSort,
		"string": func(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
			return keepMarkup(x, x.String()), nil
		},
		"sum":      fSum,
		"title":    strFilter(jinjaTitle),
		"tojson":   fToJSON,
		"trim":     fTrim,
		"truncate": fTruncate,
		"unique":   fUnique,
		"upper":    strFilter(strings.ToUpper),
		"wordcount": func(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
			return Int(int64(len(strings.Fields(x.String())))), nil
		},
	}
	tests = map[string]testFunc{
		"boolean": func(r *renderer, x Value, a []Value) (bool, error) { return x.kind == KindBool, nil },
		"callable": func(r *renderer, x Value, a []Value) (bool, error) {
			return x.kind == KindFunc || x.kind == kindLoop, nil
		},
		"defined":     func(r *renderer, x Value, a []Value) (bool, error) { return x.kind != KindUndefined, nil },
		"divisibleby": tDivisible,
		"escaped":     func(r *renderer, x Value, a []Value) (bool, error) { return false, nil },
		"even":        tParity(0),
		"false":       func(r *renderer, x Value, a []Value) (bool, error) { return x.kind == KindBool && x.n == 0, nil },
		"filter": func(r *renderer, x Value, a []Value) (bool, error) {
			_, ok := filters[x.s]
			return x.kind == KindString && ok, nil
		},
		"float":    func(r *renderer, x Value, a []Value) (bool, error) { return x.kind == KindFloat, nil },
		"in":       tIn,
		"integer":  func(r *renderer, x Value, a []Value) (bool, error) { return x.kind == KindInt, nil },
		"iterable": tIterable,
		"lower":    func(r *renderer, x Value, a []Value) (bool, error) { return isCased(x.String(), false), nil },
		"mapping":  func(r *renderer, x Value, a []Value) (bool, error) { return x.kind == KindDict, nil },
		"none":     func(r *renderer, x Value, a []Value) (bool, error) { return x.kind == KindNone, nil },
		"number":   func(r *renderer, x Value, a []Value) (bool, error) { return x.isNumber(), nil },
		"odd":      tParity(1),
		"sameas":   tSameas,
		"sequence": tSequence,
		"string":   func(r *renderer, x Value, a []Value) (bool, error) { return x.kind == KindString, nil },
		"test": func(r *renderer, x Value, a []Value) (bool, error) {
			_, ok := tests[x.s]
			return x.kind == KindString && ok, nil
		},
		"true":      func(r *renderer, x Value, a []Value) (bool, error) { return x.kind == KindBool && x.n == 1, nil },
		"undefined": func(r *renderer, x Value, a []Value) (bool, error) { return x.kind == KindUndefined, nil },
		"upper":     func(r *renderer, x Value, a []Value) (bool, error) { return isCased(x.String(), true), nil },
	}
	for _, c := range []struct {
		op    string
		names []string
	}{{"==", []string{"==", "eq", "equalto"}}, {"!=", []string{"!=", "ne"}}, {"<", []string{"<", "lt", "lessthan"}},
		{"<=", []string{"<=", "le"}}, {">", []string{">", "gt", "greaterthan"}}, {">=", []string{">=", "ge"}}} {
		op := c.op
		for _, n := range c.names {
			tests[n] = func(r *renderer, x Value, a []Value) (bool, error) {
				if len(a) != 1 {
					return false, errorf(ErrType, "test %s takes one argument", n)
				}
				return r.compareOp(op, x, a[0])
			}
		}
	}
}

func isCased(s string, upper bool) bool {
	v, _ := strCased(upper)(nil, String(s), nil, nil)
	return v.Truth()
}

func (r *renderer) callFilter(f *filterExpr, v Value, sc *scope) (Value, error) {
	fn, ok := filters[f.name]
	if !ok {
		return Value{}, &Error{Kind: ErrSyntax, Msg: fmt.Sprintf("No filter named '%s' found.", f.name), Line: f.line}
	}
	args, err := r.evalAll(f.args, sc)
	if err != nil {
		return Value{}, err
	}
	kw := make([]kwarg, len(f.kwargs))
	for i, e := range f.kwargs {
		v, err := r.eval(e, sc)
		if err != nil {
			return Value{}, err
		}
		kw[i] = kwarg{f.kwnames[i], v}
	}
	out, err := fn(r, v, args, kw)
	return out, r.withLine(err, f.line)
}

func (r *renderer) evalTest(t *testExpr, sc *scope) (Value, error) {
	fn, ok := tests[t.name]
	if !ok {
		return Value{}, &Error{Kind: ErrSyntax, Msg: fmt.Sprintf("No test named '%s' found.", t.name), Line: t.line}
	}
	x, err := r.eval(t.x, sc)
	if err != nil {
		return Value{}, err
	}
	args, err := r.evalAll(t.args, sc)
	if err != nil {
		return Value{}, err
	}
	ok, err = fn(r, x, args)
	if err != nil {
		return Value{}, r.withLine(err, t.line)
	}
	return Bool(ok != t.negate), nil
}

// runTest runs a named test, for select and friends.
func (r *renderer) runTest(name string, x Value, args []Value) (bool, error) {
	fn, ok := tests[name]
	if !ok {
		return false, errorf(ErrSyntax, "No test named '%s'.", name)
	}
	return fn(r, x, args)
}

func strFilter(f func(string) string) filterFunc {
	return func(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
		return keepMarkup(x, f(x.String())), nil
	}
}

// jinjaTitle is jinja2's title filter: each word (split at white space,
// -, (, {, [ and <) with its first character upper-cased and the rest
// lower-cased.
func jinjaTitle(s string) string {
	var b strings.Builder
	start := true
	for _, c := range s {
		if isPySpace(c) || strings.ContainsRune("-({[<", c) {
			b.WriteRune(c)
			start = true
			continue
		}
		if start {
			b.WriteString(strings.ToUpper(string(c)))
		} else {
			b.WriteString(strings.ToLower(string(c)))
		}
		start = false
	}
	return b.String()
}

func fAbs(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	switch x.kind {
	case KindInt, KindBool:
		if x.n < 0 {
			return Int(-x.n), nil
		}
		return Int(x.n), nil
	case KindFloat:
		return Float(math.Abs(x.f)), nil
	}
	return Value{}, errorf(ErrType, "bad operand type for abs(): '%s'", x.TypeName())
}

func fAttr(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("attr", a, kw, []string{"name"})
	if err != nil {
		return Value{}, err
	}
	name := p[0].String()
	if strings.HasPrefix(name, "__") {
		return unsafeAttr(x, name), nil
	}
	if m, ok := method(x, name); ok {
		return m, nil
	}
	switch x.kind {
	case KindNamespace:
		if v, ok := x.ref.(*Namespace).d.get(String(name)); ok {
			return v, nil
		}
	case kindLoop:
		if v, ok := x.ref.(*loopState).attr(name); ok {
			return v, nil
		}
	}
	return undefined(fmt.Sprintf("%s has no attribute '%s'", objectTypeRepr(x), name)), nil
}

func fBatch(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("batch", a, kw, []string{"linecount", "fill_with"}, None())
	if err != nil {
		return Value{}, err
	}
	n, err := optInt("batch", p[0], 1)
	if err != nil || n <= 0 {
		return Value{}, errorf(ErrType, "batch needs a positive count")
	}
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	var out []Value
	for i := 0; i < len(items); i += int(n) {
		chunk := append([]Value(nil), items[i:min(len(items), i+int(n))]...)
		for p[1].kind != KindNone && len(chunk) < int(n) {
			chunk = append(chunk, p[1])
		}
		out = append(out, ListOf(chunk...))
	}
	return iterOf("generator", out), r.step(len(items))
}

func fCenter(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("center", a, kw, []string{"width"}, Int(80))
	if err != nil {
		return Value{}, err
	}
	return strJustify('^')(r, String(x.String()), []Value{p[0]}, nil)
}

func fDefault(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("default", a, kw, []string{"default_value", "boolean"}, String(""), Bool(false))
	if err != nil {
		return Value{}, err
	}
	if x.kind == KindUndefined || (p[1].Truth() && !x.Truth()) {
		return p[0], nil
	}
	return x, nil
}

func fDictsort(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("dictsort", a, kw, []string{"case_sensitive", "by", "reverse"}, Bool(false), String("key"), Bool(false))
	if err != nil {
		return Value{}, err
	}
	if x.kind != KindDict {
		return Value{}, errorf(ErrType, "can only dictsort a dict, not %s", x.TypeName())
	}
	pos := 0
	switch p[1].String() {
	case "key":
	case "value":
		pos = 1
	default:
		return Value{}, errorf(ErrType, "You can only sort by either 'key' or 'value'")
	}
	items := dictItems(x.dict())
	var sortErr error
	sort.SliceStable(items, func(i, j int) bool {
		ki := sortKey(items[i].list()[pos], p[0].Truth())
		kj := sortKey(items[j].list()[pos], p[0].Truth())
		c, err := compare(ki, kj, "<")
		if err != nil && sortErr == nil {
			sortErr = err
		}
		if p[2].Truth() {
			return c > 0
		}
		return c < 0
	})
	return ListOf(items...), sortErr
}

// sortKey lower-cases strings unless the comparison is case-sensitive, as
// jinja2's ignore_case does.
func sortKey(v Value, caseSensitive bool) Value {
	if !caseSensitive && v.kind == KindString {
		return String(strings.ToLower(v.s))
	}
	return v
}

func fEscape(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	if x.isMarkup() {
		return x, nil
	}
	s := escapeHTML(x.String())
	return markup(s), r.checkLen(len(s))
}

func fForceEscape(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	s := escapeHTML(x.String())
	return markup(s), r.checkLen(len(s))
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// escapeHTML is markupsafe's escape.
func escapeHTML(s string) string { return htmlEscaper.Replace(s) }

func fFirst(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	if len(items) == 0 {
		return undefined("No first item, sequence was empty."), nil
	}
	return items[0], nil
}

func fLast(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	if x.kind == KindIter {
		return Value{}, errorf(ErrType, "'%s' object is not reversible", x.TypeName())
	}
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	if len(items) == 0 {
		return undefined("No last item, sequence was empty."), nil
	}
	return items[len(items)-1], nil
}

func fFloat(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("float", a, kw, []string{"default"}, Float(0))
	if err != nil {
		return Value{}, err
	}
	switch x.kind {
	case KindInt, KindBool:
		return Float(float64(x.n)), nil
	case KindFloat:
		return x, nil
	case KindString:
		if f, err := strconv.ParseFloat(strings.TrimFunc(x.s, isPySpace), 64); err == nil {
			return Float(f), nil
		}
	}
	return p[0], nil
}

func fFormat(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	if len(a) > 0 && len(kw) > 0 {
		return Value{}, errorf(ErrType, "can't handle positional and keyword arguments at the same time")
	}
	var arg Value
	if len(kw) > 0 {
		d := NewDict()
		for _, k := range kw {
			d.Set(k.name, k.v)
		}
		arg = DictValue(d)
	} else {
		arg = tupleOf(a...)
	}
	s, err := r.printf(x.String(), arg)
	return String(s), err
}

func fGroupby(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("groupby", a, kw, []string{"attribute", "default", "case_sensitive"}, None(), Bool(false))
	if err != nil {
		return Value{}, err
	}
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	keys := make([]Value, len(items))
	for i, it := range items {
		if keys[i], err = attrPath(it, p[0], p[1]); err != nil {
			return Value{}, err
		}
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	var sortErr error
	sort.SliceStable(order, func(i, j int) bool {
		c, err := compare(sortKey(keys[order[i]], p[2].Truth()), sortKey(keys[order[j]], p[2].Truth()), "<")
		if err != nil && sortErr == nil {
			sortErr = err
		}
		return c < 0
	})
	var out []Value
	for i := 0; i < len(order); {
		j := i
		var group []Value
		for j < len(order) && equal(sortKey(keys[order[j]], p[2].Truth()), sortKey(keys[order[i]], p[2].Truth())) {
			group = append(group, items[order[j]])
			j++
		}
		out = append(out, tupleOf(keys[order[i]], ListOf(group...)))
		i = j
	}
	return ListOf(out...), sortErr
}

// attrPath reads an item's attribute for sort, map, groupby: a dotted
// path (a.b, or a.0 for an index), or default where one is missing.
func attrPath(item Value, attr Value, def Value) (Value, error) {
	if attr.kind == KindInt {
		return getitem(item, attr)
	}
	v := item
	for _, part := range strings.Split(attr.String(), ".") {
		var err error
		if n, e := strconv.Atoi(part); e == nil {
			v, err = getitem(v, Int(int64(n)))
		} else {
			v, err = getitem(v, String(part))
		}
		if err != nil {
			return Value{}, err
		}
		if v.kind == KindUndefined {
			if def.kind != KindUndefined && def.kind != KindNone {
				return def, nil
			}
			break
		}
	}
	return v, nil
}

func fIndent(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("indent", a, kw, []string{"width", "first", "blank"}, Int(4), Bool(false), Bool(false))
	if err != nil {
		return Value{}, err
	}
	var ind string
	switch p[0].kind {
	case KindString:
		ind = p[0].s
	case KindInt, KindBool:
		if p[0].n > 1<<16 {
			return Value{}, errorf(ErrLimit, "indent width %d too large", p[0].n)
		}
		ind = strings.Repeat(" ", int(max(p[0].n, 0)))
	default:
		return Value{}, errorf(ErrType, "indent width must be an integer or a string")
	}
	s := x.String() + "\n"
	lv, _ := strSplitlines(r, String(s), nil, nil)
	lines := make([]string, len(lv.list()))
	for i, l := range lv.list() {
		lines[i] = l.s
	}
	var out string
	if p[2].Truth() {
		out = strings.Join(lines, "\n"+ind)
	} else {
		out = lines[0]
		if len(lines) > 1 {
			rest := make([]string, len(lines)-1)
			for i, l := range lines[1:] {
				if l != "" {
					l = ind + l
				}
				rest[i] = l
			}
			out += "\n" + strings.Join(rest, "\n")
		}
	}
	if p[1].Truth() {
		out = ind + out
	}
	return String(out), r.checkLen(len(out))
}

func fInt(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("int", a, kw, []string{"default", "base"}, Int(0), Int(10))
	if err != nil {
		return Value{}, err
	}
	switch x.kind {
	case KindInt, KindBool:
		return Int(x.n), nil
	case KindFloat:
		if math.IsNaN(x.f) || math.IsInf(x.f, 0) {
			return p[0], nil
		}
		return Int(int64(x.f)), nil
	case KindString:
		s := strings.ReplaceAll(strings.TrimFunc(x.s, isPySpace), "_", "")
		base := int(p[1].n)
		if base == 16 || base == 8 || base == 2 {
			s = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(s), "0x"), "0o"), "0b")
		}
		if n, err := strconv.ParseInt(s, base, 64); err == nil {
			return Int(n), nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return Int(int64(f)), nil
		}
	}
	return p[0], nil
}

func fItems(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	switch x.kind {
	case KindUndefined:
		return iterOf("generator", nil), nil
	case KindDict:
		return iterOf("generator", dictItems(x.dict())), nil
	}
	return Value{}, errorf(ErrType, "Can only get item pairs from a mapping.")
}

func fJoin(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("join", a, kw, []string{"d", "attribute"}, String(""), None())
	if err != nil {
		return Value{}, err
	}
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	var b strings.Builder
	for i, it := range items {
		if p[1].kind != KindNone {
			if it, err = attrPath(it, p[1], Value{}); err != nil {
				return Value{}, err
			}
		}
		if i > 0 {
			b.WriteString(p[0].String())
		}
		b.WriteString(it.String())
		if err := r.checkLen(b.Len()); err != nil {
			return Value{}, err
		}
	}
	return String(b.String()), r.step(len(items))
}

func fLength(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	switch x.kind {
	case KindUndefined:
		return Int(0), nil
	case KindString:
		return Int(int64(utf8.RuneCountInString(x.s))), nil
	case KindList, KindTuple:
		return Int(int64(len(x.list()))), nil
	case KindDict:
		return Int(int64(x.dict().Len())), nil
	case KindNamespace:
		return Value{}, errorf(ErrType, "object of type 'Namespace' has no len()")
	}
	return Value{}, errorf(ErrType, "object of type '%s' has no len()", x.TypeName())
}

func fList(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	return ListOf(append([]Value(nil), items...)...), nil
}

func fMap(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	if !x.Truth() { // jinja2's map iterates only a true value
		return iterOf("generator", nil), nil
	}
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	out := make([]Value, len(items))
	if len(a) == 0 {
		var attr, def Value
		for _, k := range kw {
			switch k.name {
			case "attribute":
				attr = k.v
			case "default":
				def = k.v
			default:
				return Value{}, errorf(ErrType, "Unexpected keyword argument '%s'", k.name)
			}
		}
		if attr.kind == KindUndefined {
			return Value{}, errorf(ErrType, "map requires a filter argument")
		}
		for i, it := range items {
			if out[i], err = attrPath(it, attr, def); err != nil {
				return Value{}, err
			}
		}
		return iterOf("generator", out), r.step(len(items))
	}
	name := a[0].String()
	fn, ok := filters[name]
	if !ok {
		return Value{}, errorf(ErrSyntax, "No filter named '%s'.", name)
	}
	for i, it := range items {
		if out[i], err = fn(r, it, a[1:], kw); err != nil {
			return Value{}, err
		}
	}
	return iterOf("generator", out), r.step(len(items))
}

func fMinMax(sign int) filterFunc {
	return func(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
		p, err := bind("max", a, kw, []string{"case_sensitive", "attribute"}, Bool(false), None())
		if err != nil {
			return Value{}, err
		}
		items, err := r.iterate(x)
		if err != nil {
			return Value{}, err
		}
		if len(items) == 0 {
			return undefined("No aggregated item, sequence was empty."), nil
		}
		key := func(v Value) (Value, error) {
			if p[1].kind != KindNone {
				var err error
				if v, err = attrPath(v, p[1], Value{}); err != nil {
					return Value{}, err
				}
			}
			return sortKey(v, p[0].Truth()), nil
		}
		best := items[0]
		bk, err := key(best)
		if err != nil {
			return Value{}, err
		}
		for _, it := range items[1:] {
			k, err := key(it)
			if err != nil {
				return Value{}, err
			}
			c, err := compare(k, bk, "<")
			if err != nil {
				return Value{}, err
			}
			if c*sign > 0 {
				best, bk = it, k
			}
		}
		return best, r.step(len(items))
	}
}

func fSelect(keep, byAttr bool) filterFunc {
	return func(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
		if !x.Truth() { // jinja2's select_or_reject iterates only a true value
			return iterOf("generator", nil), nil
		}
		items, err := r.iterate(x)
		if err != nil {
			return Value{}, err
		}
		var attr Value
		if byAttr {
			if len(a) == 0 {
				return Value{}, errorf(ErrType, "Missing parameter for attribute name")
			}
			attr, a = a[0], a[1:]
		}
		var out []Value
		for _, it := range items {
			v := it
			if byAttr {
				if v, err = attrPath(it, attr, Value{}); err != nil {
					return Value{}, err
				}
			}
			var ok bool
			if len(a) == 0 {
				ok = v.Truth()
			} else if ok, err = r.runTest(a[0].String(), v, a[1:]); err != nil {
				return Value{}, err
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return iterOf("generator", out), r.step(len(items))
	}
}

func fReplace(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("replace", a, kw, []string{"old", "new", "count"}, None())
	if err != nil {
		return Value{}, err
	}
	count := p[2]
	if count.kind == KindNone {
		count = Int(-1)
	}
	return strReplace(r, String(x.String()), []Value{String(p[0].String()), String(p[1].String()), count}, nil)
}

func fReverse(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	if x.kind == KindString {
		runes := []rune(x.s)
		for i, j := 0, len(runes)-1; i < j; i, j = i+1, j-1 {
			runes[i], runes[j] = runes[j], runes[i]
		}
		return String(string(runes)), nil
	}
	reversible := x.kind == KindList || x.kind == KindTuple || x.kind == KindDict
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	out := make([]Value, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	if reversible {
		return iterOf("list_reverseiterator", out), nil
	}
	return ListOf(out...), nil
}

func fRound(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("round", a, kw, []string{"precision", "method"}, Int(0), String("common"))
	if err != nil {
		return Value{}, err
	}
	if !x.isNumber() {
		return Value{}, errorf(ErrType, "round needs a number, not %s", x.TypeName())
	}
	f, prec := x.asFloat(), int(p[0].n)
	switch p[1].String() {
	case "common":
		if prec < 0 || prec > 300 {
			return Float(math.Round(f)), nil
		}
		g, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', prec, 64), 64)
		return Float(g), nil
	case "ceil", "floor":
		m := math.Pow(10, float64(prec))
		if p[1].String() == "ceil" {
			return Float(math.Ceil(f*m) / m), nil
		}
		return Float(math.Floor(f*m) / m), nil
	}
	return Value{}, errorf(ErrType, "method must be common, ceil or floor")
}

func fSort(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("sort", a, kw, []string{"reverse", "case_sensitive", "attribute"}, Bool(false), Bool(false), None())
	if err != nil {
		return Value{}, err
	}
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	items = append([]Value(nil), items...)
	var attrs []Value
	if p[2].kind != KindNone {
		for _, s := range strings.Split(p[2].String(), ",") {
			attrs = append(attrs, String(strings.TrimSpace(s)))
		}
	}
	key := func(v Value) Value {
		if len(attrs) == 0 {
			return sortKey(v, p[1].Truth())
		}
		ks := make([]Value, len(attrs))
		for i, at := range attrs {
			k, _ := attrPath(v, at, Value{})
			ks[i] = sortKey(k, p[1].Truth())
		}
		if len(ks) == 1 {
			return ks[0]
		}
		return ListOf(ks...)
	}
	var sortErr error
	sort.SliceStable(items, func(i, j int) bool {
		c, err := compare(key(items[i]), key(items[j]), "<")
		if err != nil && sortErr == nil {
			sortErr = err
		}
		if p[0].Truth() {
			return c > 0
		}
		return c < 0
	})
	return ListOf(items...), sortErr
}

func fSum(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("sum", a, kw, []string{"attribute", "start"}, None(), Int(0))
	if err != nil {
		return Value{}, err
	}
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	total := p[1]
	for _, it := range items {
		if p[0].kind != KindNone {
			if it, err = attrPath(it, p[0], Value{}); err != nil {
				return Value{}, err
			}
		}
		if total, err = r.binary("+", total, it); err != nil {
			return Value{}, err
		}
	}
	return total, r.step(len(items))
}

func fToJSON(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("tojson", a, kw, []string{"ensure_ascii", "indent", "separators", "sort_keys"}, Bool(false), None(), None(), Bool(false))
	if err != nil {
		return Value{}, err
	}
	o := jsonOptions{ensureASCII: p[0].Truth(), sortKeys: p[3].Truth(), itemSep: ", ", keySep: ": "}
	switch p[1].kind {
	case KindNone:
	case KindInt, KindBool:
		if p[1].n > 1<<10 {
			return Value{}, errorf(ErrLimit, "indent %d too large", p[1].n)
		}
		s := strings.Repeat(" ", int(max(p[1].n, 0)))
		o.indent = &s
	case KindString:
		s := p[1].s
		o.indent = &s
	default:
		return Value{}, errorf(ErrType, "indent must be an integer or a string")
	}
	if o.indent != nil {
		o.itemSep = ","
	}
	if p[2].kind != KindNone {
		seps, err := r.iterate(p[2])
		if err != nil || len(seps) != 2 || seps[0].kind != KindString || seps[1].kind != KindString {
			return Value{}, errorf(ErrType, "separators must be a pair of strings")
		}
		o.itemSep, o.keySep = seps[0].s, seps[1].s
	}
	s, err := r.toJSON(x, o)
	return String(s), err
}

func fTrim(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("trim", a, kw, []string{"chars"}, None())
	if err != nil {
		return Value{}, err
	}
	return keepMarkup(x, pyStrip(x.String(), p[0], true, true)), nil
}

func fTruncate(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("truncate", a, kw, []string{"length", "killwords", "end", "leeway"}, Int(255), Bool(false), String("..."), Int(5))
	if err != nil {
		return Value{}, err
	}
	s := []rune(x.String())
	length, leeway := int(p[0].n), int(p[3].n)
	end := p[2].String()
	if len(s) <= length+leeway {
		return String(string(s)), nil
	}
	cut := max(length-utf8.RuneCountInString(end), 0)
	if p[1].Truth() {
		return String(string(s[:cut]) + end), nil
	}
	head := string(s[:cut])
	if i := strings.LastIndex(head, " "); i >= 0 {
		head = head[:i]
	}
	return String(head + end), nil
}

func fUnique(r *renderer, x Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("unique", a, kw, []string{"case_sensitive", "attribute"}, Bool(false), None())
	if err != nil {
		return Value{}, err
	}
	items, err := r.iterate(x)
	if err != nil {
		return Value{}, err
	}
	seen := map[hashKey]bool{}
	var out []Value
	for _, it := range items {
		k := it
		if p[1].kind != KindNone {
			if k, err = attrPath(it, p[1], Value{}); err != nil {
				return Value{}, err
			}
		}
		k = sortKey(k, p[0].Truth())
		if err := hashable(k); err != nil {
			return Value{}, err
		}
		if !seen[k.hash()] {
			seen[k.hash()] = true
			out = append(out, it)
		}
	}
	return iterOf("generator", out), r.step(len(items))
}

// Tests.

func tDivisible(r *renderer, x Value, a []Value) (bool, error) {
	if len(a) != 1 {
		return false, errorf(ErrType, "divisibleby takes one argument")
	}
	m, err := arith("%", x, a[0])
	if err != nil {
		return false, err
	}
	return !m.Truth(), nil
}

func tParity(want int64) testFunc {
	return func(r *renderer, x Value, a []Value) (bool, error) {
		if !x.isNumber() {
			if x.kind == KindUndefined {
				return false, undefinedUse(x)
			}
			return false, errorf(ErrType, "not all arguments converted during string formatting")
		}
		m, err := arith("%", x, Int(2))
		if err != nil {
			return false, err
		}
		return m.asFloat() == float64(want), nil
	}
}

func tIn(r *renderer, x Value, a []Value) (bool, error) {
	if len(a) != 1 {
		return false, errorf(ErrType, "in takes one argument")
	}
	return contains(a[0], x)
}

func tIterable(r *renderer, x Value, a []Value) (bool, error) {
	switch x.kind {
	case KindString, KindList, KindTuple, KindDict, KindIter, KindUndefined:
		return true, nil
	}
	return false, nil
}

func tSequence(r *renderer, x Value, a []Value) (bool, error) {
	switch x.kind {
	case KindString, KindDict, KindTuple, KindUndefined:
		return true, nil
	case KindList:
		l := x.ref.(*List)
		return l.view == "" || l.view == "range", nil
	}
	return false, nil
}

func tSameas(r *renderer, x Value, a []Value) (bool, error) {
	if len(a) != 1 {
		return false, errorf(ErrType, "sameas takes one argument")
	}
	y := a[0]
	switch {
	case x.kind != y.kind:
		return false, nil
	case x.kind == KindNone:
		return true, nil
	case x.kind == KindBool || x.kind == KindInt:
		return x.n == y.n, nil
	case x.kind == KindString:
		return x.s == y.s, nil
	case x.ref != nil:
		return x.ref == y.ref, nil
	}
	return false, nil
}

// Globals.

// maxRange is the sandbox's bound on range() (jinja2's MAX_RANGE).
const maxRange = 100000

func builtinGlobals() map[string]Value {
	return map[string]Value{
		"range":           funcValue("range", gRange),
		"dict":            funcValue("dict", gDict),
		"namespace":       funcValue("namespace", gNamespace),
		"joiner":          funcValue("joiner", gJoiner),
		"raise_exception": funcValue("raise_exception", gRaise),
		"strftime_now":    funcValue("strftime_now", gStrftimeNow),
	}
}

func gRange(r *renderer, a []Value, kw []kwarg) (Value, error) {
	if len(a) < 1 || len(a) > 3 || len(kw) > 0 {
		return Value{}, errorf(ErrType, "range expected 1 to 3 integer arguments")
	}
	var n [3]int64
	for i, v := range a {
		if v.kind != KindInt && v.kind != KindBool {
			return Value{}, errorf(ErrType, "'%s' object cannot be interpreted as an integer", v.TypeName())
		}
		n[i] = v.n
	}
	start, stop, step := int64(0), n[0], int64(1)
	if len(a) >= 2 {
		start, stop = n[0], n[1]
	}
	if len(a) == 3 {
		step = n[2]
		if step == 0 {
			return Value{}, errorf(ErrType, "range() arg 3 must not be zero")
		}
	}
	var count int64
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		count = (start - stop - step - 1) / -step
	}
	if count > maxRange {
		return Value{}, errorf(ErrSecurity, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)
	}
	if err := r.step(int(count)); err != nil {
		return Value{}, err
	}
	items := make([]Value, count)
	for i := range items {
		items[i] = Int(start + int64(i)*step)
	}
	repr := fmt.Sprintf("range(%d, %d)", start, stop)
	if step != 1 {
		repr = fmt.Sprintf("range(%d, %d, %d)", start, stop, step)
	}
	return Value{kind: KindList, ref: &List{items: items, view: "range", repr: repr}}, nil
}

func gDict(r *renderer, a []Value, kw []kwarg) (Value, error) {
	d := NewDict()
	if len(a) > 1 {
		return Value{}, errorf(ErrType, "dict expected at most 1 argument, got %d", len(a))
	}
	if len(a) == 1 {
		switch a[0].kind {
		case KindDict:
			d = a[0].dict().copyDict()
		default:
			items, err := r.iterate(a[0])
			if err != nil {
				return Value{}, err
			}
			for _, it := range items {
				kv, err := r.iterate(it)
				if err != nil || len(kv) != 2 {
					return Value{}, errorf(ErrType, "dictionary update sequence element has the wrong length")
				}
				if err := hashable(kv[0]); err != nil {
					return Value{}, err
				}
				d.set(kv[0], kv[1])
			}
		}
	}
	for _, k := range kw {
		d.Set(k.name, k.v)
	}
	return DictValue(d), nil
}

func gNamespace(r *renderer, a []Value, kw []kwarg) (Value, error) {
	v, err := gDict(r, a, kw)
	if err != nil {
		return Value{}, err
	}
	return Value{kind: KindNamespace, ref: &Namespace{d: v.dict()}}, nil
}

func gJoiner(r *renderer, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("joiner", a, kw, []string{"sep"}, String(", "))
	if err != nil {
		return Value{}, err
	}
	used := false
	return funcValue("joiner", func(*renderer, []Value, []kwarg) (Value, error) {
		if !used {
			used = true
			return String(""), nil
		}
		return p[0], nil
	}), nil
}

func gRaise(r *renderer, a []Value, kw []kwarg) (Value, error) {
	msg := ""
	if len(a) > 0 {
		msg = a[0].String()
	}
	return Value{}, &Error{Kind: ErrRaised, Msg: msg}
}

func gStrftimeNow(r *renderer, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("strftime_now", a, kw, []string{"format"})
	if err != nil {
		return Value{}, err
	}
	f, err := wantString("strftime_now", p[0])
	if err != nil {
		return Value{}, err
	}
	return String(strftime(r.now(), f)), nil
}

// strftime formats t as C's strftime (glibc's, which Python calls) does
// for the directives templates use; %-d and friends drop the padding.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		noPad := false
		if f[i] == '-' && i+1 < len(f) {
			noPad = true
			i++
		}
		num := func(n, width int) {
			s := strconv.Itoa(n)
			if !noPad {
				for len(s) < width {
					s = "0" + s
				}
			}
			b.WriteString(s)
		}
		switch f[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			s := strconv.Itoa(t.Day())
			if len(s) < 2 && !noPad {
				s = " " + s
			}
			b.WriteString(s)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'j':
			num(t.YearDay(), 3)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'B':
			b.WriteString(t.Month().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'Z':
			name, _ := t.Zone()
			b.WriteString(name)
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if noPad {
				b.WriteByte('-')
			}
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
