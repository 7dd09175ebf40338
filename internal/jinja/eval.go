package jinja

import (
	"fmt"
	"math"
	"strings"
)

func (r *renderer) eval(x expr, sc *scope) (Value, error) {
	if err := r.step(1); err != nil {
		return Value{}, err
	}
	switch x := x.(type) {
	case *constExpr:
		return x.v, nil
	case *nameExpr:
		if v, ok := sc.lookup(x.name); ok {
			return v, nil
		}
		return undefined(fmt.Sprintf("'%s' is undefined", x.name)), nil
	case *attrExpr:
		obj, err := r.eval(x.x, sc)
		if err != nil {
			return Value{}, err
		}
		return getattr(obj, x.name)
	case *itemExpr:
		obj, err := r.eval(x.x, sc)
		if err != nil {
			return Value{}, err
		}
		key, err := r.eval(x.key, sc)
		if err != nil {
			return Value{}, err
		}
		return getitem(obj, key)
	case *sliceExpr:
		return r.evalSlice(x, sc)
	case *callExpr:
		return r.evalCall(x, sc)
	case *filterExpr:
		v, err := r.eval(x.x, sc)
		if err != nil {
			return Value{}, err
		}
		return r.callFilter(x, v, sc)
	case *testExpr:
		return r.evalTest(x, sc)
	case *unaryExpr:
		v, err := r.eval(x.x, sc)
		if err != nil {
			return Value{}, err
		}
		switch x.op {
		case "not":
			return Bool(!v.Truth()), nil
		case "-":
			switch v.kind {
			case KindInt, KindBool:
				if v.n == math.MinInt64 {
					return Value{}, errorf(ErrType, "integer overflow")
				}
				return Int(-v.n), nil
			case KindFloat:
				return Float(-v.f), nil
			case KindUndefined:
				return Value{}, undefinedUse(v)
			}
			return Value{}, errorf(ErrType, "bad operand type for unary -: '%s'", v.TypeName())
		default:
			switch v.kind {
			case KindInt, KindBool:
				return Int(v.n), nil
			case KindFloat:
				return v, nil
			case KindUndefined:
				return Value{}, undefinedUse(v)
			}
			return Value{}, errorf(ErrType, "bad operand type for unary +: '%s'", v.TypeName())
		}
	case *binaryExpr:
		l, err := r.eval(x.l, sc)
		if err != nil {
			return Value{}, err
		}
		switch x.op {
		case "and":
			if !l.Truth() {
				return l, nil
			}
			return r.eval(x.r, sc)
		case "or":
			if l.Truth() {
				return l, nil
			}
			return r.eval(x.r, sc)
		}
		rv, err := r.eval(x.r, sc)
		if err != nil {
			return Value{}, err
		}
		return r.binary(x.op, l, rv)
	case *concatExpr:
		var b strings.Builder
		for _, p := range x.parts {
			v, err := r.eval(p, sc)
			if err != nil {
				return Value{}, err
			}
			b.WriteString(v.String())
			if err := r.checkLen(b.Len()); err != nil {
				return Value{}, err
			}
		}
		return String(b.String()), nil
	case *compareExpr:
		l, err := r.eval(x.first, sc)
		if err != nil {
			return Value{}, err
		}
		for i, op := range x.ops {
			rv, err := r.eval(x.rest[i], sc)
			if err != nil {
				return Value{}, err
			}
			ok, err := r.compareOp(op, l, rv)
			if err != nil {
				return Value{}, err
			}
			if !ok {
				return Bool(false), nil
			}
			l = rv
		}
		return Bool(true), nil
	case *condExpr:
		t, err := r.eval(x.test, sc)
		if err != nil {
			return Value{}, err
		}
		if t.Truth() {
			return r.eval(x.yes, sc)
		}
		if x.no == nil {
			return undefined(fmt.Sprintf("the inline if-expression on line %d evaluated to false and no else section was defined.", x.line)), nil
		}
		return r.eval(x.no, sc)
	case *listExpr:
		items, err := r.evalAll(x.items, sc)
		if err != nil {
			return Value{}, err
		}
		return ListOf(items...), nil
	case *tupleExpr:
		items, err := r.evalAll(x.items, sc)
		if err != nil {
			return Value{}, err
		}
		return tupleOf(items...), nil
	case *dictExpr:
		d := NewDict()
		for i, k := range x.keys {
			kv, err := r.eval(k, sc)
			if err != nil {
				return Value{}, err
			}
			if err := hashable(kv); err != nil {
				return Value{}, err
			}
			v, err := r.eval(x.vals[i], sc)
			if err != nil {
				return Value{}, err
			}
			d.set(kv, v)
		}
		return DictValue(d), nil
	}
	return Value{}, fmt.Errorf("jinja: unknown expression %T", x)
}

func hashable(v Value) error {
	switch v.kind {
	case KindList, KindDict, KindNamespace:
		return errorf(ErrType, "unhashable type: '%s'", v.TypeName())
	}
	return nil
}

func (r *renderer) evalAll(xs []expr, sc *scope) ([]Value, error) {
	out := make([]Value, len(xs))
	for i, x := range xs {
		v, err := r.eval(x, sc)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (r *renderer) compareOp(op string, a, b Value) (bool, error) {
	switch op {
	case "==":
		return equal(a, b), nil
	case "!=":
		return !equal(a, b), nil
	case "in", "notin":
		in, err := contains(b, a)
		if err != nil {
			return false, err
		}
		return in == (op == "in"), nil
	}
	c, err := compare(a, b, op)
	if err != nil {
		return false, err
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

// contains is Python's `x in container`.
func contains(container, x Value) (bool, error) {
	switch container.kind {
	case KindString:
		if x.kind != KindString {
			if x.kind == KindUndefined {
				return false, undefinedUse(x)
			}
			return false, errorf(ErrType, "'in <string>' requires string as left operand, not %s", x.TypeName())
		}
		return strings.Contains(container.s, x.s), nil
	case KindList, KindTuple:
		for _, it := range container.list() {
			if equal(it, x) {
				return true, nil
			}
		}
		return false, nil
	case KindDict:
		if err := hashable(x); err != nil {
			return false, err
		}
		_, ok := container.dict().get(x)
		return ok, nil
	case KindIter:
		it := container.ref.(*iter)
		if it.used {
			return false, nil
		}
		it.used = true
		for _, v := range it.items {
			if equal(v, x) {
				return true, nil
			}
		}
		return false, nil
	case KindUndefined:
		return false, nil
	}
	return false, errorf(ErrType, "argument of type '%s' is not iterable", container.TypeName())
}

func (r *renderer) binary(op string, a, b Value) (Value, error) {
	if a.kind == KindUndefined || b.kind == KindUndefined {
		return Value{}, undefinedUse(a, b)
	}
	if a.isNumber() && b.isNumber() {
		return arith(op, a, b)
	}
	switch op {
	case "+":
		switch {
		case a.isMarkup() || b.isMarkup():
			if a.kind != KindString || b.kind != KindString {
				break
			}
			s := escaped(a) + escaped(b)
			if err := r.checkLen(len(s)); err != nil {
				return Value{}, err
			}
			return markup(s), nil
		case a.kind == KindString && b.kind == KindString:
			if err := r.checkLen(len(a.s) + len(b.s)); err != nil {
				return Value{}, err
			}
			return String(a.s + b.s), nil
		case (a.kind == KindList || a.kind == KindTuple) && a.kind == b.kind:
			x, y := a.list(), b.list()
			if err := r.checkItems(len(x) + len(y)); err != nil {
				return Value{}, err
			}
			items := append(append(make([]Value, 0, len(x)+len(y)), x...), y...)
			if a.kind == KindTuple {
				return tupleOf(items...), nil
			}
			return ListOf(items...), nil
		case a.kind == KindString || a.kind == KindList || a.kind == KindTuple:
			return Value{}, errorf(ErrType, "can only concatenate %s (not \"%s\") to %s", a.TypeName(), b.TypeName(), a.TypeName())
		}
	case "*":
		seq, n := a, b
		if b.kind == KindString || b.kind == KindList || b.kind == KindTuple {
			seq, n = b, a
		}
		if n.kind == KindInt || n.kind == KindBool {
			count := max(n.n, 0)
			switch seq.kind {
			case KindString:
				if count > 0 && int64(len(seq.s)) > int64(r.lim.MaxOutput)/count {
					return Value{}, r.checkLen(r.lim.MaxOutput + 1)
				}
				return keepMarkup(seq, strings.Repeat(seq.s, int(count))), nil
			case KindList, KindTuple:
				items := seq.list()
				if count > 0 && int64(len(items)) > int64(r.lim.MaxOutput)/16/count {
					return Value{}, r.checkItems(r.lim.MaxOutput + 1)
				}
				if err := r.checkItems(len(items) * int(count)); err != nil {
					return Value{}, err
				}
				out := make([]Value, 0, len(items)*int(count))
				for range count {
					out = append(out, items...)
				}
				if seq.kind == KindTuple {
					return tupleOf(out...), nil
				}
				return ListOf(out...), nil
			}
		}
	case "%":
		if a.kind == KindString {
			if a.isMarkup() {
				b = escapeArgs(b)
			}
			s, err := r.printf(a.s, b)
			return keepMarkup(a, s), err
		}
	}
	return Value{}, errorf(ErrType, "unsupported operand type(s) for %s: '%s' and '%s'", op, a.TypeName(), b.TypeName())
}

// arith is Python's arithmetic on ints (bools count as ints) and floats.
func arith(op string, a, b Value) (Value, error) {
	if a.kind != KindFloat && b.kind != KindFloat {
		x, y := a.n, b.n
		switch op {
		case "+":
			s := x + y
			if (s > x) != (y > 0) {
				return Value{}, errorf(ErrType, "integer overflow")
			}
			return Int(s), nil
		case "-":
			s := x - y
			if (s < x) != (y > 0) {
				return Value{}, errorf(ErrType, "integer overflow")
			}
			return Int(s), nil
		case "*":
			if x != 0 && y != 0 {
				p := x * y
				if p/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
					return Value{}, errorf(ErrType, "integer overflow")
				}
				return Int(p), nil
			}
			return Int(0), nil
		case "/":
			if y == 0 {
				return Value{}, errorf(ErrType, "division by zero")
			}
			return Float(float64(x) / float64(y)), nil
		case "//":
			if y == 0 {
				return Value{}, errorf(ErrType, "integer division or modulo by zero")
			}
			q := x / y
			if (x%y != 0) && ((x < 0) != (y < 0)) {
				q--
			}
			return Int(q), nil
		case "%":
			if y == 0 {
				return Value{}, errorf(ErrType, "integer division or modulo by zero")
			}
			m := x % y
			if m != 0 && ((m < 0) != (y < 0)) {
				m += y
			}
			return Int(m), nil
		case "**":
			if y < 0 {
				return Float(math.Pow(float64(x), float64(y))), nil
			}
			switch x {
			case 0, 1:
				if y == 0 {
					return Int(1), nil
				}
				return Int(x), nil
			case -1:
				return Int(1 - 2*(y&1)), nil
			}
			p := int64(1)
			for range y { // |x| ≥ 2: overflows within 63 rounds
				if (p*x)/x != p {
					return Value{}, errorf(ErrType, "integer overflow")
				}
				p *= x
			}
			return Int(p), nil
		}
	}
	x, y := a.asFloat(), b.asFloat()
	switch op {
	case "+":
		return Float(x + y), nil
	case "-":
		return Float(x - y), nil
	case "*":
		return Float(x * y), nil
	case "/":
		if y == 0 {
			return Value{}, errorf(ErrType, "float division by zero")
		}
		return Float(x / y), nil
	case "//":
		if y == 0 {
			return Value{}, errorf(ErrType, "float floor division by zero")
		}
		return Float(math.Floor(x / y)), nil
	case "%":
		if y == 0 {
			return Value{}, errorf(ErrType, "float modulo")
		}
		m := math.Mod(x, y)
		if m != 0 && ((m < 0) != (y < 0)) {
			m += y
		}
		return Float(m), nil
	case "**":
		return Float(math.Pow(x, y)), nil
	}
	return Value{}, errorf(ErrType, "unsupported operand %s", op)
}

func (r *renderer) evalSlice(x *sliceExpr, sc *scope) (Value, error) {
	obj, err := r.eval(x.x, sc)
	if err != nil {
		return Value{}, err
	}
	var bounds [3]*int64
	for i, e := range []expr{x.start, x.stop, x.step} {
		if e == nil {
			continue
		}
		v, err := r.eval(e, sc)
		if err != nil {
			return Value{}, err
		}
		switch v.kind {
		case KindNone:
		case KindInt, KindBool:
			n := v.n
			bounds[i] = &n
		case KindUndefined:
			return Value{}, undefinedUse(v)
		default:
			return Value{}, errorf(ErrType, "slice indices must be integers or None")
		}
	}
	switch obj.kind {
	case KindString:
		runes := []rune(obj.s)
		idx, err := sliceIndices(len(runes), bounds)
		if err != nil {
			return Value{}, err
		}
		out := make([]rune, len(idx))
		for i, j := range idx {
			out[i] = runes[j]
		}
		return String(string(out)), nil
	case KindList, KindTuple:
		if l := obj.ref.(*List); l.view != "" && l.view != "range" {
			return undefined(fmt.Sprintf("'%s' object is not subscriptable", l.view)), nil
		}
		items := obj.list()
		idx, err := sliceIndices(len(items), bounds)
		if err != nil {
			return Value{}, err
		}
		out := make([]Value, len(idx))
		for i, j := range idx {
			out[i] = items[j]
		}
		if obj.kind == KindTuple {
			return tupleOf(out...), nil
		}
		return ListOf(out...), nil
	case KindUndefined:
		return Value{}, undefinedUse(obj)
	}
	return undefined(fmt.Sprintf("'%s' object is not subscriptable", obj.TypeName())), nil
}

// sliceIndices returns the indices of seq[start:stop:step] for a sequence
// of n items, as Python's slice.indices does.
func sliceIndices(n int, b [3]*int64) ([]int, error) {
	step := int64(1)
	if b[2] != nil {
		step = *b[2]
		if step == 0 {
			return nil, errorf(ErrType, "slice step cannot be zero")
		}
	}
	clamp := func(p *int64, def int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += int64(n)
			if v < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		}
		if v >= int64(n) {
			if step < 0 {
				return int64(n) - 1
			}
			return int64(n)
		}
		return v
	}
	var start, stop int64
	if step > 0 {
		start, stop = clamp(b[0], 0), clamp(b[1], int64(n))
	} else {
		start, stop = clamp(b[0], int64(n)-1), clamp(b[1], -1)
		if b[1] != nil && *b[1] < -int64(n) {
			stop = -1
		}
	}
	var out []int
	if step > 0 {
		for i := start; i < stop; i += step {
			out = append(out, int(i))
		}
	} else {
		for i := start; i > stop; i += step {
			out = append(out, int(i))
		}
	}
	return out, nil
}

func (r *renderer) evalCall(x *callExpr, sc *scope) (Value, error) {
	fn, err := r.eval(x.fn, sc)
	if err != nil {
		return Value{}, err
	}
	args, err := r.evalAll(x.args, sc)
	if err != nil {
		return Value{}, err
	}
	if x.star != nil {
		v, err := r.eval(x.star, sc)
		if err != nil {
			return Value{}, err
		}
		more, err := r.iterate(v)
		if err != nil {
			return Value{}, err
		}
		args = append(args, more...)
	}
	kw := make([]kwarg, len(x.kwargs))
	for i, e := range x.kwargs {
		v, err := r.eval(e, sc)
		if err != nil {
			return Value{}, err
		}
		kw[i] = kwarg{x.kwnames[i], v}
	}
	if x.dstar != nil {
		v, err := r.eval(x.dstar, sc)
		if err != nil {
			return Value{}, err
		}
		if v.kind != KindDict {
			return Value{}, errorf(ErrType, "argument after ** must be a mapping, not %s", v.TypeName())
		}
		d := v.dict()
		for i, k := range d.keys {
			kw = append(kw, kwarg{k.String(), d.vals[i]})
		}
	}
	return r.call(fn, args, kw)
}

func (r *renderer) call(fn Value, args []Value, kw []kwarg) (Value, error) {
	switch fn.kind {
	case KindFunc:
		return fn.ref.(*Func).call(r, args, kw)
	case kindLoop:
		ls := fn.ref.(*loopState)
		if ls.recurse == nil {
			return Value{}, errorf(ErrType, "Tried to call non recursive loop.  Maybe you forgot the 'recursive' modifier.")
		}
		if len(args) != 1 {
			return Value{}, errorf(ErrType, "loop() takes one iterable")
		}
		return ls.recurse(args[0])
	case KindUndefined:
		return Value{}, undefinedUse(fn)
	}
	return Value{}, errorf(ErrType, "'%s' object is not callable", fn.TypeName())
}

// getattr is jinja2's sandboxed obj.name: an attribute (a method) first,
// then an item; the sandbox refuses private and mutating attributes.
func getattr(obj Value, name string) (Value, error) {
	if obj.kind == KindUndefined {
		return Value{}, undefinedUse(obj)
	}
	if strings.HasPrefix(name, "__") {
		return unsafeAttr(obj, name), nil
	}
	if m, ok := method(obj, name); ok {
		return m, nil
	}
	switch obj.kind {
	case KindDict:
		if v, ok := obj.dict().get(String(name)); ok {
			return v, nil
		}
	case KindNamespace:
		if v, ok := obj.ref.(*Namespace).d.get(String(name)); ok {
			return v, nil
		}
	case kindLoop:
		if v, ok := obj.ref.(*loopState).attr(name); ok {
			return v, nil
		}
	}
	return undefined(fmt.Sprintf("%s has no attribute '%s'", objectTypeRepr(obj), name)), nil
}

// objectTypeRepr names a value's type as jinja2's error hints do.
func objectTypeRepr(v Value) string {
	switch v.kind {
	case KindNone:
		return "'None'"
	case KindBool:
		if v.n != 0 {
			return "'True'"
		}
		return "'False'"
	}
	return "'" + v.TypeName() + " object'"
}

// getitem is jinja2's sandboxed obj[key]: an item first, then, for a
// string key, an attribute.
func getitem(obj Value, key Value) (Value, error) {
	if obj.kind == KindUndefined {
		return Value{}, undefinedUse(obj)
	}
	switch obj.kind {
	case KindDict:
		if err := hashable(key); err != nil {
			return Value{}, err
		}
		if v, ok := obj.dict().get(key); ok {
			return v, nil
		}
	case KindList, KindTuple, KindString:
		if l, ok := obj.ref.(*List); ok && l.view != "" && l.view != "range" {
			break
		}
		if key.kind == KindInt || key.kind == KindBool {
			n := len(obj.list())
			if obj.kind == KindString {
				runes := []rune(obj.s)
				i := key.n
				if i < 0 {
					i += int64(len(runes))
				}
				if i >= 0 && i < int64(len(runes)) {
					return String(string(runes[i])), nil
				}
				break
			}
			i := key.n
			if i < 0 {
				i += int64(n)
			}
			if i >= 0 && i < int64(n) {
				return obj.list()[i], nil
			}
		}
	}
	if key.kind == KindString {
		return getattr(obj, key.s)
	}
	return undefined(fmt.Sprintf("%s has no element %s", objectTypeRepr(obj), key.Repr())), nil
}

// escapeArgs escapes the string arguments of Markup's % (a value, a tuple
// of them, or a dict's values).
func escapeArgs(v Value) Value {
	switch v.kind {
	case KindString:
		return markup(escaped(v))
	case KindTuple:
		items := make([]Value, len(v.list()))
		for i, x := range v.list() {
			items[i] = escapeArgs(x)
		}
		return tupleOf(items...)
	case KindDict:
		d := NewDict()
		for i, k := range v.dict().keys {
			d.set(k, escapeArgs(v.dict().vals[i]))
		}
		return DictValue(d)
	}
	return v
}
