package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/smolgo/smolgo/engine"
)

// agreeBackend is the workload of -agree A: a draft model that agrees with
// the model on a chosen share A of the tokens. Random-weight models never
// agree (a random draft picks the model's token about once per vocabulary),
// so both models run their real forward passes (every cost is theirs) and
// then, in each row of logits, the token that a seeded hash of the row's
// position and the three tokens before it names is lifted above all
// others. The model's wrapper lifts that token; the draft's wrapper lifts
// it too with probability A, decided by a second hash of the same key, and
// a different token otherwise. Greedy decoding then accepts each drafted
// token with probability A, independently, wherever the draft follows the
// model's own tokens, and the answer is the same token for token with the
// draft on or off; only the number of passes differs. Both wrappers see the
// same tokens at the same positions, so they name the same tokens.
type agreeBackend struct {
	engine.Backend
	draft  bool             // the draft's wrapper: lift the model's token only with probability alpha
	alpha  float64          // the share of positions where the draft names the model's token
	seed   uint64           // the hashes' seed (-seed)
	banned func(int32) bool // tokens never lifted (the ends of turn, which the bench's constraint forbids)

	mu      sync.Mutex
	history map[engine.Cache][]int32 // the tokens each cache holds
}

// newAgreePair wraps a model's backend and its draft's for -agree alpha,
// with one hash seed so the two name the same tokens.
func newAgreePair(model, draft engine.Backend, alpha float64, seed uint64, banned func(int32) bool) (m, d *agreeBackend) {
	m = &agreeBackend{Backend: model, alpha: alpha, seed: seed, banned: banned, history: map[engine.Cache][]int32{}}
	d = &agreeBackend{Backend: draft, draft: true, alpha: alpha, seed: seed, banned: banned, history: map[engine.Cache][]int32{}}
	return m, d
}

// Step runs the real step, then edits the logits (see agreeBackend).
func (a *agreeBackend) Step(ctx context.Context, batch []engine.Seq) error {
	before := make([]int, len(batch))
	for i, s := range batch {
		before[i] = s.Cache.Len()
	}
	if err := a.Backend.Step(ctx, batch); err != nil {
		return err
	}
	V := a.Vocab()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, s := range batch {
		h := a.history[s.Cache]
		h = append(h[:min(len(h), before[i])], s.Tokens...)
		a.history[s.Cache] = h
		rows := len(s.Logits) / V
		for r := range rows {
			// Row r predicts the token after position next-1.
			next := before[i] + len(s.Tokens) - rows + r + 1
			row := s.Logits[r*V : (r+1)*V]
			top := row[0]
			for _, v := range row {
				top = max(top, v)
			}
			row[a.pick(h[:next], V)] = top + 1
		}
	}
	return nil
}

// pick is the token lifted after the tokens h: the model's token, named by
// a hash of len(h) and h's last three tokens, or for the draft, with
// probability 1 − alpha, another one.
func (a *agreeBackend) pick(h []int32, V int) int32 {
	x := mix64(a.seed ^ uint64(len(h)))
	for j := 1; j <= 3 && j <= len(h); j++ {
		x = mix64(x ^ uint64(uint32(h[len(h)-j])) ^ uint64(j)<<32)
	}
	t := a.allowed(int32(x%uint64(V)), V)
	if !a.draft {
		return t
	}
	u := mix64(x ^ 0x9e3779b97f4a7c15) // a second, independent draw from the same key
	if float64(u>>11)/(1<<53) < a.alpha {
		return t
	}
	return a.allowed(int32((uint64(t)+1+(u%uint64(V-1)))%uint64(V)), V, t)
}

// mix64 is SplitMix64's finalizer: every bit of x moves about half the
// bits of the result.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// allowed is id, or the next id after it that is not banned and not one of
// avoid.
func (a *agreeBackend) allowed(id int32, V int, avoid ...int32) int32 {
	for range V {
		ok := !a.banned(id)
		for _, x := range avoid {
			ok = ok && id != x
		}
		if ok {
			return id
		}
		id = (id + 1) % int32(V)
	}
	return id
}

// agreeingModel is m over an agreeBackend, with draft (nil: none) over its
// pair, for -agree alpha. done closes the two engines it made, and leaves
// m and draft open.
func agreeingModel(m, draft *engine.Model, alpha float64, seed uint64) (pm *engine.Model, done func(), err error) {
	f, V := m.Format(), m.Backend().Vocab()
	banned := func(id int32) bool { return f.EndOfTurn(id) }
	var db engine.Backend
	if draft != nil {
		if dv := draft.Backend().Vocab(); dv != V {
			return nil, nil, fmt.Errorf("-agree: the draft's vocabulary has %d tokens, the model's %d", dv, V)
		}
		db = draft.Backend()
	}
	mb, dw := newAgreePair(m.Backend(), db, alpha, seed, banned)
	cfg := m.Config()
	var dm *engine.Model
	if draft != nil {
		if dm, err = engine.New(dw, draft.Format(), draft.Config()); err != nil {
			return nil, nil, err
		}
		cfg.Draft = dm
	}
	if pm, err = engine.New(mb, f, cfg); err != nil {
		if dm != nil {
			dm.Close()
		}
		return nil, nil, err
	}
	return pm, func() {
		pm.Close()
		if dm != nil {
			dm.Close()
		}
	}, nil
}
