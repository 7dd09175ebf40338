package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bounds on numbers: minimum, maximum, exclusiveMinimum and
// exclusiveMaximum (numbers, or in draft 4 booleans that make minimum and
// maximum exclusive). On integers any bound works and is exact. On other
// numbers the bounds must be whole numbers, and a bounded number is written
// without an exponent, with at most 15 significant digits (so that the
// float64 it parses to is on the right side of the bound): an integer part
// in range of at most 9 digits (more if a bound has more), digit by digit
// as for integers, and a fraction with the other digits that keeps the
// value inside (a fraction after the lower bound itself, when it is
// exclusive, ends in a non-zero digit; after the upper bound, when it is
// inclusive, it is all zeros).

// numBound is one side of a range.
type numBound struct {
	v       float64
	ok, ex  bool   // present; exclusive
	keyword string // where it came from, for errors
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
			*b = numBound{v: f, ok: true, ex: ex, keyword: k}
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
	for _, b := range []numBound{lb, hb} {
		if b.ok && b.v != math.Trunc(b.v) {
			return "", errAt(where+"/"+b.keyword, "%v: only whole-number bounds are supported on numbers (use type integer, or a whole bound)", b.v)
		}
	}
	lo, hi := int64(lb.v), int64(hb.v)
	if lb.ok && hb.ok && (lo > hi || lo == hi && (lb.ex || hb.ex)) {
		return "", errAt(where, "no number lies between the bounds")
	}
	// Integer digits: enough for the bounds, at least 9; the fraction gets
	// the rest of 15 significant digits.
	digits := 9
	for _, b := range []numBound{lb, hb} {
		if b.ok {
			digits = max(digits, len(strconv.FormatInt(max(int64(b.v), -int64(b.v)), 10)))
		}
	}
	m := magnitudes{digits: digits, frac: max(15-digits, 0)}
	var alts []string
	// Non-negative numbers, written without a sign.
	if !hb.ok || hi > 0 || hi == 0 && !hb.ex {
		a, aex := int64(0), false
		if lb.ok && lo >= 0 {
			a, aex = lo, lb.ex
		}
		alts = append(alts, m.between(a, aex, hi, hb.ex, hb.ok)...)
	}
	// Negative numbers: -m with m > 0 (so "-0" is not written).
	if !lb.ok || lo < 0 {
		a, aex := int64(0), true
		if hb.ok && hi < 0 {
			a, aex = -hi, hb.ex
		}
		for _, alt := range m.between(a, aex, -lo, lb.ex, lb.ok) {
			alts = append(alts, `"-" `+alt)
		}
	}
	if len(alts) == 0 {
		return "", errAt(where, "no number lies between the bounds")
	}
	return sc.rule(strings.Join(alts, " | ")), nil
}

// magnitudes writes non-negative decimals with an integer part of at most
// digits digits and a fraction of at most frac.
type magnitudes struct{ digits, frac int }

// between returns alternatives for the decimals x with a <= x <= b (a < x,
// x < b when exclusive; no upper end unless hasB).
func (m magnitudes) between(a int64, aex bool, b int64, bex, hasB bool) []string {
	frac, zeros, nonzero := "", "", ""
	if m.frac > 0 {
		frac = fmt.Sprintf(` ("." [0-9]{1,%d})?`, m.frac)
		zeros = fmt.Sprintf(` ("." "0"{1,%d})?`, m.frac)
		nonzero = fmt.Sprintf(` "." [0-9]{0,%d} [1-9]`, m.frac-1)
	}
	var alts []string
	// Integer parts strictly inside: any fraction.
	first, last := a, b-1
	if aex {
		first = a + 1
	}
	if !hasB || first <= last {
		for _, alt := range natRangeDigits(first, last, hasB, m.digits) {
			alts = append(alts, alt+frac)
		}
	}
	// The lower end itself when exclusive: a non-zero fraction.
	if aex && nonzero != "" && (!hasB || a < b) {
		alts = append(alts, strconv.Quote(strconv.FormatInt(a, 10))+nonzero)
	}
	// The upper end itself when inclusive: a zero fraction.
	if hasB && !bex && (b > a || b == a && !aex) {
		alts = append(alts, strconv.Quote(strconv.FormatInt(b, 10))+zeros)
	}
	return alts
}
