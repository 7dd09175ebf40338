package jinja

// Statements.

type node interface{}

type textNode struct{ s string }

type outputNode struct {
	x    expr
	line int
}

type ifNode struct {
	conds  []expr
	bodies [][]node
	els    []node
}

type forNode struct {
	target    expr // nameExpr or tupleExpr of names
	iter      expr
	cond      expr // nil without a filter
	body, els []node
	recursive bool
	defines   bool // the body defines a macro (which keeps the iteration's scope)
	line      int
}

type setNode struct {
	target expr // nameExpr, tupleExpr of names, or attrExpr on a name (namespace)
	x      expr
	line   int
}

type setBlockNode struct {
	target  expr
	filters []*filterExpr // applied to the body's text, innermost first
	body    []node
	line    int
}

type macroNode struct {
	name     string
	params   []string
	defaults []expr // aligned to the end of params
	body     []node
}

type callBlockNode struct {
	call     *callExpr
	params   []string
	defaults []expr
	body     []node
	line     int
}

type filterBlockNode struct {
	filters []*filterExpr
	body    []node
	line    int
}

type withNode struct {
	targets []expr
	values  []expr
	body    []node
}

type breakNode struct{}
type continueNode struct{}

// Expressions.

type expr interface{}

type constExpr struct{ v Value }

type nameExpr struct {
	name string
	line int
}

type attrExpr struct {
	x    expr
	name string
	line int
}

type itemExpr struct {
	x, key expr
	line   int
}

type sliceExpr struct {
	x                 expr
	start, stop, step expr // nil when left out
	line              int
}

type callExpr struct {
	fn      expr
	args    []expr
	kwnames []string
	kwargs  []expr
	star    expr // *args
	dstar   expr // **kwargs
	line    int
}

type filterExpr struct {
	x       expr // nil inside a filter block or a set block
	name    string
	args    []expr
	kwnames []string
	kwargs  []expr
	line    int
}

type testExpr struct {
	x       expr
	name    string
	args    []expr
	kwnames []string
	kwargs  []expr
	negate  bool
	line    int
}

type unaryExpr struct {
	op   string // "-", "+", "not"
	x    expr
	line int
}

type binaryExpr struct {
	op   string // + - * / // % ** and or
	l, r expr
	line int
}

type concatExpr struct {
	parts []expr
	line  int
}

type compareExpr struct {
	first expr
	ops   []string // == != < <= > >= in notin
	rest  []expr
	line  int
}

type condExpr struct {
	test, yes, no expr // no may be nil (then Undefined)
	line          int
}

type listExpr struct{ items []expr }

type tupleExpr struct{ items []expr }

type dictExpr struct{ keys, vals []expr }
