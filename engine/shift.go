package engine

import (
	"errors"
	"fmt"

	"github.com/smolgo/smolgo/backend"
)

// shift makes room for a prompt from which old messages were dropped by
// shifting the cache rather than recomputing: the cache holds the old
// conversation, the prompt starts like it (the system prompt), skips a
// stretch (the dropped messages) and goes on like it again (the kept
// messages). shift finds that stretch as the one whose removal lets the
// most cached tokens be reused, and removes it from the cache. Where no
// such reuse exists (or the cache cannot shift, or cannot make this shift:
// backend.ErrCannotShift), it does nothing and the prompt is computed from
// the common prefix as usual.
func (g *generation) shift(prompt []int32) error {
	s := g.s
	sh, ok := s.cache.(Shifter)
	if !ok {
		return nil
	}
	old := s.tokens
	keep := commonPrefix(old, prompt)
	if keep == len(prompt) || keep == len(old) {
		return nil
	}
	// The dropped stretch is old[keep:skip]; pick skip to reuse the most.
	bestSkip, bestLen := 0, 0
	for skip := keep + 1; skip < len(old); skip++ {
		if old[skip] != prompt[keep] || len(old)-skip <= bestLen {
			continue
		}
		n := commonPrefix(old[skip:], prompt[keep:])
		if n > bestLen {
			bestSkip, bestLen = skip, n
		}
		if skip+n == len(old) || keep+n == len(prompt) {
			break // reuses all that can be reused from here on
		}
	}
	if bestLen == 0 {
		return nil
	}
	drop := bestSkip - keep
	if s.cache.Len() > len(old) {
		if err := s.cache.Truncate(len(old)); err != nil {
			return fmt.Errorf("engine: rewinding the KV cache to %d tokens: %w", len(old), err)
		}
	}
	if err := sh.Shift(keep, drop); errors.Is(err, backend.ErrCannotShift) {
		return nil // the cache is unchanged: the prompt is computed from the common prefix
	} else if err != nil {
		return fmt.Errorf("engine: shifting the KV cache by %d positions: %w", drop, err)
	}
	s.tokens = append(old[:keep], old[bestSkip:]...)
	s.promptEnd = -1
	if s.approxFrom < 0 || s.approxFrom > keep {
		s.approxFrom = keep
	}
	g.stats.ShiftedTokens = drop
	return nil
}
