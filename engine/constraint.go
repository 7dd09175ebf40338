package engine

import (
	"fmt"
	"math"
)

// Constraint restricts which tokens a generation may pick, so that the
// answer follows a format: package grammar's Constraint (JSON schemas,
// GBNF grammars) implements it, and Model.NewConstraint makes one over the
// model's vocabulary.
//
// Before each token Generate asks Allow which tokens fit and sets the others'
// logits to -Inf (on a copy), then samples and reports the pick to Accept.
// An end-of-turn token is sampled only when the constraint allows it, which
// a grammar does once the answer is complete.
type Constraint interface {
	// Allow sets mask[id] to whether token id may come next
	// (len(mask) is the vocabulary size).
	Allow(mask []bool)
	// Accept records the token that was picked; an error ends the
	// generation.
	Accept(id int32) error
	// Done reports whether the answer is complete so far (an end of turn
	// would be allowed).
	Done() bool
}

// Limiter is implemented by constraints that can finish within a budget:
// after Limit(n), Allow (and Apply) allow only tokens after which the
// answer can still be completed in the tokens left, counting the
// end-of-turn token. Generate calls it before every token with what is
// left under MaxTokens and the context.
type Limiter interface {
	Limit(n int)
}

// applier is implemented by constraints that mask logits themselves, faster
// than through Allow (grammar.Constraint writes only the shorter of the
// allowed and disallowed lists); Apply returns how many tokens are allowed.
type applier interface {
	Apply(logits []float32) int
}

// constrained applies a Constraint to logits.
type constrained struct {
	c      Constraint
	mask   []bool
	logits []float32
}

// apply returns a copy of logits with the disallowed tokens at -Inf, or an
// error when no token at all is allowed (a grammar this vocabulary cannot
// spell). budget is the number of tokens left (0: no limit).
func (k *constrained) apply(logits []float32, budget int) ([]float32, error) {
	if l, ok := k.c.(Limiter); ok && budget > 0 {
		l.Limit(budget)
	}
	if len(k.logits) != len(logits) {
		k.logits = make([]float32, len(logits))
	}
	allowed := 0
	if a, ok := k.c.(applier); ok {
		copy(k.logits, logits)
		allowed = a.Apply(k.logits)
	} else {
		if len(k.mask) != len(logits) {
			k.mask = make([]bool, len(logits))
		}
		k.c.Allow(k.mask)
		negInf := float32(math.Inf(-1))
		for i, ok := range k.mask {
			if ok {
				k.logits[i] = logits[i]
				allowed++
			} else {
				k.logits[i] = negInf
			}
		}
	}
	if allowed == 0 {
		// A constraint that knows why (its context ended, or its grammar
		// outgrew its bounds) says so.
		if e, ok := k.c.(interface{ Err() error }); ok && e.Err() != nil {
			return nil, fmt.Errorf("engine: constraint: %w", e.Err())
		}
		return nil, fmt.Errorf("engine: the constraint allows no token of the vocabulary (complete so far: %v)", k.c.Done())
	}
	return k.logits, nil
}
