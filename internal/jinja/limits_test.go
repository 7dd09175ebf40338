package jinja

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestHostileTemplates checks that a template built to hang or exhaust the
// process stops with a clear error: the limit it went past.
func TestHostileTemplates(t *testing.T) {
	cases := []struct {
		name, src string
		kind      ErrorKind
		msg       string // a part of the error message
	}{
		{"deep recursion", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, ErrLimit, "deeper than 200"},
		{"recursive loop", `{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`, ErrLimit, "deeper than 200"},
		{"loop of 10^10", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, ErrLimit, "the template ran"},
		{"range of 10^9", `{% for i in range(1000000000) %}{% endfor %}`, ErrSecurity, "Range too big"},
		{"a 1 GB string", `{{ 'a' * 1000000000 }}`, ErrLimit, "larger than"},
		{"a string doubled", `{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`, ErrLimit, "larger than"},
		{"a list doubled", `{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}`, ErrLimit, "longer than"},
		{"a list multiplied", `{{ [1] * 1000000000 }}`, ErrLimit, "longer than"},
		{"output bomb", `{% for i in range(100000) %}{% for j in range(1000) %}0123456789abcdef{% endfor %}{% endfor %}`, ErrLimit, "output is larger"},
		{"huge padding", `{{ '{:>999999999}'.format('x') }}`, ErrLimit, "too large"},
		{"huge indent", `{{ 'a\nb'|indent(1000000000) }}`, ErrLimit, "too large"},
		{"deep nesting", strings.Repeat("{% if true %}", 2000) + strings.Repeat("{% endif %}", 2000), ErrSyntax, "nests deeper"},
		{"deep parentheses", "{{ " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + " }}", ErrSyntax, "nests deeper"},
		{"power", `{{ 10 ** 100 }}`, ErrType, "overflow"},
		{"file access", `{% include 'x' %}`, ErrUnsupported, "no other templates"},
		{"private attribute", `{{ ''.__class__.__mro__ }}`, ErrSecurity, "unsafe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			p, err := Parse(c.src)
			if err == nil {
				// The default limits but for time (TestTimeout's): on a
				// loaded machine the 1 s bound would stop a render before
				// the limit each case is about.
				_, err = p.Render(context.Background(), nil, Options{Limits: Limits{Timeout: time.Minute}})
			}
			t.Logf("%v after %v", err, time.Since(start))
			var e *Error
			if !errors.As(err, &e) || e.Kind != c.kind || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want a %s error saying %q", err, c.kind, c.msg)
			}
		})
	}
}

// TestTimeout stops a render past its Limits.Timeout, and a cancelled
// context stops one too.
func TestTimeout(t *testing.T) {
	p, err := Parse(`{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Render(context.Background(), nil, Options{Limits: Limits{MaxSteps: 1 << 62, Timeout: time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "longer than 1ms") {
		t.Errorf("got %v, want the timeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Render(ctx, nil, Options{Limits: Limits{MaxSteps: 1 << 62}})
	if err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("got %v, want the cancellation", err)
	}
}

// TestErrors checks the kinds of errors a template gets, and that
// raise_exception's message comes through whole.
func TestErrors(t *testing.T) {
	cases := []struct {
		src  string
		kind ErrorKind
		msg  string
	}{
		{`{{ raise_exception('Only user and assistant roles are supported!') }}`, ErrRaised, "the template raised: Only user and assistant roles are supported!"},
		{`{% if %}`, ErrSyntax, "line 1"},
		{"a\n{{ x.y }}", ErrUndefined, "line 2: undefined: 'x' is undefined"},
		{`{{ [].append(1) }}`, ErrSecurity, "access to attribute 'append' of 'list' object is unsafe."},
		{`{{ 1 + 'a' }}`, ErrType, "unsupported operand"},
		{`{{ x|nofilter }}`, ErrSyntax, "No filter named 'nofilter'"},
		{`{% for x in y %}`, ErrSyntax, "endfor"},
		{`{{ 'unterminated }}`, ErrSyntax, ""},
		{`{% break %}`, ErrSyntax, "outside a loop"},
	}
	for _, c := range cases {
		p, err := Parse(c.src)
		if err == nil {
			_, err = p.Render(context.Background(), nil, Options{})
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: got %v, want a %s error saying %q", c.src, err, c.kind, c.msg)
		}
	}
}

// TestConcurrentRenders renders one parsed template from many goroutines
// (run with -race): a Template holds no render state.
func TestConcurrentRenders(t *testing.T) {
	p, err := Parse(`{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ m.content }}{% endfor %}{{ ns.n }}`)
	if err != nil {
		t.Fatal(err)
	}
	vars := NewDict()
	vars.Set("messages", MustJSON(`[{"content": "a"}, {"content": "b"}]`))
	done := make(chan string)
	for range 8 {
		go func() {
			out, err := p.Render(context.Background(), vars, Options{})
			if err != nil {
				out = err.Error()
			}
			done <- out
		}()
	}
	for range 8 {
		if got := <-done; got != "ab2" {
			t.Errorf("got %q, want ab2", got)
		}
	}
}
