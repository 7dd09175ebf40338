package jinja

import (
	"fmt"
	"reflect"
)

// checkNames fails on a filter or test that does not exist, as jinja2's
// compiler does, except where jinja2 leaves the check to run time: inside
// an if statement (its tests and branches) and a conditional expression,
// whose branches may never run. A loop, macro, call, filter or set block
// inside those is checked again (jinja2 gives it a frame of its own).
func checkNames(nodes []node, soft bool) error {
	for _, n := range nodes {
		if err := checkNode(n, soft); err != nil {
			return err
		}
	}
	return nil
}

func checkNode(n node, soft bool) error {
	switch n := n.(type) {
	case *outputNode:
		return checkExpr(n.x, soft)
	case *ifNode:
		for i, c := range n.conds {
			if err := checkExpr(c, true); err != nil {
				return err
			}
			if err := checkNames(n.bodies[i], true); err != nil {
				return err
			}
		}
		return checkNames(n.els, true)
	case *forNode:
		if err := checkExpr(n.iter, soft); err != nil {
			return err
		}
		if err := checkExpr(n.cond, false); err != nil {
			return err
		}
		if err := checkNames(n.body, false); err != nil {
			return err
		}
		return checkNames(n.els, false)
	case *setNode:
		return checkExpr(n.x, soft)
	case *setBlockNode:
		for _, f := range n.filters {
			if err := checkExpr(f, false); err != nil {
				return err
			}
		}
		return checkNames(n.body, false)
	case *macroNode:
		for _, d := range n.defaults {
			if err := checkExpr(d, false); err != nil {
				return err
			}
		}
		return checkNames(n.body, false)
	case *callBlockNode:
		if err := checkExpr(n.call, soft); err != nil {
			return err
		}
		return checkNames(n.body, false)
	case *filterBlockNode:
		for _, f := range n.filters {
			if err := checkExpr(f, false); err != nil {
				return err
			}
		}
		return checkNames(n.body, false)
	case *withNode:
		for _, v := range n.values {
			if err := checkExpr(v, soft); err != nil {
				return err
			}
		}
		return checkNames(n.body, false)
	}
	return nil
}

func checkExprs(xs []expr, soft bool) error {
	for _, x := range xs {
		if err := checkExpr(x, soft); err != nil {
			return err
		}
	}
	return nil
}

func checkExpr(x expr, soft bool) error {
	switch x := x.(type) {
	case nil, *constExpr, *nameExpr:
	case *attrExpr:
		return checkExpr(x.x, soft)
	case *itemExpr:
		return checkExprs([]expr{x.x, x.key}, soft)
	case *sliceExpr:
		return checkExprs([]expr{x.x, x.start, x.stop, x.step}, soft)
	case *callExpr:
		if err := checkExprs([]expr{x.fn, x.star, x.dstar}, soft); err != nil {
			return err
		}
		if err := checkExprs(x.args, soft); err != nil {
			return err
		}
		return checkExprs(x.kwargs, soft)
	case *filterExpr:
		if _, ok := filters[x.name]; !ok && !soft {
			return &Error{Kind: ErrSyntax, Msg: fmt.Sprintf("No filter named '%s'.", x.name), Line: x.line}
		}
		if err := checkExprs([]expr{x.x}, soft); err != nil {
			return err
		}
		if err := checkExprs(x.args, soft); err != nil {
			return err
		}
		return checkExprs(x.kwargs, soft)
	case *testExpr:
		if _, ok := tests[x.name]; !ok && !soft {
			return &Error{Kind: ErrSyntax, Msg: fmt.Sprintf("No test named '%s'.", x.name), Line: x.line}
		}
		if err := checkExpr(x.x, soft); err != nil {
			return err
		}
		if err := checkExprs(x.args, soft); err != nil {
			return err
		}
		return checkExprs(x.kwargs, soft)
	case *unaryExpr:
		return checkExpr(x.x, soft)
	case *binaryExpr:
		return checkExprs([]expr{x.l, x.r}, soft)
	case *concatExpr:
		return checkExprs(x.parts, soft)
	case *compareExpr:
		if err := checkExpr(x.first, soft); err != nil {
			return err
		}
		return checkExprs(x.rest, soft)
	case *condExpr:
		return checkExprs([]expr{x.test, x.yes, x.no}, true)
	case *listExpr:
		return checkExprs(x.items, soft)
	case *tupleExpr:
		return checkExprs(x.items, soft)
	case *dictExpr:
		if err := checkExprs(x.keys, soft); err != nil {
			return err
		}
		return checkExprs(x.vals, soft)
	}
	return nil
}

// usage says which of a macro's special names its body reads: jinja2
// accepts extra positional or keyword arguments only for a macro that
// reads varargs or kwargs.
type usage struct{ varargs, kwargs bool }

func macroUses(body []node) usage {
	var u usage
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return
			}
			switch v.Type() {
			case reflect.TypeFor[*nameExpr]():
				name := v.Elem().FieldByName("name").String()
				u.varargs = u.varargs || name == "varargs"
				u.kwargs = u.kwargs || name == "kwargs"
				return
			case reflect.TypeFor[*macroNode](), reflect.TypeFor[*constExpr]():
				return // a nested macro's names are its own; constants hold none
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(body))
	return u
}

// definesMacro reports whether nodes define a macro or a call block
// anywhere inside.
func definesMacro(nodes []node) bool {
	found := false
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		if found {
			return
		}
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return
			}
			switch v.Type() {
			case reflect.TypeFor[*macroNode](), reflect.TypeFor[*callBlockNode]():
				found = true
				return
			case reflect.TypeFor[*constExpr]():
				return
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(nodes))
	return found
}
