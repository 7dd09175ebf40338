package main

import (
	"context"
	"sync"

	"github.com/smolgo/smolgo/engine"
)

// copyBackend is the workload of -copy: answers that repeat their prompt,
// the case lookup speculation is for (code edits, quoting a document,
// filling in a form). A random-weight model never repeats its input, so
// copyBackend runs the model's real forward pass (every cost is the
// model's) and then, in each row of logits that predicts a token past the
// prompt, lifts the token that continues a copy of the prompt above all
// others: greedy decoding then writes the prompt again from its start,
// and again. Token for token the answer is the same with speculation on or
// off; only the number of passes it takes differs.
type copyBackend struct {
	engine.Backend
	promptLen int // every sequence's prompt has this many tokens

	mu      sync.Mutex
	history map[engine.Cache][]int32 // the tokens each cache holds
}

func newCopyBackend(b engine.Backend, promptLen int) *copyBackend {
	return &copyBackend{Backend: b, promptLen: promptLen, history: map[engine.Cache][]int32{}}
}

// Step runs the real step, then edits the logits (see copyBackend).
func (c *copyBackend) Step(ctx context.Context, batch []engine.Seq) error {
	before := make([]int, len(batch))
	for i, s := range batch {
		before[i] = s.Cache.Len()
	}
	if err := c.Backend.Step(ctx, batch); err != nil {
		return err
	}
	V := c.Vocab()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range batch {
		h := c.history[s.Cache]
		h = append(h[:min(len(h), before[i])], s.Tokens...)
		c.history[s.Cache] = h
		rows := len(s.Logits) / V
		for r := range rows {
			// Row r holds the prediction after token idx of this step,
			// at position pos; it predicts position pos+1.
			idx := len(s.Tokens) - rows + r
			next := before[i] + idx + 1
			if next < c.promptLen || next-c.promptLen >= len(h) {
				continue
			}
			row := s.Logits[r*V : (r+1)*V]
			top := row[0]
			for _, v := range row {
				top = max(top, v)
			}
			row[h[next-c.promptLen]] = top + 1
		}
	}
	return nil
}
