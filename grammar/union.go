package grammar

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Union returns a grammar whose language is every string of any of gs: the
// output is a string of one of them. It is how an answer may take one of
// several shapes, chosen by the model as it writes: an agent's turn, for
// instance, is either tool calls (in the served model's own call syntax,
// a grammar the caller builds) or the final answer in the requested JSON
// format:
//
//	turn, err := grammar.Union(ctx, calls, answer)
//
// The grammars' rules are kept apart (renamed), so any grammars combine.
// Union stops with ctx.Err() when ctx is done, like ParseContext.
func Union(ctx context.Context, gs ...*Grammar) (*Grammar, error) {
	if len(gs) == 0 {
		return nil, errors.New("grammar: Union needs at least one grammar")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cc := &canceller{ctx: ctx}
	root := &expr{kind: exAlt}
	defs := []ruleDef{{name: "root", body: root}}
	for i, g := range gs {
		if g == nil || g.source == "" {
			return nil, fmt.Errorf("grammar: Union: grammar %d has no source", i)
		}
		sub, err := parseGBNF(g.source, cc)
		if err != nil {
			return nil, fmt.Errorf("grammar: Union: grammar %d: %w", i, err)
		}
		prefix := "u" + strconv.Itoa(i) + "-"
		for _, d := range sub {
			d.name = prefix + d.name
			d.body.rename(prefix)
			defs = append(defs, d)
		}
		root.subs = append(root.subs, &expr{kind: exRef, ref: prefix + "root"})
	}
	g, err := lower(defs, cc)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, d := range defs {
		b.WriteString(d.name + " ::= ")
		d.body.write(&b)
		b.WriteByte('\n')
	}
	g.source = b.String()
	return g, nil
}

// rename prefixes every rule reference in e.
func (e *expr) rename(prefix string) {
	if e.kind == exRef {
		e.ref = prefix + e.ref
	}
	for _, s := range e.subs {
		s.rename(prefix)
	}
}

// write writes e in GBNF notation.
func (e *expr) write(b *strings.Builder) {
	switch e.kind {
	case exLit:
		b.WriteByte('"')
		for s := string(e.lit); s != ""; {
			r, n := utf8.DecodeRuneInString(s)
			if r == utf8.RuneError && n == 1 {
				fmt.Fprintf(b, `\x%02X`, s[0]) // not produced by the parser
			} else {
				writeChar(b, r, '"')
			}
			s = s[n:]
		}
		b.WriteByte('"')
	case exClass:
		b.WriteByte('[')
		for _, r := range e.ranges {
			writeChar(b, r.lo, ']')
			if r.hi != r.lo {
				b.WriteByte('-')
				writeChar(b, r.hi, ']')
			}
		}
		b.WriteByte(']')
	case exRef:
		b.WriteString(e.ref)
	case exSeq, exAlt:
		if len(e.subs) == 0 {
			b.WriteString(`""`)
			return
		}
		sep := " "
		if e.kind == exAlt {
			sep = " | "
		}
		b.WriteByte('(')
		for i, s := range e.subs {
			if i > 0 {
				b.WriteString(sep)
			}
			s.write(b)
		}
		b.WriteByte(')')
	case exRep:
		b.WriteByte('(')
		e.subs[0].write(b)
		b.WriteByte(')')
		if e.max < 0 {
			fmt.Fprintf(b, "{%d,}", e.min)
		} else {
			fmt.Fprintf(b, "{%d,%d}", e.min, e.max)
		}
	}
}

// writeChar writes one code point of a literal or class, escaped where the
// notation needs it.
func writeChar(b *strings.Builder, r rune, closer byte) {
	switch {
	case r == '\\' || r == rune(closer) || r == '-' && closer == ']' || r == '^' && closer == ']':
		b.WriteByte('\\')
		b.WriteRune(r)
	case r < 0x20 || r == 0x7F:
		fmt.Fprintf(b, `\x%02X`, r)
	case r > 0x7E:
		fmt.Fprintf(b, `\U%08X`, r)
	default:
		b.WriteRune(r)
	}
}
