package jinja

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The methods templates call on strings, dicts and lists, with Python's
// semantics. Methods that mutate a list or dict are refused, as
// jinja2's ImmutableSandboxedEnvironment refuses them: accessing one gives
// an undefined value whose use is a security error.

var unsafeMethods = map[Kind]map[string]bool{
	KindList: {"append": true, "clear": true, "pop": true, "reverse": true, "insert": true, "sort": true, "extend": true, "remove": true},
	KindDict: {"clear": true, "pop": true, "popitem": true, "setdefault": true, "update": true},
}

type methodFunc func(r *renderer, self Value, args []Value, kw []kwarg) (Value, error)

var stringMethods, dictMethods, listMethods map[string]methodFunc

func init() {
	stringMethods = map[string]methodFunc{
		"split":        func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) { return strSplit(r, s, a, kw, false) },
		"rsplit":       func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) { return strSplit(r, s, a, kw, true) },
		"strip":        strStrip(true, true),
		"lstrip":       strStrip(true, false),
		"rstrip":       strStrip(false, true),
		"startswith":   strAffix(strings.HasPrefix),
		"endswith":     strAffix(strings.HasSuffix),
		"replace":      strReplace,
		"upper":        strMap(strings.ToUpper),
		"lower":        strMap(strings.ToLower),
		"casefold":     strMap(strings.ToLower),
		"swapcase":     strMap(swapCase),
		"title":        strMap(pyTitle),
		"capitalize":   strMap(pyCapitalize),
		"find":         strFind(false, false),
		"rfind":        strFind(true, false),
		"index":        strFind(false, true),
		"rindex":       strFind(true, true),
		"count":        strCount,
		"join":         strJoin,
		"format":       func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) { return r.strFormat(s.s, a, kw) },
		"splitlines":   strSplitlines,
		"isdigit":      strIs(func(c rune) bool { return unicode.IsDigit(c) }),
		"isdecimal":    strIs(func(c rune) bool { return unicode.Is(unicode.Nd, c) }),
		"isnumeric":    strIs(unicode.IsNumber),
		"isalpha":      strIs(unicode.IsLetter),
		"isalnum":      strIs(func(c rune) bool { return unicode.IsLetter(c) || unicode.IsNumber(c) }),
		"isspace":      strIs(isPySpace),
		"isupper":      strCased(true),
		"islower":      strCased(false),
		"removeprefix": strRemove(true),
		"removesuffix": strRemove(false),
		"partition":    strPartition(false),
		"rpartition":   strPartition(true),
		"zfill":        strZfill,
		"ljust":        strJustify('<'),
		"rjust":        strJustify('>'),
		"center":       strJustify('^'),
	}
	dictMethods = map[string]methodFunc{
		"get": func(r *renderer, d Value, a []Value, kw []kwarg) (Value, error) {
			p, err := bind("get", a, kw, []string{"key", "default"}, None())
			if err != nil {
				return Value{}, err
			}
			if err := hashable(p[0]); err != nil {
				return Value{}, err
			}
			if v, ok := d.dict().get(p[0]); ok {
				return v, nil
			}
			return p[1], nil
		},
		"items": func(r *renderer, d Value, a []Value, kw []kwarg) (Value, error) {
			if err := noArgs("items", a, kw); err != nil {
				return Value{}, err
			}
			return viewOf("dict_items", dictItems(d.dict())), nil
		},
		"keys": func(r *renderer, d Value, a []Value, kw []kwarg) (Value, error) {
			if err := noArgs("keys", a, kw); err != nil {
				return Value{}, err
			}
			return viewOf("dict_keys", append([]Value(nil), d.dict().keys...)), nil
		},
		"values": func(r *renderer, d Value, a []Value, kw []kwarg) (Value, error) {
			if err := noArgs("values", a, kw); err != nil {
				return Value{}, err
			}
			return viewOf("dict_values", append([]Value(nil), d.dict().vals...)), nil
		},
		"copy": func(r *renderer, d Value, a []Value, kw []kwarg) (Value, error) {
			return DictValue(d.dict().copyDict()), noArgs("copy", a, kw)
		},
	}
	listMethods = map[string]methodFunc{
		"index": func(r *renderer, l Value, a []Value, kw []kwarg) (Value, error) {
			p, err := bind("index", a, kw, []string{"value"})
			if err != nil {
				return Value{}, err
			}
			for i, x := range l.list() {
				if equal(x, p[0]) {
					return Int(int64(i)), nil
				}
			}
			return Value{}, errorf(ErrType, "%s is not in list", p[0].Repr())
		},
		"count": func(r *renderer, l Value, a []Value, kw []kwarg) (Value, error) {
			p, err := bind("count", a, kw, []string{"value"})
			if err != nil {
				return Value{}, err
			}
			n := 0
			for _, x := range l.list() {
				if equal(x, p[0]) {
					n++
				}
			}
			return Int(int64(n)), nil
		},
		"copy": func(r *renderer, l Value, a []Value, kw []kwarg) (Value, error) {
			return ListOf(append([]Value(nil), l.list()...)...), noArgs("copy", a, kw)
		},
	}
}

func dictItems(d *Dict) []Value {
	out := make([]Value, len(d.keys))
	for i, k := range d.keys {
		out[i] = tupleOf(k, d.vals[i])
	}
	return out
}

// method returns obj.name bound to obj, when obj's type has that method.
func method(obj Value, name string) (Value, bool) {
	var m methodFunc
	switch obj.kind {
	case KindString:
		m = stringMethods[name]
	case KindDict:
		m = dictMethods[name]
	case KindList, KindTuple:
		if l := obj.ref.(*List); l.view != "" {
			return Value{}, false
		}
		if obj.kind == KindTuple && name == "copy" {
			return Value{}, false
		}
		m = listMethods[name]
	}
	if m == nil {
		if unsafeMethods[obj.kind][name] && !(obj.kind == KindList && obj.ref.(*List).view != "") {
			return unsafeAttr(obj, name), true
		}
		return Value{}, false
	}
	return funcValue(name, func(r *renderer, args []Value, kw []kwarg) (Value, error) {
		return m(r, obj, args, kw)
	}), true
}

// bind matches a built-in's arguments to its parameters as Python does;
// defaults belong to the last parameters.
func bind(fname string, args []Value, kw []kwarg, names []string, defaults ...Value) ([]Value, error) {
	if len(args) > len(names) {
		return nil, errorf(ErrType, "%s() takes at most %d arguments (%d given)", fname, len(names), len(args))
	}
	out := make([]Value, len(names))
	set := make([]bool, len(names))
	for i, a := range args {
		out[i], set[i] = a, true
	}
	for _, k := range kw {
		found := false
		for i, n := range names {
			if n == k.name {
				if set[i] {
					return nil, errorf(ErrType, "%s() got multiple values for argument '%s'", fname, n)
				}
				out[i], set[i], found = k.v, true, true
			}
		}
		if !found {
			return nil, errorf(ErrType, "%s() got an unexpected keyword argument '%s'", fname, k.name)
		}
	}
	first := len(names) - len(defaults)
	for i := range names {
		if !set[i] {
			if i < first {
				return nil, errorf(ErrType, "%s() missing required argument '%s'", fname, names[i])
			}
			out[i] = defaults[i-first]
		}
	}
	return out, nil
}

func noArgs(fname string, args []Value, kw []kwarg) error {
	if len(args) > 0 || len(kw) > 0 {
		return errorf(ErrType, "%s() takes no arguments", fname)
	}
	return nil
}

func wantString(fname string, v Value) (string, error) {
	if v.kind != KindString {
		if v.kind == KindUndefined {
			return "", undefinedUse(v)
		}
		return "", errorf(ErrType, "%s() argument must be str, not %s", fname, v.TypeName())
	}
	return v.s, nil
}

func optInt(fname string, v Value, def int64) (int64, error) {
	switch v.kind {
	case KindNone:
		return def, nil
	case KindInt, KindBool:
		return v.n, nil
	}
	return 0, errorf(ErrType, "%s(): an integer is required, not '%s'", fname, v.TypeName())
}

func strSplit(r *renderer, s Value, a []Value, kw []kwarg, right bool) (Value, error) {
	p, err := bind("split", a, kw, []string{"sep", "maxsplit"}, None(), Int(-1))
	if err != nil {
		return Value{}, err
	}
	maxsplit, err := optInt("split", p[1], -1)
	if err != nil {
		return Value{}, err
	}
	var parts []string
	if p[0].kind == KindNone {
		parts = splitSpace(s.s, int(maxsplit), right)
	} else {
		sep, err := wantString("split", p[0])
		if err != nil {
			return Value{}, err
		}
		if sep == "" {
			return Value{}, errorf(ErrType, "empty separator")
		}
		n := -1
		if maxsplit >= 0 {
			n = int(maxsplit) + 1
		}
		if right {
			parts = rsplitN(s.s, sep, n)
		} else {
			parts = strings.SplitN(s.s, sep, n)
		}
	}
	if err := r.step(len(parts)); err != nil {
		return Value{}, err
	}
	out := make([]Value, len(parts))
	for i, x := range parts {
		out[i] = String(x)
	}
	return ListOf(out...), nil
}

func rsplitN(s, sep string, n int) []string {
	if n < 0 {
		return strings.Split(s, sep)
	}
	var out []string
	for len(out) < n-1 {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		out = append(out, s[i+len(sep):])
		s = s[:i]
	}
	out = append(out, s)
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// splitSpace is str.split() without a separator: runs of white space
// separate, and none is kept at either end.
func splitSpace(s string, maxsplit int, right bool) []string {
	if !right {
		var out []string
		for {
			s = strings.TrimLeftFunc(s, isPySpace)
			if s == "" {
				return out
			}
			if maxsplit >= 0 && len(out) == maxsplit {
				return append(out, s)
			}
			i := strings.IndexFunc(s, isPySpace)
			if i < 0 {
				return append(out, s)
			}
			out = append(out, s[:i])
			s = s[i:]
		}
	}
	var out []string
	for {
		s = strings.TrimRightFunc(s, isPySpace)
		if s == "" {
			break
		}
		if maxsplit >= 0 && len(out) == maxsplit {
			out = append(out, s)
			break
		}
		i := strings.LastIndexFunc(s, isPySpace)
		if i < 0 {
			out = append(out, s)
			break
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		out = append(out, s[i+n:])
		s = s[:i]
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func strStrip(left, right bool) methodFunc {
	return func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
		p, err := bind("strip", a, kw, []string{"chars"}, None())
		if err != nil {
			return Value{}, err
		}
		return String(pyStrip(s.s, p[0], left, right)), nil
	}
}

// pyStrip is str.strip/lstrip/rstrip: white space, or the characters of
// chars when it is a string.
func pyStrip(s string, chars Value, left, right bool) string {
	cut := isPySpace
	if chars.kind == KindString {
		set := chars.s
		cut = func(r rune) bool { return strings.ContainsRune(set, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s
}

func strAffix(has func(s, affix string) bool) methodFunc {
	return func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
		if len(a) < 1 || len(a) > 3 || len(kw) > 0 {
			return Value{}, errorf(ErrType, "startswith/endswith take 1 to 3 positional arguments")
		}
		text := s.s
		if len(a) > 1 {
			runes := []rune(text)
			var b [3]*int64
			for i, x := range a[1:] {
				if x.kind != KindNone {
					n, err := optInt("startswith", x, 0)
					if err != nil {
						return Value{}, err
					}
					b[i] = &n
				}
			}
			idx, _ := sliceIndices(len(runes), b)
			sub := make([]rune, len(idx))
			for i, j := range idx {
				sub[i] = runes[j]
			}
			text = string(sub)
		}
		affixes := []Value{a[0]}
		if a[0].kind == KindTuple {
			affixes = a[0].list()
		}
		for _, x := range affixes {
			af, err := wantString("startswith", x)
			if err != nil {
				return Value{}, err
			}
			if has(text, af) {
				return Bool(true), nil
			}
		}
		return Bool(false), nil
	}
}

func strReplace(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("replace", a, kw, []string{"old", "new", "count"}, Int(-1))
	if err != nil {
		return Value{}, err
	}
	old, err := wantString("replace", p[0])
	if err != nil {
		return Value{}, err
	}
	repl, err := wantString("replace", p[1])
	if err != nil {
		return Value{}, err
	}
	n, err := optInt("replace", p[2], -1)
	if err != nil {
		return Value{}, err
	}
	if n < 0 {
		n = -1
	}
	count := strings.Count(s.s, old)
	if old == "" {
		count = utf8.RuneCountInString(s.s) + 1
	}
	if n >= 0 && int64(count) > n {
		count = int(n)
	}
	if err := r.checkLen(len(s.s) + count*(len(repl)-len(old))); err != nil {
		return Value{}, err
	}
	return String(strings.Replace(s.s, old, repl, int(n))), nil
}

func strMap(f func(string) string) methodFunc {
	return func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
		return String(f(s.s)), noArgs("method", a, kw)
	}
}

func swapCase(s string) string {
	return strings.Map(func(c rune) rune {
		if unicode.IsUpper(c) {
			return unicode.ToLower(c)
		}
		return unicode.ToUpper(c)
	}, s)
}

// pyTitle is str.title: a cased character after an uncased one goes to
// title case, the others to lower case.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, c := range s {
		cased := unicode.IsUpper(c) || unicode.IsLower(c) || unicode.IsTitle(c)
		if cased && !prevCased {
			b.WriteRune(unicode.ToTitle(c))
		} else {
			b.WriteRune(unicode.ToLower(c))
		}
		prevCased = cased
	}
	return b.String()
}

// pyCapitalize is str.capitalize: the first character in title case, the
// rest in lower case.
func pyCapitalize(s string) string {
	c, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToTitle(c)) + strings.ToLower(s[n:])
}

// runeRange returns s[start:end] in code points and its offset.
func runeRange(s string, a []Value) (string, int, error) {
	runes := []rune(s)
	var b [3]*int64
	for i, x := range a {
		if i >= 2 {
			break
		}
		if x.kind != KindNone {
			n, err := optInt("find", x, 0)
			if err != nil {
				return "", 0, err
			}
			b[i] = &n
		}
	}
	idx, _ := sliceIndices(len(runes), b)
	if len(idx) == 0 {
		start := 0
		if b[0] != nil {
			start = int(*b[0])
			if start < 0 {
				start = max(0, start+len(runes))
			}
		}
		if start > len(runes) {
			return "", -1, nil
		}
		return "", start, nil
	}
	return string(runes[idx[0] : idx[len(idx)-1]+1]), idx[0], nil
}

func strFind(last, raise bool) methodFunc {
	return func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
		if len(a) < 1 || len(a) > 3 || len(kw) > 0 {
			return Value{}, errorf(ErrType, "find takes 1 to 3 positional arguments")
		}
		sub, err := wantString("find", a[0])
		if err != nil {
			return Value{}, err
		}
		text, off, err := runeRange(s.s, a[1:])
		if err != nil {
			return Value{}, err
		}
		i := -1
		if off >= 0 {
			if last {
				i = strings.LastIndex(text, sub)
			} else {
				i = strings.Index(text, sub)
			}
		}
		if i < 0 {
			if raise {
				return Value{}, errorf(ErrType, "substring not found")
			}
			return Int(-1), nil
		}
		return Int(int64(off + utf8.RuneCountInString(text[:i]))), nil
	}
}

func strCount(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
	if len(a) < 1 || len(a) > 3 || len(kw) > 0 {
		return Value{}, errorf(ErrType, "count takes 1 to 3 positional arguments")
	}
	sub, err := wantString("count", a[0])
	if err != nil {
		return Value{}, err
	}
	text, _, err := runeRange(s.s, a[1:])
	if err != nil {
		return Value{}, err
	}
	if sub == "" {
		return Int(int64(utf8.RuneCountInString(text) + 1)), nil
	}
	return Int(int64(strings.Count(text, sub))), nil
}

func strJoin(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("join", a, kw, []string{"iterable"})
	if err != nil {
		return Value{}, err
	}
	items, err := r.iterate(p[0])
	if err != nil {
		return Value{}, err
	}
	var b strings.Builder
	for i, x := range items {
		if x.kind != KindString {
			return Value{}, errorf(ErrType, "sequence item %d: expected str instance, %s found", i, x.TypeName())
		}
		if i > 0 {
			b.WriteString(s.s)
		}
		b.WriteString(x.s)
		if err := r.checkLen(b.Len()); err != nil {
			return Value{}, err
		}
	}
	return String(b.String()), r.step(len(items))
}

// isLineBreak lists the characters str.splitlines breaks at.
func isLineBreak(c rune) bool {
	switch c {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

func strSplitlines(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("splitlines", a, kw, []string{"keepends"}, Bool(false))
	if err != nil {
		return Value{}, err
	}
	keep := p[0].Truth()
	var out []Value
	text := s.s
	for text != "" {
		i := strings.IndexFunc(text, isLineBreak)
		if i < 0 {
			out = append(out, String(text))
			break
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		if text[i] == '\r' && strings.HasPrefix(text[i+1:], "\n") {
			n = 2
		}
		if keep {
			out = append(out, String(text[:i+n]))
		} else {
			out = append(out, String(text[:i]))
		}
		text = text[i+n:]
	}
	return ListOf(out...), r.step(len(out))
}

func strIs(pred func(rune) bool) methodFunc {
	return func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
		if s.s == "" {
			return Bool(false), noArgs("is", a, kw)
		}
		for _, c := range s.s {
			if !pred(c) {
				return Bool(false), nil
			}
		}
		return Bool(true), noArgs("is", a, kw)
	}
}

func strCased(upper bool) methodFunc {
	return func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
		cased := false
		for _, c := range s.s {
			if unicode.IsUpper(c) || unicode.IsTitle(c) {
				if !upper {
					return Bool(false), nil
				}
				cased = true
			} else if unicode.IsLower(c) {
				if upper {
					return Bool(false), nil
				}
				cased = true
			}
		}
		return Bool(cased), noArgs("is", a, kw)
	}
}

func strRemove(prefix bool) methodFunc {
	return func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
		p, err := bind("removeprefix", a, kw, []string{"affix"})
		if err != nil {
			return Value{}, err
		}
		af, err := wantString("removeprefix", p[0])
		if err != nil {
			return Value{}, err
		}
		if prefix {
			return String(strings.TrimPrefix(s.s, af)), nil
		}
		return String(strings.TrimSuffix(s.s, af)), nil
	}
}

func strPartition(last bool) methodFunc {
	return func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
		p, err := bind("partition", a, kw, []string{"sep"})
		if err != nil {
			return Value{}, err
		}
		sep, err := wantString("partition", p[0])
		if err != nil {
			return Value{}, err
		}
		if sep == "" {
			return Value{}, errorf(ErrType, "empty separator")
		}
		i := strings.Index(s.s, sep)
		if last {
			i = strings.LastIndex(s.s, sep)
		}
		if i < 0 {
			if last {
				return tupleOf(String(""), String(""), s), nil
			}
			return tupleOf(s, String(""), String("")), nil
		}
		return tupleOf(String(s.s[:i]), String(sep), String(s.s[i+len(sep):])), nil
	}
}

func strZfill(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
	p, err := bind("zfill", a, kw, []string{"width"})
	if err != nil {
		return Value{}, err
	}
	w, err := optInt("zfill", p[0], 0)
	if err != nil {
		return Value{}, err
	}
	if err := r.checkLen(int(min(w, int64(r.lim.MaxOutput)+1))); err != nil {
		return Value{}, err
	}
	n := utf8.RuneCountInString(s.s)
	if int64(n) >= w {
		return s, nil
	}
	sign := ""
	body := s.s
	if strings.HasPrefix(body, "-") || strings.HasPrefix(body, "+") {
		sign, body = body[:1], body[1:]
	}
	return String(sign + strings.Repeat("0", int(w)-n) + body), nil
}

func strJustify(align byte) methodFunc {
	return func(r *renderer, s Value, a []Value, kw []kwarg) (Value, error) {
		p, err := bind("ljust", a, kw, []string{"width", "fillchar"}, String(" "))
		if err != nil {
			return Value{}, err
		}
		w, err := optInt("ljust", p[0], 0)
		if err != nil {
			return Value{}, err
		}
		if err := r.checkLen(int(min(w, int64(r.lim.MaxOutput)+1))); err != nil {
			return Value{}, err
		}
		fill, err := wantString("ljust", p[1])
		if err != nil || utf8.RuneCountInString(fill) != 1 {
			return Value{}, errorf(ErrType, "The fill character must be exactly one character long")
		}
		return String(pad(s.s, int(w), []rune(fill)[0], align, align == '^')), nil
	}
}

// pad pads s to width code points with fill; str.center puts the extra
// character on the left when the width is odd and the text even, as
// Python's does (pyCenter).
func pad(s string, width int, fill rune, align byte, pyCenter bool) string {
	n := utf8.RuneCountInString(s)
	if n >= width {
		return s
	}
	total := width - n
	f := string(fill)
	switch align {
	case '<':
		return s + strings.Repeat(f, total)
	case '>', '=':
		return strings.Repeat(f, total) + s
	}
	left := total / 2
	if pyCenter && total%2 == 1 && width%2 == 1 {
		left++
	}
	return strings.Repeat(f, left) + s + strings.Repeat(f, total-left)
}

var _ = fmt.Sprint
