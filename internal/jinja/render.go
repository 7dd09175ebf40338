package jinja

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Limits bound a render, so that a hostile template in a model file
// cannot hang or exhaust the process: past any of them the render stops
// with an ErrLimit error.
type Limits struct {
	// MaxSteps bounds the work: each statement, expression, loop iteration
	// and item a filter visits is a step.
	MaxSteps int
	// MaxDepth bounds nested macro calls and recursive loops.
	MaxDepth int
	// MaxOutput bounds, in bytes, the text rendered and every string,
	// list or JSON text a template builds.
	MaxOutput int
	// Timeout bounds the render's wall-clock time.
	Timeout time.Duration
}

// DefaultLimits are generous for a chat template (Qwen3's renders a turn
// in a few hundred steps, so thousands of turns fit) and stop a runaway
// one within a second (5 million steps take about half a second).
var DefaultLimits = Limits{MaxSteps: 5_000_000, MaxDepth: 200, MaxOutput: 16 << 20, Timeout: time.Second}

// Options are a render's inputs besides the variables.
type Options struct {
	// Limits of the render; zero fields take DefaultLimits' values.
	Limits Limits
	// Now is the clock strftime_now reads; nil is time.Now.
	Now func() time.Time
}

// Template is a parsed template, safe for concurrent renders.
type Template struct {
	body []node
}

// Parse parses a template. A syntax error, or a filter or test the
// engine does not have, is an *Error of kind ErrSyntax (jinja2 fails
// at compile time on those too).
func Parse(src string) (*Template, error) {
	body, err := parse(src)
	if err != nil {
		return nil, err
	}
	return &Template{body: body}, nil
}

// Render renders the template with vars (nil for none) as its variables.
// Errors are *Error values; a cancelled ctx stops the render too.
func (t *Template) Render(ctx context.Context, vars *Dict, opts Options) (string, error) {
	lim := opts.Limits
	if lim.MaxSteps <= 0 {
		lim.MaxSteps = DefaultLimits.MaxSteps
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultLimits.MaxDepth
	}
	if lim.MaxOutput <= 0 {
		lim.MaxOutput = DefaultLimits.MaxOutput
	}
	if lim.Timeout <= 0 {
		lim.Timeout = DefaultLimits.Timeout
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	r := &renderer{ctx: ctx, lim: lim, now: now, start: time.Now(), out: &strings.Builder{}}
	globals := &scope{}
	for name, v := range builtinGlobals() {
		globals.set(name, v)
	}
	top := globals.child()
	if vars != nil {
		for i, k := range vars.keys {
			if k.kind == KindString {
				top.set(k.s, vars.vals[i])
			}
		}
	}
	err := r.exec(t.body, top.child())
	switch {
	case errors.Is(err, errBreak), errors.Is(err, errContinue):
		return "", errorf(ErrSyntax, "break or continue outside a loop")
	case err != nil:
		return "", err
	}
	return r.out.String(), nil
}

var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

// scope is one level of variables: the globals, the caller's variables,
// the template's, a loop iteration's, a macro call's. Levels hold few
// names, so a slice beats a map.
type scope struct {
	names  []string
	vals   []Value
	parent *scope
}

func (s *scope) lookup(name string) (Value, bool) {
	for ; s != nil; s = s.parent {
		for i := len(s.names) - 1; i >= 0; i-- {
			if s.names[i] == name {
				return s.vals[i], true
			}
		}
	}
	return Value{}, false
}

func (s *scope) set(name string, v Value) {
	for i, n := range s.names {
		if n == name {
			s.vals[i] = v
			return
		}
	}
	s.names = append(s.names, name)
	s.vals = append(s.vals, v)
}

func (s *scope) reset() {
	clear(s.vals)
	s.names, s.vals = s.names[:0], s.vals[:0]
}

func (s *scope) child() *scope { return &scope{parent: s} }

type renderer struct {
	ctx     context.Context
	lim     Limits
	now     func() time.Time
	start   time.Time
	out     *strings.Builder
	written int
	steps   int
	depth   int
	line    int // the line of the statement running, for errors
}

// step counts one unit of work and checks the limits.
func (r *renderer) step(n int) error {
	r.steps += n
	if r.steps > r.lim.MaxSteps {
		return r.limitf("the template ran more than %d steps (a loop too long?)", r.lim.MaxSteps)
	}
	if r.steps&0x3ff < n || n > 0x3ff {
		if time.Since(r.start) > r.lim.Timeout {
			return r.limitf("the template ran longer than %v", r.lim.Timeout)
		}
		if r.ctx != nil {
			if err := r.ctx.Err(); err != nil {
				return r.limitf("the render was cancelled: %v", err)
			}
		}
	}
	return nil
}

func (r *renderer) limitf(format string, args ...any) error {
	return &Error{Kind: ErrLimit, Msg: fmt.Sprintf(format, args...), Line: r.line}
}

// checkLen fails when a value of n bytes (or items) would pass MaxOutput.
func (r *renderer) checkLen(n int) error {
	if n > r.lim.MaxOutput {
		return r.limitf("a value of %d bytes is larger than the %d allowed", n, r.lim.MaxOutput)
	}
	return nil
}

// checkItems fails when a list of n items would pass the bound on lists
// (MaxOutput/16 items: a list's items take 48 bytes each), and counts the
// copying as steps.
func (r *renderer) checkItems(n int) error {
	if n > r.lim.MaxOutput/16 {
		return r.limitf("a list of %d items is longer than the %d allowed", n, r.lim.MaxOutput/16)
	}
	return r.step(n)
}

func (r *renderer) write(s string) error {
	r.written += len(s)
	if r.written > r.lim.MaxOutput {
		return r.limitf("the output is larger than %d bytes", r.lim.MaxOutput)
	}
	r.out.WriteString(s)
	return nil
}

// capture renders body into a string of its own.
func (r *renderer) capture(body []node, sc *scope) (string, error) {
	saved := r.out
	r.out = &strings.Builder{}
	err := r.exec(body, sc)
	s := r.out.String()
	r.out = saved
	return s, err
}

// withLine gives an error without a line the line of the statement.
func (r *renderer) withLine(err error, line int) error {
	var e *Error
	if errors.As(err, &e) && e.Line == 0 {
		if line == 0 {
			line = r.line
		}
		e.Line = line
	}
	return err
}

func (r *renderer) exec(nodes []node, sc *scope) error {
	for _, n := range nodes {
		if err := r.step(1); err != nil {
			return err
		}
		if err := r.execNode(n, sc); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) execNode(n node, sc *scope) error {
	switch n := n.(type) {
	case *textNode:
		return r.write(n.s)
	case *outputNode:
		r.line = n.line
		v, err := r.eval(n.x, sc)
		if err != nil {
			return r.withLine(err, n.line)
		}
		s, err := r.toString(v)
		if err != nil {
			return r.withLine(err, n.line)
		}
		return r.write(s)
	case *ifNode:
		for i, c := range n.conds {
			v, err := r.eval(c, sc)
			if err != nil {
				return err
			}
			if v.Truth() {
				return r.exec(n.bodies[i], sc)
			}
		}
		return r.exec(n.els, sc)
	case *forNode:
		r.line = n.line
		iter, err := r.eval(n.iter, sc)
		if err != nil {
			return r.withLine(err, n.line)
		}
		return r.withLine(r.runFor(n, iter, sc, 0), n.line)
	case *setNode:
		r.line = n.line
		v, err := r.eval(n.x, sc)
		if err != nil {
			return r.withLine(err, n.line)
		}
		return r.withLine(r.assign(n.target, v, sc), n.line)
	case *setBlockNode:
		r.line = n.line
		s, err := r.capture(n.body, sc.child())
		if err != nil {
			return err
		}
		v, err := r.applyFilters(n.filters, String(s), sc)
		if err != nil {
			return r.withLine(err, n.line)
		}
		return r.withLine(r.assign(n.target, v, sc), n.line)
	case *macroNode:
		sc.set(n.name, r.macro(n.name, n.params, n.defaults, n.body, sc))
		return nil
	case *callBlockNode:
		r.line = n.line
		caller := r.macro("caller", n.params, n.defaults, n.body, sc)
		c := *n.call
		c.kwnames = append(append([]string(nil), c.kwnames...), "caller")
		c.kwargs = append(append([]expr(nil), c.kwargs...), &constExpr{v: caller})
		v, err := r.eval(&c, sc)
		if err != nil {
			return r.withLine(err, n.line)
		}
		s, err := r.toString(v)
		if err != nil {
			return err
		}
		return r.write(s)
	case *filterBlockNode:
		r.line = n.line
		s, err := r.capture(n.body, sc.child())
		if err != nil {
			return err
		}
		v, err := r.applyFilters(n.filters, String(s), sc)
		if err != nil {
			return r.withLine(err, n.line)
		}
		out, err := r.toString(v)
		if err != nil {
			return err
		}
		return r.write(out)
	case *withNode:
		inner := sc.child()
		for i, t := range n.targets {
			v, err := r.eval(n.values[i], sc)
			if err != nil {
				return err
			}
			if err := r.assign(t, v, inner); err != nil {
				return err
			}
		}
		return r.exec(n.body, inner)
	case *breakNode:
		return errBreak
	case *continueNode:
		return errContinue
	}
	return fmt.Errorf("jinja: unknown node %T", n)
}

// toString is what {{ v }} prints: str(v), with jinja2's Undefined as
// nothing.
func (r *renderer) toString(v Value) (string, error) {
	s := v.String()
	return s, r.checkLen(len(s))
}

func (r *renderer) applyFilters(fs []*filterExpr, v Value, sc *scope) (Value, error) {
	for _, f := range fs {
		var err error
		if v, err = r.callFilter(f, v, sc); err != nil {
			return Value{}, err
		}
	}
	return v, nil
}

// assign binds target (a name, a tuple of names, or a namespace's
// attribute) to v in sc.
func (r *renderer) assign(target expr, v Value, sc *scope) error {
	switch t := target.(type) {
	case *nameExpr:
		sc.set(t.name, v)
		return nil
	case *tupleExpr:
		items, err := r.iterate(v)
		if err != nil {
			return err
		}
		if len(items) != len(t.items) {
			if len(items) > len(t.items) {
				return errorf(ErrType, "too many values to unpack (expected %d)", len(t.items))
			}
			return errorf(ErrType, "not enough values to unpack (expected %d, got %d)", len(t.items), len(items))
		}
		for i, x := range t.items {
			if err := r.assign(x, items[i], sc); err != nil {
				return err
			}
		}
		return nil
	case *attrExpr:
		name := t.x.(*nameExpr).name
		obj, ok := sc.lookup(name)
		if !ok || obj.kind != KindNamespace {
			return errorf(ErrType, "cannot assign attribute on non-namespace object")
		}
		obj.ref.(*Namespace).d.Set(t.name, v)
		return nil
	}
	return errorf(ErrSyntax, "cannot assign to %T", target)
}

// iterate returns the items a for loop over v visits: a list's or
// tuple's items, a dict's keys, a string's characters, a generator's
// items (once). Undefined iterates as empty; None and numbers fail.
func (r *renderer) iterate(v Value) ([]Value, error) {
	switch v.kind {
	case KindList, KindTuple:
		return v.list(), nil
	case KindDict:
		return v.dict().keys, nil
	case KindString:
		out := make([]Value, 0, len(v.s))
		for _, c := range v.s {
			out = append(out, String(string(c)))
		}
		return out, r.step(len(out))
	case KindIter:
		it := v.ref.(*iter)
		if it.used {
			return nil, nil
		}
		it.used = true
		return it.items, nil
	case KindUndefined:
		return nil, nil
	case KindNamespace:
		return nil, errorf(ErrType, "'Namespace' object is not iterable")
	}
	return nil, errorf(ErrType, "'%s' object is not iterable", v.TypeName())
}

// loopState is the loop variable of a for loop.
type loopState struct {
	items []Value
	i     int
	depth int
	// recurse renders the loop's body over another iterable (a
	// recursive loop's loop(…)); nil otherwise.
	recurse  func(Value) (Value, error)
	lastSeen *Value // loop.changed's memory
}

func (r *renderer) runFor(n *forNode, iterable Value, sc *scope, depth int) error {
	items, err := r.iterate(iterable)
	if err != nil {
		return err
	}
	if n.cond != nil {
		var kept []Value
		for _, it := range items {
			if err := r.step(1); err != nil {
				return err
			}
			tmp := sc.child()
			if err := r.assign(n.target, it, tmp); err != nil {
				return err
			}
			c, err := r.eval(n.cond, tmp)
			if err != nil {
				return err
			}
			if c.Truth() {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		return r.exec(n.els, sc.child())
	}
	ls := &loopState{items: items, depth: depth}
	if n.recursive {
		ls.recurse = func(v Value) (Value, error) {
			r.depth++
			defer func() { r.depth-- }()
			if r.depth > r.lim.MaxDepth {
				return Value{}, r.limitf("recursion deeper than %d", r.lim.MaxDepth)
			}
			saved := r.out
			r.out = &strings.Builder{}
			err := r.runFor(n, v, sc, depth+1)
			s := r.out.String()
			r.out = saved
			return String(s), err
		}
	}
	loop := Value{kind: kindLoop, ref: ls}
	body := sc.child()
	for i, it := range items {
		ls.i = i
		if err := r.step(1); err != nil {
			return err
		}
		if n.defines {
			body = sc.child() // a macro defined in the body keeps its iteration's scope
		} else {
			body.reset()
		}
		if err := r.assign(n.target, it, body); err != nil {
			return err
		}
		body.set("loop", loop)
		err := r.exec(n.body, body)
		switch {
		case errors.Is(err, errBreak):
			return nil
		case errors.Is(err, errContinue):
		case err != nil:
			return err
		}
	}
	return nil
}

func (ls *loopState) attr(name string) (Value, bool) {
	n := len(ls.items)
	switch name {
	case "index":
		return Int(int64(ls.i + 1)), true
	case "index0":
		return Int(int64(ls.i)), true
	case "revindex":
		return Int(int64(n - ls.i)), true
	case "revindex0":
		return Int(int64(n - ls.i - 1)), true
	case "first":
		return Bool(ls.i == 0), true
	case "last":
		return Bool(ls.i == n-1), true
	case "length":
		return Int(int64(n)), true
	case "depth":
		return Int(int64(ls.depth + 1)), true
	case "depth0":
		return Int(int64(ls.depth)), true
	case "previtem":
		if ls.i == 0 {
			return undefined("there is no previous item"), true
		}
		return ls.items[ls.i-1], true
	case "nextitem":
		if ls.i == n-1 {
			return undefined("there is no next item"), true
		}
		return ls.items[ls.i+1], true
	case "cycle":
		return funcValue("cycle", func(_ *renderer, args []Value, _ []kwarg) (Value, error) {
			if len(args) == 0 {
				return Value{}, errorf(ErrType, "no items for cycling given")
			}
			return args[ls.i%len(args)], nil
		}), true
	case "changed":
		return funcValue("changed", func(_ *renderer, args []Value, _ []kwarg) (Value, error) {
			v := tupleOf(args...)
			if ls.lastSeen != nil && equal(*ls.lastSeen, v) {
				return Bool(false), nil
			}
			ls.lastSeen = &v
			return Bool(true), nil
		}), true
	}
	return Value{}, false
}

// macro returns a macro defined in sc: calling it renders body in a new
// scope over sc with the parameters bound, and returns the text.
func (r *renderer) macro(name string, params []string, defaults []expr, body []node, sc *scope) Value {
	uses := macroUses(body)
	return funcValue(name, func(r *renderer, args []Value, kw []kwarg) (Value, error) {
		r.depth++
		defer func() { r.depth-- }()
		if r.depth > r.lim.MaxDepth {
			return Value{}, r.limitf("macro calls nest deeper than %d (a runaway recursion?)", r.lim.MaxDepth)
		}
		inner := sc.child()
		firstDefault := len(params) - len(defaults)
		set := make([]bool, len(params))
		for i, a := range args {
			if i < len(params) {
				inner.set(params[i], a)
				set[i] = true
			}
		}
		var varargs []Value
		if len(args) > len(params) {
			varargs = args[len(params):]
		}
		extra := NewDict()
		for _, k := range kw {
			found := false
			for i, p := range params {
				if p == k.name {
					if set[i] {
						return Value{}, errorf(ErrType, "macro '%s' got multiple values for argument '%s'", name, p)
					}
					inner.set(p, k.v)
					set[i] = true
					found = true
				}
			}
			if !found {
				if k.name == "caller" {
					inner.set("caller", k.v)
					continue
				}
				extra.Set(k.name, k.v)
			}
		}
		for i, p := range params {
			if set[i] {
				continue
			}
			if i >= firstDefault {
				v, err := r.eval(defaults[i-firstDefault], inner)
				if err != nil {
					return Value{}, err
				}
				inner.set(p, v)
			} else {
				inner.set(p, undefined(fmt.Sprintf("parameter '%s' was not provided", p)))
			}
		}
		if len(varargs) > 0 && !uses.varargs {
			return Value{}, errorf(ErrType, "macro '%s' takes not more than %d argument(s)", name, len(params))
		}
		if extra.Len() > 0 && !uses.kwargs {
			return Value{}, errorf(ErrType, "macro '%s' takes no keyword argument '%s'", name, extra.keys[0].s)
		}
		inner.set("varargs", tupleOf(varargs...))
		inner.set("kwargs", DictValue(extra))
		saved, savedLine := r.out, r.line
		r.out = &strings.Builder{}
		err := r.exec(body, inner)
		s := r.out.String()
		r.out, r.line = saved, savedLine
		if errors.Is(err, errBreak) || errors.Is(err, errContinue) {
			err = errorf(ErrSyntax, "break or continue outside a loop")
		}
		return String(s), err
	})
}
