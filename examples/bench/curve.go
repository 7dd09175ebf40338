package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/smolgo/smolgo/engine"
)

// passSizes are the pass lengths -pass-cost measures: the draft lengths
// speculation checks and the batch sizes of a few streams (1 to 16), and
// the engine's default prefill chunk.
var passSizes = []int{1, 2, 4, 8, 16, engine.DefaultPrefillChunk}

// benchPassCost measures the time of one forward pass of k tokens of one
// sequence after a -tg-prompt token prompt, for each k of passSizes
// (median of -reps): pass_ms, and pass_cost, each over the one-token pass.
// That curve is what batching and speculation trade on: a pass of k
// tokens that costs c times one token's pass makes k/c tokens per pass's
// worth of time. pass_all_ms is the same pass computing the logits of all
// k rows, as checking a draft of k−1 tokens does (the sizes up to 16).
func benchPassCost(ctx context.Context, log *slog.Logger, b engine.Backend, cache engine.Cache, p params, tokens func(int) []int32, logits []float32, res *result) error {
	all := make([]float32, 16*b.Vocab())
	for _, k := range passSizes {
		var ms, msAll []float64
		for range p.reps {
			if err := cache.Truncate(0); err != nil {
				return err
			}
			if err := forward(ctx, b, cache, tokens(p.tgPrompt), logits); err != nil {
				return err
			}
			t0 := time.Now()
			if err := forward(ctx, b, cache, tokens(k), logits); err != nil {
				return err
			}
			ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
			if k > 16 || k > b.BatchSize() {
				continue
			}
			if err := cache.Truncate(0); err != nil {
				return err
			}
			if err := forward(ctx, b, cache, tokens(p.tgPrompt), logits); err != nil {
				return err
			}
			t0 = time.Now()
			seq := engine.Seq{Cache: cache, Tokens: tokens(k), Logits: all[:k*b.Vocab()]}
			if err := b.Step(ctx, []engine.Seq{seq}); err != nil {
				return err
			}
			msAll = append(msAll, float64(time.Since(t0).Microseconds())/1000)
		}
		res.PassK = append(res.PassK, k)
		res.PassMs = append(res.PassMs, round(median(ms)))
		if len(msAll) > 0 {
			res.PassAllMs = append(res.PassAllMs, round(median(msAll)))
		}
		log.Info("pass cost", "tokens", k, "ms", round(median(ms)), "all_rows_ms", round(median(msAll)))
	}
	for _, ms := range res.PassMs {
		res.PassCost = append(res.PassCost, round(ms/res.PassMs[0]))
	}
	return nil
}

// benchArrival measures what a long prompt arriving does to the streams
// already decoding: p.parallel sessions decode -tg tokens each (as in
// benchParallel); once every one of them has produced a quarter of them,
// another session arrives with a prompt of -arrive random tokens. The
// engine computes that prompt a chunk (Config.PrefillChunk) per step
// beside the others' decode tokens, so their next token should wait about
// one chunk's pass, not the whole prompt's. arrive_max_gap_ms is the
// longest wait between two tokens of a decoding stream while the prompt
// ran (from its arrival to its first token), decode_gap_ms the median wait
// before it arrived, arrive_first_token_s the newcomer's time to its first
// token, arrive_step_ms that time over the steps it took (the mean time of
// a step with a chunk in it) and arrive_mean_batch the sequences per step
// meanwhile (all N streams and the newcomer in each: N+1). Only waits for
// a text event of exactly one token count (a token that ends inside a
// UTF-8 character is held back and comes out with the next).
func benchArrival(ctx context.Context, log *slog.Logger, m *engine.Model, p params, tokens func(int) []int32, res *result) error {
	n := p.parallel
	keepGoing := newNoEndOfTurn(m.Format(), m.Backend().Vocab())
	sessions := make([]*engine.Session, n)
	for i := range sessions {
		sessions[i] = m.NewSession()
		defer sessions[i].Close()
	}
	prompts := make([][]int32, n)
	for i := range prompts {
		prompts[i] = tokens(p.tgPrompt)
	}
	if _, err := generateAll(ctx, sessions, prompts, engine.GenerateOptions{MaxTokens: 1, Constraint: keepGoing}); err != nil {
		return err
	}
	// Each stream reports its token times; the quarter mark starts the
	// newcomer.
	times := make([][]stamp, n)
	quarter := make(chan struct{}, n)
	type arrival struct {
		start, first time.Time
		steps, seqs  int64
		err          error
	}
	arrived := make(chan arrival, 1)
	// The newcomer gives up waiting if the streams end before all of them
	// reach the quarter mark; once it has begun it runs to its first token.
	waitCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	began := make(chan struct{})
	go func() {
		for range n {
			select {
			case <-quarter:
			case <-waitCtx.Done():
				arrived <- arrival{err: fmt.Errorf("the %d-token prompt never arrived: the streams ended or the run was cancelled first (%w)", p.arrive, context.Cause(waitCtx))}
				return
			}
		}
		close(began)
		s := m.NewSession()
		defer s.Close()
		before := m.Occupancy()
		a := arrival{start: time.Now()}
		for _, err := range s.Generate(ctx, nil, engine.GenerateOptions{RawPrompt: tokens(p.arrive), MaxTokens: 1}) {
			if err != nil {
				a.err = fmt.Errorf("arriving session: %w", err)
				break
			}
			if a.first.IsZero() {
				a.first = time.Now()
				after := m.Occupancy()
				a.steps, a.seqs = after.Steps-before.Steps, after.StepSequences-before.StepSequences
			}
		}
		arrived <- a
	}()
	runs, err := generateAllTimed(ctx, sessions, prompts, engine.GenerateOptions{MaxTokens: p.tg + 1, Constraint: keepGoing, Logprobs: true},
		func(i int, ev engine.Event, t time.Time) {
			times[i] = append(times[i], stamp{t, len(ev.Logprobs)})
			if len(times[i]) == p.tg/4 {
				quarter <- struct{}{}
			}
		})
	select {
	case <-began:
	default:
		giveUp()
	}
	a := <-arrived
	if err != nil {
		return err
	}
	if a.err != nil {
		return a.err
	}
	for i, r := range runs {
		if r.stats.GeneratedTokens < p.tg+1 {
			return fmt.Errorf("stream %d ended after %d tokens (%s)", i, r.stats.GeneratedTokens, r.stats.StopReason)
		}
	}
	var before []float64
	var worst time.Duration
	for _, ts := range times {
		for j := 1; j < len(ts); j++ {
			if ts[j].tokens != 1 {
				continue
			}
			gap := ts[j].at.Sub(ts[j-1].at)
			switch {
			case ts[j].at.Before(a.start):
				before = append(before, float64(gap.Microseconds())/1000)
			case ts[j-1].at.Before(a.first):
				worst = max(worst, gap)
			}
		}
	}
	if worst == 0 || len(before) == 0 {
		return fmt.Errorf("the %d-token prompt did not arrive while the streams decoded (try a larger -tg)", p.arrive)
	}
	res.Arrive = p.arrive
	res.ArriveFirstS = round(a.first.Sub(a.start).Seconds())
	res.ArriveMaxGapMs = round(float64(worst.Microseconds()) / 1000)
	res.DecodeGapMs = round(median(before))
	res.ArriveMeanBatch = round(float64(a.seqs) / float64(max(a.steps, 1)))
	res.ArriveStepMs = round(float64(a.first.Sub(a.start).Microseconds()) / 1000 / float64(max(a.steps, 1)))
	log.Info("arrival", "prompt", p.arrive, "streams", n, "first_token_s", res.ArriveFirstS,
		"step_ms", res.ArriveStepMs, "mean_batch", res.ArriveMeanBatch, "max_gap_ms", res.ArriveMaxGapMs, "decode_gap_ms", res.DecodeGapMs)
	return nil
}

// stamp is when a stream's text event came and how many tokens it carried.
type stamp struct {
	at     time.Time
	tokens int
}
