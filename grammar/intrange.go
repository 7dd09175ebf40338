package grammar

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Integer bounds (minimum, maximum, exclusiveMinimum, exclusiveMaximum on
// an integer schema) become a grammar of decimal digits: the numbers of
// each length are split, digit by digit, into ranges such as
// 1[5-9] | [2-9][0-9] | 1[0-9][0-9] | 2[0-4][0-9] | 25[0-5] for 15..255.

// maxIntDigits matches the integer rule of jsonPrimitives (1 + 15 digits).
const maxIntDigits = 16

// intRangeGBNF returns a GBNF expression for the integers in [lo, hi];
// hasLo/hasHi false mean unbounded on that side.
func intRangeGBNF(lo, hi int64, hasLo, hasHi bool) string {
	var alts []string
	// Non-negative part: [max(lo,0), hi].
	if !hasHi || hi >= 0 {
		a := int64(0)
		if hasLo && lo > 0 {
			a = lo
		}
		alts = append(alts, natRange(a, hi, hasHi)...)
	}
	// Negative part: -n for n in [max(1, -hi), -lo].
	if !hasLo || lo < 0 {
		a := int64(1)
		if hasHi && hi < 0 {
			a = -hi
		}
		for _, alt := range natRange(a, -lo, hasLo) {
			alts = append(alts, `"-" `+alt)
		}
	}
	return strings.Join(alts, " | ")
}

// natRange returns alternatives for the naturals in [a, b] (b unbounded
// unless hasB), written without leading zeros and with at most
// maxIntDigits digits.
func natRange(a, b int64, hasB bool) []string { return natRangeDigits(a, b, hasB, maxIntDigits) }

// natRangeDigits is natRange with at most digits digits.
func natRangeDigits(a, b int64, hasB bool, digits int) []string {
	if !hasB {
		b = int64(math.Pow10(digits-1))*10 - 1 // all numbers of that many digits
	}
	var alts []string
	for n := len(strconv.FormatInt(a, 10)); n <= digits; n++ {
		low := int64(0)
		if n > 1 {
			low = int64(math.Pow10(n - 1))
		}
		high := int64(math.Pow10(n)) - 1
		low, high = max(low, a), min(high, b)
		if low > high {
			if b < low {
				break
			}
			continue
		}
		alts = append(alts, sameLength(strconv.FormatInt(low, 10), strconv.FormatInt(high, 10))...)
	}
	return alts
}

// sameLength returns alternatives for the digit strings from a to b, both
// of the same length.
func sameLength(a, b string) []string {
	if a == b {
		return []string{strconv.Quote(a)}
	}
	if len(a) == 1 {
		return []string{fmt.Sprintf("[%c-%c]", a[0], b[0])}
	}
	if a[0] == b[0] {
		var out []string
		for _, rest := range sameLength(a[1:], b[1:]) {
			out = append(out, fmt.Sprintf(`"%c" %s`, a[0], rest))
		}
		return out
	}
	n := len(a) - 1
	nines, zeros := strings.Repeat("9", n), strings.Repeat("0", n)
	var out []string
	// From a up to a[0]99…9.
	if a[1:] == zeros {
		out = append(out, fmt.Sprintf(`"%c" [0-9]{%d}`, a[0], n))
	} else {
		for _, rest := range sameLength(a[1:], nines) {
			out = append(out, fmt.Sprintf(`"%c" %s`, a[0], rest))
		}
	}
	// Whole blocks in between.
	if a[0]+1 <= b[0]-1 {
		out = append(out, fmt.Sprintf(`[%c-%c] [0-9]{%d}`, a[0]+1, b[0]-1, n))
	}
	// From b[0]00…0 up to b.
	if b[1:] == nines {
		out = append(out, fmt.Sprintf(`"%c" [0-9]{%d}`, b[0], n))
	} else {
		for _, rest := range sameLength(zeros, b[1:]) {
			out = append(out, fmt.Sprintf(`"%c" %s`, b[0], rest))
		}
	}
	return out
}
