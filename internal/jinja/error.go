package jinja

import "fmt"

// ErrorKind classifies a template error as jinja2's exception classes do.
type ErrorKind uint8

const (
	// ErrSyntax: the template does not parse (TemplateSyntaxError), or
	// uses a filter or test that does not exist (TemplateAssertionError).
	ErrSyntax ErrorKind = iota + 1
	// ErrUndefined: a missing variable or attribute was used (UndefinedError).
	ErrUndefined
	// ErrType: an operation on values of the wrong type (Python's
	// TypeError, ValueError, ZeroDivisionError...).
	ErrType
	// ErrSecurity: the sandbox refused an operation (SecurityError), such
	// as calling list.append in the immutable sandbox.
	ErrSecurity
	// ErrRaised: the template called raise_exception.
	ErrRaised
	// ErrLimit: the render went past one of the Limits.
	ErrLimit
	// ErrUnsupported: a feature this engine does not offer (include,
	// import, extends: the sandbox has no files).
	ErrUnsupported
)

var kindNames = map[ErrorKind]string{
	ErrSyntax: "syntax error", ErrUndefined: "undefined", ErrType: "type error", ErrSecurity: "security error",
	ErrRaised: "raised", ErrLimit: "limit", ErrUnsupported: "unsupported",
}

func (k ErrorKind) String() string { return kindNames[k] }

// Error is an error of parsing or rendering a template: its kind, the
// message (for ErrRaised, the template's own), and the line of the
// template where it happened (0 when unknown).
type Error struct {
	Kind ErrorKind
	Msg  string
	Line int
}

func (e *Error) Error() string {
	if e.Kind == ErrRaised {
		if e.Line > 0 {
			return fmt.Sprintf("jinja: line %d: the template raised: %s", e.Line, e.Msg)
		}
		return "jinja: the template raised: " + e.Msg
	}
	if e.Line > 0 {
		return fmt.Sprintf("jinja: line %d: %s: %s", e.Line, e.Kind, e.Msg)
	}
	return fmt.Sprintf("jinja: %s: %s", e.Kind, e.Msg)
}

func errorf(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
