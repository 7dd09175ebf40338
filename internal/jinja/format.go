package jinja

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// strFormat is Python's str.format: {} {0} {name} fields with .attr and
// [key] lookups, !r !s conversions and a format spec; {{ and }} escape.
func (r *renderer) strFormat(f string, args []Value, kw []kwarg) (Value, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '}' {
			if i+1 < len(f) && f[i+1] == '}' {
				b.WriteByte('}')
				i++
				continue
			}
			return Value{}, errorf(ErrType, "Single '}' encountered in format string")
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(f) && f[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end := strings.IndexByte(f[i:], '}')
		if end < 0 {
			return Value{}, errorf(ErrType, "expected '}' before end of string")
		}
		field := f[i+1 : i+end]
		i += end
		spec := ""
		if k := strings.IndexByte(field, ':'); k >= 0 {
			field, spec = field[:k], field[k+1:]
		}
		conv := byte(0)
		if k := strings.IndexByte(field, '!'); k >= 0 {
			if k+2 != len(field) {
				return Value{}, errorf(ErrType, "expected ':' after conversion specifier")
			}
			conv = field[k+1]
			field = field[:k]
		}
		// the first part names an argument; then .attr and [key]
		nameEnd := strings.IndexAny(field, ".[")
		if nameEnd < 0 {
			nameEnd = len(field)
		}
		name := field[:nameEnd]
		var v Value
		switch {
		case name == "":
			if auto >= len(args) {
				return Value{}, errorf(ErrType, "Replacement index %d out of range for positional args tuple", auto)
			}
			v = args[auto]
			auto++
		case name[0] >= '0' && name[0] <= '9':
			n, err := strconv.Atoi(name)
			if err != nil || n >= len(args) {
				return Value{}, errorf(ErrType, "Replacement index %s out of range for positional args tuple", name)
			}
			v = args[n]
		default:
			found := false
			for _, k := range kw {
				if k.name == name {
					v, found = k.v, true
				}
			}
			if !found {
				return Value{}, errorf(ErrType, "KeyError: '%s'", name)
			}
		}
		rest := field[nameEnd:]
		for rest != "" {
			var err error
			if rest[0] == '.' {
				k := strings.IndexAny(rest[1:], ".[")
				if k < 0 {
					k = len(rest) - 1
				}
				v, err = getattr(v, rest[1:1+k])
				rest = rest[1+k:]
			} else {
				k := strings.IndexByte(rest, ']')
				if k < 0 {
					return Value{}, errorf(ErrType, "Missing ']' in format string")
				}
				key := rest[1:k]
				if n, e := strconv.Atoi(key); e == nil {
					v, err = getitem(v, Int(int64(n)))
				} else {
					v, err = getitem(v, String(key))
				}
				rest = rest[k+1:]
			}
			if err != nil {
				return Value{}, err
			}
		}
		switch conv {
		case 'r', 'a':
			v = String(v.Repr())
		case 's':
			v = String(v.String())
		case 0:
		default:
			return Value{}, errorf(ErrType, "Unknown conversion specifier %c", conv)
		}
		s, err := formatSpec(v, spec)
		if err != nil {
			return Value{}, err
		}
		b.WriteString(s)
		if err := r.checkLen(b.Len()); err != nil {
			return Value{}, err
		}
	}
	return String(b.String()), nil
}

// formatSpec applies a format spec, [[fill]align][sign][0][width][,][.precision][type].
func formatSpec(v Value, spec string) (string, error) {
	if spec == "" {
		return v.String(), nil
	}
	fill, align := ' ', byte(0)
	rs := []rune(spec)
	if len(rs) >= 2 && strings.ContainsRune("<>^=", rs[1]) {
		fill, align = rs[0], byte(rs[1])
		rs = rs[2:]
	} else if len(rs) >= 1 && strings.ContainsRune("<>^=", rs[0]) {
		align = byte(rs[0])
		rs = rs[1:]
	}
	spec = string(rs)
	sign := byte('-')
	if spec != "" && strings.IndexByte("+- ", spec[0]) >= 0 {
		sign = spec[0]
		spec = spec[1:]
	}
	if strings.HasPrefix(spec, "0") {
		if align == 0 {
			fill, align = '0', '='
		}
		spec = spec[1:]
	}
	i := 0
	for i < len(spec) && spec[i] >= '0' && spec[i] <= '9' {
		i++
	}
	width, _ := strconv.Atoi(spec[:i])
	if width > 1<<20 {
		return "", errorf(ErrLimit, "format width %d too large", width)
	}
	spec = spec[i:]
	comma := strings.HasPrefix(spec, ",")
	spec = strings.TrimPrefix(spec, ",")
	prec := -1
	if strings.HasPrefix(spec, ".") {
		j := 1
		for j < len(spec) && spec[j] >= '0' && spec[j] <= '9' {
			j++
		}
		prec, _ = strconv.Atoi(spec[1:j])
		spec = spec[j:]
	}
	typ := byte(0)
	if len(spec) == 1 {
		typ = spec[0]
	} else if spec != "" {
		return "", errorf(ErrType, "Invalid format specifier")
	}
	var s string
	switch {
	case v.kind == KindString:
		if typ != 0 && typ != 's' {
			return "", errorf(ErrType, "Unknown format code '%c' for object of type 'str'", typ)
		}
		s = v.s
		if prec >= 0 && utf8.RuneCountInString(s) > prec {
			s = string([]rune(s)[:prec])
		}
		if align == 0 {
			align = '<'
		}
	case v.isNumber():
		var err error
		s, err = formatNumber(v, typ, prec, sign, comma)
		if err != nil {
			return "", err
		}
		if align == 0 {
			align = '>'
		}
	default:
		s = v.String()
		if align == 0 {
			align = '<'
		}
	}
	if align == '=' && utf8.RuneCountInString(s) < width && (strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") || strings.HasPrefix(s, " ")) {
		return s[:1] + pad(s[1:], width-1, fill, '>', false), nil
	}
	return pad(s, width, fill, align, false), nil
}

func formatNumber(v Value, typ byte, prec int, sign byte, comma bool) (string, error) {
	var s string
	switch typ {
	case 0, 'd', 'n':
		if v.kind == KindFloat {
			if typ == 'd' {
				return "", errorf(ErrType, "Unknown format code 'd' for object of type 'float'")
			}
			if prec >= 0 {
				s = strconv.FormatFloat(v.f, 'g', prec, 64)
			} else {
				s = pyFloat(v.f)
			}
		} else {
			s = strconv.FormatInt(v.n, 10)
		}
	case 'f', 'F', 'e', 'E', 'g', 'G', '%':
		if prec < 0 {
			prec = 6
		}
		f := v.asFloat()
		if typ == '%' {
			s = strconv.FormatFloat(f*100, 'f', prec, 64) + "%"
		} else {
			s = strconv.FormatFloat(f, typ|0x20, prec, 64)
			if typ == 'e' || typ == 'E' || typ == 'g' || typ == 'G' {
				s = fixExponent(s)
			}
			if typ == 'E' || typ == 'G' || typ == 'F' {
				s = strings.ToUpper(s)
			}
		}
	case 'x', 'X', 'o', 'b':
		if v.kind == KindFloat {
			return "", errorf(ErrType, "Unknown format code '%c' for object of type 'float'", typ)
		}
		base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'b': 2}[typ]
		s = strconv.FormatInt(v.n, base)
		if typ == 'X' {
			s = strings.ToUpper(s)
		}
	case 'c':
		return string(rune(v.n)), nil
	default:
		return "", errorf(ErrType, "Unknown format code '%c' for a number", typ)
	}
	if comma {
		s = groupThousands(s)
	}
	if !strings.HasPrefix(s, "-") {
		switch sign {
		case '+':
			s = "+" + s
		case ' ':
			s = " " + s
		}
	}
	return s, nil
}

// fixExponent writes Go's e+6 as Python's e+06.
func fixExponent(s string) string {
	i := strings.LastIndexAny(s, "eE")
	if i < 0 || i+2 >= len(s) {
		return s
	}
	digits := s[i+2:]
	if len(digits) == 1 {
		return s[:i+2] + "0" + digits
	}
	return s
}

func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if hasFrac {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// printf is Python's str % args: %s %r %d %i %f %e %g %x %o %c %% with
// flags, width and precision, and %(name)s with a dict.
func (r *renderer) printf(f string, arg Value) (string, error) {
	var args []Value
	var mapping *Dict
	switch arg.kind {
	case KindTuple:
		args = arg.list()
	case KindDict:
		mapping = arg.dict()
		args = []Value{arg}
	default:
		args = []Value{arg}
	}
	next := 0
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		i++
		if i >= len(f) {
			return "", errorf(ErrType, "incomplete format")
		}
		if f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		var v Value
		haveV := false
		if f[i] == '(' {
			end := strings.IndexByte(f[i:], ')')
			if end < 0 || mapping == nil {
				return "", errorf(ErrType, "format requires a mapping")
			}
			key := f[i+1 : i+end]
			x, ok := mapping.get(String(key))
			if !ok {
				return "", errorf(ErrType, "KeyError: '%s'", key)
			}
			v, haveV = x, true
			i += end + 1
		}
		j := i
		for j < len(f) && strings.IndexByte("-+ #0", f[j]) >= 0 {
			j++
		}
		flags := f[i:j]
		k := j
		for k < len(f) && (f[k] >= '0' && f[k] <= '9' || f[k] == '.') {
			k++
		}
		if k >= len(f) {
			return "", errorf(ErrType, "incomplete format")
		}
		wp := f[j:k]
		conv := f[k]
		i = k
		if !haveV {
			if next >= len(args) {
				return "", errorf(ErrType, "not enough arguments for format string")
			}
			v = args[next]
			next++
		}
		width, prec := 0, -1
		ws, ps, hasP := strings.Cut(wp, ".")
		width, _ = strconv.Atoi(ws)
		if width > 1<<20 {
			return "", errorf(ErrLimit, "format width %d too large", width)
		}
		if hasP {
			prec, _ = strconv.Atoi(ps)
		}
		var s string
		switch conv {
		case 's':
			s = v.String()
			if prec >= 0 && utf8.RuneCountInString(s) > prec {
				s = string([]rune(s)[:prec])
			}
		case 'r', 'a':
			s = v.Repr()
		case 'd', 'i', 'u':
			if !v.isNumber() {
				return "", errorf(ErrType, "%%%c format: a real number is required, not %s", conv, v.TypeName())
			}
			if v.kind == KindFloat {
				s = strconv.FormatInt(int64(v.f), 10)
			} else {
				s = strconv.FormatInt(v.n, 10)
			}
		case 'f', 'F', 'e', 'E', 'g', 'G', 'x', 'X', 'o', 'c':
			if !v.isNumber() {
				return "", errorf(ErrType, "%%%c format: a number is required, not %s", conv, v.TypeName())
			}
			var err error
			s, err = formatNumber(v, conv, prec, '-', false)
			if err != nil {
				return "", err
			}
		default:
			return "", errorf(ErrType, "unsupported format character '%c'", conv)
		}
		if strings.Contains(flags, "+") && conv != 's' && conv != 'r' && !strings.HasPrefix(s, "-") {
			s = "+" + s
		}
		switch {
		case strings.Contains(flags, "-"):
			s = pad(s, width, ' ', '<', false)
		case strings.Contains(flags, "0") && conv != 's' && conv != 'r':
			if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
				s = s[:1] + pad(s[1:], width-1, '0', '>', false)
			} else {
				s = pad(s, width, '0', '>', false)
			}
		default:
			s = pad(s, width, ' ', '>', false)
		}
		b.WriteString(s)
		if err := r.checkLen(b.Len()); err != nil {
			return "", err
		}
	}
	if mapping == nil && next < len(args) {
		return "", errorf(ErrType, "not all arguments converted during string formatting")
	}
	return b.String(), nil
}
