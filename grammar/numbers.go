package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Bounds on numbers: minimum, maximum, exclusiveMinimum and
// exclusiveMaximum (numbers, or in draft 4 booleans that make minimum and
// maximum exclusive). On integers any bound works and is exact. On other
// numbers too, whole or not (zod's .min(0.5)): a bounded number is written
// without an exponent, with at most 15 significant digits (so that the
// float64 it parses to is on the right side of the bound): an integer part
// of at most 9 digits (more if a bound has more) and a fraction of the
// other digits. Integer parts strictly between the bounds' take any
// fraction; at a bound's integer part the fraction is walked digit by
// digit against the bound's (see magnitudes.fraction), as integer ranges
// are. A bound with more fraction digits than that is moved onto the
// numbers that can be written (up for a minimum, down for a maximum),
// which keeps exactly the written numbers that obey it.

// numBound is one side of a range.
type numBound struct {
	v       float64
	ok, ex  bool   // present; exclusive
	keyword string // where it came from, for errors
	text    string // the number as the schema wrote it (exact)
}

// numberBounds reads the bound keywords of s: of minimum and
// exclusiveMinimum the tighter one (at the same value, the exclusive), the
// same for the maximum.
func numberBounds(s map[string]json.RawMessage, where string) (lo, hi numBound, err error) {
	// Draft 4: exclusiveMinimum and exclusiveMaximum are booleans that make
	// minimum and maximum exclusive.
	draft4 := map[string]bool{}
	for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
		var ex bool
		if v, ok := s[k]; ok && json.Unmarshal(v, &ex) == nil {
			draft4[k] = ex
		}
	}
	read := func(k string, b *numBound, lower bool) error {
		v, ok := s[k]
		if _, isBool := draft4[k]; !ok || isBool {
			return nil
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return errAt(where+"/"+k, "must be a number")
		}
		if math.Abs(f) >= 1e16 {
			return errAt(where+"/"+k, "%v is beyond the 16-digit numbers this grammar writes", f)
		}
		ex := strings.HasPrefix(k, "exclusive") || draft4["exclusive"+strings.ToUpper(k[:1])+k[1:]]
		tighter := lower && f > b.v || !lower && f < b.v
		if !b.ok || tighter || f == b.v && ex {
			*b = numBound{v: f, ok: true, ex: ex, keyword: k, text: string(v)}
		}
		return nil
	}
	for _, k := range []string{"exclusiveMinimum", "minimum"} {
		if err := read(k, &lo, true); err != nil {
			return lo, hi, err
		}
	}
	for _, k := range []string{"exclusiveMaximum", "maximum"} {
		if err := read(k, &hi, false); err != nil {
			return lo, hi, err
		}
	}
	return lo, hi, nil
}

// integer compiles an integer type with its bounds.
func (sc *schemaCompiler) integer(s map[string]json.RawMessage, where string) (string, error) {
	lb, hb, err := numberBounds(s, where)
	if err != nil {
		return "", err
	}
	if f, ok := s["format"]; ok && string(f) == `"int32"` {
		if !lb.ok || lb.v < math.MinInt32 {
			lb = numBound{v: math.MinInt32, ok: true}
		}
		if !hb.ok || hb.v > math.MaxInt32 {
			hb = numBound{v: math.MaxInt32, ok: true}
		}
	}
	if !lb.ok && !hb.ok {
		return "integer", nil
	}
	lo := int64(math.Ceil(lb.v))
	if lb.ex && float64(lo) == lb.v {
		lo++
	}
	hi := int64(math.Floor(hb.v))
	if hb.ex && float64(hi) == hb.v {
		hi--
	}
	if lb.ok && hb.ok && lo > hi {
		return "", errAt(where, "no integer lies between the bounds (from %d to %d)", lo, hi)
	}
	return sc.rule(intRangeGBNF(lo, hi, lb.ok, hb.ok)), nil
}

// number compiles a number type with its bounds.
func (sc *schemaCompiler) number(s map[string]json.RawMessage, where string) (string, error) {
	lb, hb, err := numberBounds(s, where)
	if err != nil {
		return "", err
	}
	if !lb.ok && !hb.ok {
		return "number", nil
	}
	// Integer digits: enough for the bounds, at least 9; the fraction gets
	// the rest of 15 significant digits.
	digits := 9
	for _, b := range []numBound{lb, hb} {
		if b.ok {
			digits = max(digits, len(strconv.FormatInt(int64(math.Abs(b.v)), 10)))
		}
	}
	m := magnitudes{digits: digits, frac: max(15-digits, 0)}
	// The bounds as exact decimals on the grid of the numbers written (m.frac
	// fraction digits): a lower bound between two of them is the next one
	// up, inclusive, an upper bound the next one down, which keeps exactly
	// the written numbers that obey the bound.
	lo, hi := exactDecimal(lb, true, m.frac), exactDecimal(hb, false, m.frac)
	if lb.ok && hb.ok {
		if c := lo.cmp(hi); c > 0 || c == 0 && (lo.ex || hi.ex) {
			return "", errAt(where, "no number lies between the bounds")
		}
	}
	var alts []string
	// Non-negative numbers, written without a sign: [max(lo, 0), hi].
	zero := decimal{}
	if !hb.ok || hi.cmp(zero) > 0 || hi.cmp(zero) == 0 && !hi.ex {
		a := zero
		if lb.ok && !lo.neg {
			a = lo
		}
		b := hi
		b.ok = hb.ok
		alts = append(alts, m.between(a, b)...)
	}
	// Negative numbers: -x with x > 0 (so "-0" is not written), x in
	// [max(-hi, 0), -lo].
	if !lb.ok || lo.neg {
		a := decimal{ex: true}
		if hb.ok && hi.neg {
			a = hi.abs()
		}
		b := lo.abs()
		b.ok = lb.ok
		for _, alt := range m.between(a, b) {
			alts = append(alts, `"-" `+alt)
		}
	}
	if len(alts) == 0 {
		return "", errAt(where, "no number lies between the bounds")
	}
	return sc.rule(strings.Join(alts, " | ")), nil
}

// decimal is a bound as an exact decimal: sign, integer part and fraction
// digits (no trailing zeros), and whether it is exclusive. ok marks an upper
// end that exists (between's b).
type decimal struct {
	neg    bool
	int    int64
	frac   string
	ex, ok bool
}

// exactDecimal converts b to a decimal with at most frac fraction digits,
// rounding up (a lower bound) or down (an upper one) onto that grid; a
// rounded bound is inclusive.
func exactDecimal(b numBound, lower bool, frac int) decimal {
	if !b.ok {
		return decimal{}
	}
	r := new(big.Rat)
	if _, ok := r.SetString(b.text); !ok {
		r.SetFloat64(b.v)
	}
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(frac)), nil)
	num := new(big.Int).Mul(r.Num(), scale)
	q, rem := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
	ex := b.ex
	if rem.Sign() != 0 {
		// Between two grid points: QuoRem truncated towards zero.
		if lower == (r.Sign() > 0) {
			q.Add(q, big.NewInt(int64(r.Sign())))
		}
		ex = false
	}
	d := decimal{neg: q.Sign() < 0, ex: ex, ok: true}
	q.Abs(q)
	ip, fp := new(big.Int).QuoRem(q, scale, new(big.Int))
	d.int = ip.Int64()
	if frac > 0 {
		d.frac = strings.TrimRight(fmt.Sprintf("%0*s", frac, fp.String()), "0")
	}
	if d.int == 0 && d.frac == "" {
		d.neg = false
	}
	return d
}

// abs is d without its sign.
func (d decimal) abs() decimal { d.neg = false; return d }

// cmp compares the values of two decimals.
func (d decimal) cmp(e decimal) int {
	if d.neg != e.neg {
		if d.neg {
			return -1
		}
		return 1
	}
	c := 0
	switch {
	case d.int < e.int:
		c = -1
	case d.int > e.int:
		c = 1
	default:
		c = strings.Compare(d.frac, e.frac) // no trailing zeros: digit strings compare as fractions
	}
	if d.neg {
		c = -c
	}
	return c
}

// magnitudes writes non-negative decimals with an integer part of at most
// digits digits and a fraction of at most frac.
type magnitudes struct{ digits, frac int }

// between returns alternatives for the decimals x with a <= x <= b (a < x,
// x < b when exclusive; no upper end unless b.ok). a and b are not
// negative.
func (m magnitudes) between(a, b decimal) []string {
	anyFrac := ""
	if m.frac > 0 {
		anyFrac = fmt.Sprintf(` ("." [0-9]{1,%d})?`, m.frac)
	}
	var alts []string
	// Integer parts strictly inside: any fraction.
	first, last := a.int+1, b.int-1
	if !b.ok || first <= last {
		for _, alt := range natRangeDigits(first, last, b.ok, m.digits) {
			alts = append(alts, alt+anyFrac)
		}
	}
	// The integer parts of the ends, with the fractions the ends allow.
	lo := fracBound{digits: a.frac, ex: a.ex, ok: true}
	hi := fracBound{digits: b.frac, ex: b.ex, ok: b.ok}
	if b.ok && a.int == b.int {
		if f, ok := m.fraction(lo, hi); ok {
			alts = append(alts, strconv.Quote(strconv.FormatInt(a.int, 10))+f)
		}
		return alts
	}
	if f, ok := m.fraction(lo, fracBound{}); ok {
		alts = append(alts, strconv.Quote(strconv.FormatInt(a.int, 10))+f)
	}
	if b.ok {
		if f, ok := m.fraction(fracBound{ok: true}, hi); ok {
			alts = append(alts, strconv.Quote(strconv.FormatInt(b.int, 10))+f)
		}
	}
	return alts
}

// fracBound bounds the fraction of a number whose integer part is that of
// the bound: the fraction's digits (no trailing zeros), exclusive or not;
// ok false means no bound.
type fracBound struct {
	digits string
	ex, ok bool
}

// fraction returns a GBNF expression for the fraction parts (nothing, or
// "." and 1 to m.frac digits) whose value lies between lo and hi, and
// whether there is any. It walks the digits as integer ranges do: while
// the digits so far equal a bound's, the next digit is limited by it.
func (m magnitudes) fraction(lo, hi fracBound) (string, bool) {
	digit := func(s string, i int) byte {
		if i < len(s) {
			return s[i]
		}
		return '0'
	}
	// endOK reports whether the fraction may end after i digits, given
	// whether they equal the bounds' first i digits (tl, th).
	endOK := func(i int, tl, th bool) bool {
		if tl && lo.ok && (len(lo.digits) > i || lo.ex) {
			return false // below the lower bound, or equal to an exclusive one
		}
		if th && hi.ok && len(hi.digits) <= i && hi.ex {
			return false // equal to an exclusive upper bound
		}
		return true
	}
	// A set of digit strings: none, only the empty string (expr ""), or
	// expr.
	type set struct {
		expr string
		none bool
	}
	type key struct {
		i      int
		tl, th bool
	}
	memo := map[key]set{}
	var rest, nonEmpty func(i int, tl, th bool) set
	// rest is what may follow i digits; nonEmpty the same without the
	// empty string.
	rest = func(i int, tl, th bool) set {
		ne := nonEmpty(i, tl, th)
		switch end := endOK(i, tl, th); {
		case ne.none && !end:
			return set{none: true}
		case ne.none:
			return set{}
		case end:
			return set{expr: "(" + ne.expr + ")?"}
		}
		return ne
	}
	nonEmpty = func(i int, tl, th bool) set {
		k := key{i, tl, th}
		if r, ok := memo[k]; ok {
			return r
		}
		tl, th = tl && lo.ok, th && hi.ok
		var alts []string
		add := func(d, e byte, ntl, nth bool) {
			if d > e {
				return
			}
			next := rest(i+1, ntl, nth)
			if next.none {
				return
			}
			a := fmt.Sprintf("[%c-%c]", d, e)
			if next.expr != "" {
				a += " " + next.expr
			}
			alts = append(alts, a)
		}
		if i < m.frac {
			lowD, highD := byte('0'), byte('9')
			if tl {
				lowD = digit(lo.digits, i)
			}
			if th {
				highD = digit(hi.digits, i)
			}
			from, to := lowD, highD
			if tl {
				add(lowD, lowD, true, th && lowD == highD)
				from++
			}
			if th && !(tl && lowD == highD) {
				add(highD, highD, false, true)
			}
			if th {
				to--
			}
			if from <= to {
				add(from, to, false, false)
			}
		}
		r := set{none: len(alts) == 0}
		switch {
		case len(alts) == 1:
			r.expr = alts[0]
		case len(alts) > 1:
			r.expr = "(" + strings.Join(alts, " | ") + ")"
		}
		memo[k] = r
		return r
	}
	var alts []string
	if endOK(0, true, true) {
		alts = append(alts, `""`)
	}
	if ne := nonEmpty(0, true, true); !ne.none {
		alts = append(alts, `"." `+ne.expr)
	}
	switch {
	case len(alts) == 0:
		return "", false
	case len(alts) == 1 && alts[0] == `""`:
		return "", true
	}
	return " (" + strings.Join(alts, " | ") + ")", true
}
