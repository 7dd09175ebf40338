package grammar

import (
	"slices"
	"strings"
)

// String formats are patterns (see regex.go), each a subset of what the
// format allows that JSON Schema validators (ajv-formats, Pydantic, zod)
// all accept:
//
//   - date: YYYY-MM-DD with the days each month has (February to the 28th,
//     so that no leap-year rule is needed);
//   - time: RFC 3339 full-time, hh:mm:ss with an optional fraction and a
//     required offset (Z or ±hh:mm), without leap seconds;
//   - date-time: date "T" time;
//   - uuid: 8-4-4-4-12 hexadecimal digits;
//   - email: up to 3 dot-separated local parts of 1 to 32 letters, digits,
//     _ + and -, "@", 1 to 3 labels as for hostname and a top-level domain
//     of 2 to 24 letters (at most 222 characters, under the 254 allowed);
//   - hostname: up to 7 dot-separated labels of 1 to 32 letters, digits and
//     hyphens, not starting or ending with a hyphen (at most 230
//     characters, under the 253 allowed);
//   - ipv4: dotted decimal without leading zeros;
//   - ipv6: RFC 4291's text forms, :: compression and a trailing IPv4 part
//     included (no zone);
//   - uri (and uri-reference, iri): scheme "://" host, optional port, path,
//     query and fragment, of RFC 3986's characters with %XX escapes.
//
// "password" is an annotation and allows any string.
//
// Bounded parts keep the formats that have a length limit within it
// without counting characters.

var (
	dec16    = `[0-9A-Fa-f]{1,4}`
	octet    = `(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`
	ipv4Re   = `(` + octet + `\.){3}` + octet
	label    = `[A-Za-z0-9]([A-Za-z0-9-]{0,30}[A-Za-z0-9])?`
	atom     = `[A-Za-z0-9_+\-]{1,32}`
	dateRe   = `\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\d|3[01])|(0[469]|11)-(0[1-9]|[12]\d|30)|02-(0[1-9]|1\d|2[0-8]))`
	timeRe   = `([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)`
	uriChars = `([A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})`
	uriRe    = `[A-Za-z][A-Za-z0-9+.\-]*://[A-Za-z0-9\-._~]+(:\d{1,5})?(/` + uriChars + `*)*(\?(` + uriChars + `|[/?])*)?(#(` + uriChars + `|[/?])*)?`
)

var stringFormats = map[string]string{
	"date":          `^` + dateRe + `$`,
	"time":          `^` + timeRe + `$`,
	"date-time":     `^` + dateRe + `[Tt]` + timeRe + `$`,
	"uuid":          `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`,
	"email":         `^` + atom + `(\.` + atom + `){0,2}@(` + label + `\.){1,3}[A-Za-z]{2,24}$`,
	"hostname":      `^` + label + `(\.` + label + `){0,6}$`,
	"ipv4":          `^` + ipv4Re + `$`,
	"ipv6":          `^` + ipv6Re() + `$`,
	"uri":           `^` + uriRe + `$`,
	"uri-reference": `^` + uriRe + `$`,
	"iri":           `^` + uriRe + `$`,
}

// annotationFormats constrain nothing.
var annotationFormats = []string{"password"}

// ipv6Re is RFC 3986's IPv6address rule: n groups, "::", then the rest,
// for every place the :: can be.
func ipv6Re() string {
	h := dec16
	ls32 := `(` + h + `:` + h + `|` + ipv4Re + `)`
	rep := func(n int) string { return strings.Repeat(h+`:`, n) }
	before := func(n int) string { // [ *(n)( h16 ":" ) h16 ]
		if n < 0 {
			return ""
		}
		return `((` + h + `:){0,` + string(rune('0'+n)) + `}` + h + `)?`
	}
	alts := []string{
		rep(6) + ls32,
		`::` + rep(5) + ls32,
		before(0) + `::` + rep(4) + ls32,
		before(1) + `::` + rep(3) + ls32,
		before(2) + `::` + rep(2) + ls32,
		before(3) + `::` + h + `:` + ls32,
		before(4) + `::` + ls32,
		before(5) + `::` + h,
		before(6) + `::`,
	}
	return `(` + strings.Join(alts, `|`) + `)`
}

// formatNames lists the supported formats, for errors.
func formatNames() string {
	var names []string
	for k := range stringFormats {
		names = append(names, k)
	}
	names = append(names, annotationFormats...)
	slices.Sort(names)
	return strings.Join(names, ", ")
}
