package grammar

import (
	"slices"
	"unicode/utf8"
)

// Character classes are over code points, but tokens are bytes: a class is
// lowered to alternatives of byte-range sequences that match exactly the
// UTF-8 encodings of its code points (surrogates excluded).

type byteRange struct{ lo, hi byte }

func normalizeRanges(rs []runeRange) []runeRange {
	slices.SortFunc(rs, func(a, b runeRange) int { return int(a.lo - b.lo) })
	var out []runeRange
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// complementRanges returns the code points not in rs (which is normalized).
func complementRanges(rs []runeRange) []runeRange {
	var out []runeRange
	next := rune(0)
	for _, r := range rs {
		if r.lo > next {
			out = append(out, runeRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, runeRange{next, utf8.MaxRune})
	}
	return out
}

// utf8Sequences calls emit with byte-range sequences whose union is the
// UTF-8 encodings of the code points in [lo, hi].
func utf8Sequences(lo, hi rune, emit func([]byteRange)) {
	if lo > hi {
		return
	}
	// Surrogates have no UTF-8 encoding.
	if lo <= 0xDFFF && hi >= 0xD800 {
		utf8Sequences(lo, 0xD7FF, emit)
		utf8Sequences(0xE000, hi, emit)
		return
	}
	// Split where the encoded length changes.
	for _, b := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= b && hi > b {
			utf8Sequences(lo, b, emit)
			utf8Sequences(b+1, hi, emit)
			return
		}
	}
	if hi <= 0x7F {
		emit([]byteRange{{byte(lo), byte(hi)}})
		return
	}
	// Split until every continuation byte spans its full range or is fixed.
	for i := 1; i < 4; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Sequences(lo, lo|m, emit)
				utf8Sequences((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				utf8Sequences(lo, (hi&^m)-1, emit)
				utf8Sequences(hi&^m, hi, emit)
				return
			}
		}
	}
	a := utf8.AppendRune(nil, lo)
	b := utf8.AppendRune(nil, hi)
	seq := make([]byteRange, len(a))
	for i := range a {
		seq[i] = byteRange{a[i], b[i]}
	}
	emit(seq)
}
