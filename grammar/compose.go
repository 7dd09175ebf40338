package grammar

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Compose returns the grammar src describes in GBNF, where a rule that src
// references but does not define, NAME, is subs[NAME]: that grammar's
// rules are added under names of their own (NAME-…) and its root is
// NAME. It is how a format whose values sit inside text of its own builds
// its grammar from grammars made elsewhere: an XML tool call whose
// parameters are each JSON valid under a schema, for instance,
//
//	root ::= "<parameter=city>\n" city "\n</parameter>"
//
// with subs {"city": FromJSONSchema(citySchema)}. A name of subs that src
// defines itself, or whose renamed rules would clash with src's, is an
// error; so is a reference to neither. Compose stops with ctx.Err() when
// ctx is done, like ParseContext.
func Compose(ctx context.Context, src string, subs map[string]*Grammar) (*Grammar, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cc := &canceller{ctx: ctx}
	defs, err := parseGBNF(src, cc)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, d := range defs {
		names[d.name] = true
	}
	keys := make([]string, 0, len(subs))
	for k := range subs {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same source every time
	for _, name := range keys {
		g := subs[name]
		if names[name] {
			return nil, fmt.Errorf("grammar: Compose: %q is both a rule of the source and a grammar to embed", name)
		}
		if g == nil || g.source == "" {
			return nil, fmt.Errorf("grammar: Compose: grammar %q has no source", name)
		}
		sub, err := parseGBNF(g.source, cc)
		if err != nil {
			return nil, fmt.Errorf("grammar: Compose: grammar %q: %w", name, err)
		}
		prefix := name + "-"
		for _, d := range sub {
			d.name = prefix + d.name
			if names[d.name] {
				return nil, fmt.Errorf("grammar: Compose: rule %q of the source clashes with grammar %q's rules", d.name, name)
			}
			d.body.rename(prefix)
			defs = append(defs, d)
		}
		defs = append(defs, ruleDef{name: name, body: &expr{kind: exRef, ref: prefix + "root"}})
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
