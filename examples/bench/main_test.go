package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
)

const tiny = "../../testdata/smollm3-tinyq-Q4_K_M.gguf"

// tinyParams are quick settings on the demo model.
func tinyParams() params {
	return params{path: tiny, threads: 2, pp: 8, tg: 4, tgPrompt: 4, reps: 1, kv: "f16", device: "cpu", seed: 1}
}

func runTiny(t *testing.T, p params) result {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), &out, slog.New(slog.DiscardHandler), p); err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	return r
}

// TestRunTinyModel runs the benchmark on the demo model and checks that the
// JSON line carries every measurement, the roofline included.
func TestRunTinyModel(t *testing.T) {
	p := tinyParams()
	p.roofline = true
	r := runTiny(t, p)
	if r.PPTps <= 0 || r.TGTps <= 0 || r.LoadS < 0 || r.PeakRSSMB <= 0 || r.ModelBytes <= 0 || r.Device != "cpu" || r.KV != "f16" {
		t.Errorf("missing measurements: %+v", r)
	}
	if r.ReadGBps <= 0 || r.TGRoofline <= 0 || r.TGRooflineFra <= 0 {
		t.Errorf("missing roofline: read %v GB/s, roofline %v t/s, fraction %v", r.ReadGBps, r.TGRoofline, r.TGRooflineFra)
	}
	if len(r.PPTpsAll) != 1 || len(r.TGTpsAll) != 1 {
		t.Errorf("want one repetition each, got %v and %v", r.PPTpsAll, r.TGTpsAll)
	}
	if r.Parallel != 0 || r.ParTps != 0 {
		t.Errorf("parallel results without -parallel: %+v", r)
	}
}

// TestParallel runs 3 sessions at once for 2 repetitions: a total rate per
// repetition, one rate per session, and steps that computed several
// sessions together (the engine batches them; 256 tokens leave time for
// every session to join, however the goroutines start).
func TestParallel(t *testing.T) {
	for _, speculate := range []bool{false, true} {
		p := tinyParams()
		p.pp, p.tg, p.reps, p.parallel, p.speculate = 0, 256, 2, 3, speculate
		r := runTiny(t, p)
		if r.Parallel != 3 || r.ParTps <= 0 || len(r.ParTpsAll) != 2 || len(r.ParStreamTps) != 3 || len(r.ParMeanBatch) != 2 {
			t.Fatalf("speculate %v: parallel results %+v", speculate, r)
		}
		if runtime.GOOS == "linux" && (len(r.ParCPUMs) != 2 || r.ParCPUMs[0] <= 0) {
			t.Fatalf("speculate %v: par_cpu_ms_per_token %v, want one positive value per repetition", speculate, r.ParCPUMs)
		}
		for i, tps := range r.ParStreamTps {
			if tps <= 0 {
				t.Errorf("speculate %v: session %d: %v tokens/s", speculate, i, tps)
			}
		}
		for _, b := range r.ParMeanBatch {
			if b <= 1 || b > 3 {
				t.Errorf("speculate %v: mean batch %v, want in (1, 3]", speculate, b)
			}
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for name, change := range map[string]func(*params){
		"no -model":        func(p *params) { p.path = "" },
		"-threads 0":       func(p *params) { p.threads = 0 },
		"-kv f8":           func(p *params) { p.kv = "f8" },
		"-reps 0":          func(p *params) { p.reps = 0 },
		"-parallel -1":     func(p *params) { p.parallel = -1 },
		"-parallel, -tg 0": func(p *params) { p.parallel, p.tg = 2, 0 },
		"-device tpu":      func(p *params) { p.device = "tpu" },
		"-copy alone":      func(p *params) { p.copyPrompt = true },
		"-copy, -arrive":   func(p *params) { p.copyPrompt, p.parallel, p.tg, p.arrive = true, 2, 8, 100 },
		"-agree 1.5":       func(p *params) { p.agree, p.parallel = 1.5, 1 },
		"-agree alone":     func(p *params) { p.agree = 0.5 },
		"-agree, -copy":    func(p *params) { p.agree, p.parallel, p.copyPrompt = 0.5, 1, true },
	} {
		p := tinyParams()
		change(&p)
		if err := run(context.Background(), io.Discard, slog.New(slog.DiscardHandler), p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestCopySpeculation runs the copy workload (-copy) with and without
// lookup speculation: the same tokens computed, and with speculation most of
// them accepted drafts, in fewer steps.
func TestCopySpeculation(t *testing.T) {
	var steps [2]float64
	for i, speculate := range []bool{false, true} {
		p := tinyParams()
		p.pp, p.tg, p.tgPrompt, p.reps, p.parallel, p.copyPrompt, p.speculate = 0, 48, 24, 1, 1, true, speculate
		r := runTiny(t, p)
		if r.ParTps <= 0 || len(r.ParMeanBatch) != 1 {
			t.Fatalf("speculate %v: parallel results %+v", speculate, r)
		}
		if !speculate && r.ParDraft != 0 {
			t.Errorf("drafts without -speculate: %d", r.ParDraft)
		}
		if speculate && (r.ParDraft == 0 || r.ParAccepted < p.tg/2 || r.ParAccepted > r.ParDraft) {
			t.Errorf("copying a 24-token prompt for 48 tokens: %d of %d drafted tokens accepted, want at least 24", r.ParAccepted, r.ParDraft)
		}
		steps[i] = float64(r.ParSteps)
	}
	if steps[1] >= steps[0]/2 {
		t.Errorf("steps with speculation %v, without %v: want under half", steps[1], steps[0])
	}
}

// TestPassCost checks the k-token pass curve: one entry per size, the
// first the unit.
func TestPassCost(t *testing.T) {
	p := tinyParams()
	p.passCost = true
	r := runTiny(t, p)
	if len(r.PassK) != len(passSizes) || len(r.PassMs) != len(passSizes) || len(r.PassCost) != len(passSizes) {
		t.Fatalf("pass cost for %v: k %v, ms %v, cost %v", passSizes, r.PassK, r.PassMs, r.PassCost)
	}
	if r.PassCost[0] != 1 {
		t.Errorf("pass_cost[0] = %v, want 1", r.PassCost[0])
	}
	for i, ms := range r.PassMs {
		if ms <= 0 {
			t.Errorf("pass of %d tokens took %v ms", r.PassK[i], ms)
		}
	}
	if len(r.PassAllMs) != len(passSizes)-1 {
		t.Fatalf("pass_all_ms %v, want the %d sizes up to 16", r.PassAllMs, len(passSizes)-1)
	}
	for i, ms := range r.PassAllMs {
		if ms <= 0 {
			t.Errorf("pass of %d tokens with every row's logits took %v ms", r.PassK[i], ms)
		}
	}
}

// TestArrival has a 300-token prompt arrive while two streams decode (512
// tokens each: the tiny model must not finish before it arrives): the
// streams' waits before and during it are reported, and the newcomer got
// its first token.
func TestArrival(t *testing.T) {
	p := tinyParams()
	p.pp, p.tg, p.parallel, p.arrive = 0, 512, 2, 300
	r := runTiny(t, p)
	if r.Arrive != 300 || r.ArriveFirstS <= 0 || r.ArriveMaxGapMs <= 0 || r.DecodeGapMs <= 0 {
		t.Errorf("arrival not measured: %+v", r)
	}
}

// TestAgreeDraft runs -agree with the demo model as its own draft: every
// draft accepted at -agree 1; at -agree 0.5 each drafted token is the
// model's with probability 1/2, so of three drafted tokens a step keeps
// 1/2 + 1/4 + 1/8 on average, 29 % of them.
func TestAgreeDraft(t *testing.T) {
	for _, tc := range []struct {
		alpha    float64
		min, max float64 // accepted / drafted
	}{
		{1, 1, 1},
		{0.5, 0.12, 0.5},
	} {
		p := tinyParams()
		p.pp, p.tg, p.tgPrompt, p.reps, p.parallel, p.draftModel, p.draftMax, p.agree = 0, 96, 8, 1, 1, tiny, 3, tc.alpha
		r := runTiny(t, p)
		if r.ParDraft == 0 {
			t.Fatalf("-agree %v: no drafts: %+v", tc.alpha, r)
		}
		rate := float64(r.ParAccepted) / float64(r.ParDraft)
		t.Logf("-agree %v: %d of %d drafted tokens accepted in %d steps", tc.alpha, r.ParAccepted, r.ParDraft, r.ParSteps)
		if rate < tc.min || rate > tc.max {
			t.Errorf("-agree %v: %d of %d drafted tokens accepted (%.2f), want in [%v, %v]", tc.alpha, r.ParAccepted, r.ParDraft, rate, tc.min, tc.max)
		}
	}
}

// TestAgreeSameAnswer checks that -agree's draft changes how many passes an
// answer takes, not the answer: greedy text with the agreeing draft is the
// text without it, and that text is not the model's own (the lifted tokens
// decide it).
func TestAgreeSameAnswer(t *testing.T) {
	ctx := context.Background()
	open := func() *engine.Model {
		m, err := engine.Open(tiny, engine.WithThreads(2), engine.WithContext(256))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	m, d := open(), open()
	answer := func(m *engine.Model, drafter engine.Drafter) (string, *engine.Stats) {
		s := m.NewSession()
		defer s.Close()
		var text strings.Builder
		var st *engine.Stats
		opts := engine.GenerateOptions{MaxTokens: 40, RawPrompt: []int32{5, 6, 7, 8}, Drafter: drafter,
			Constraint: newNoEndOfTurn(m.Format(), m.Backend().Vocab())}
		for ev, err := range s.Generate(ctx, nil, opts) {
			if err != nil {
				t.Fatal(err)
			}
			text.WriteString(ev.Text)
			if ev.Kind == engine.EventDone {
				st = ev.Stats
			}
		}
		return text.String(), st
	}
	own, _ := answer(m, engine.DrafterNone)
	for _, alpha := range []float64{0.3, 0.9} {
		pm, done, err := agreeingModel(m, d, alpha, 1)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := answer(pm, engine.DrafterNone)
		drafted, st := answer(pm, engine.DrafterModel)
		done()
		if drafted != plain {
			t.Errorf("-agree %v: with the draft %q, without %q", alpha, drafted, plain)
		}
		if plain == own {
			t.Errorf("-agree %v: the answer is the model's own, unedited", alpha)
		}
		if st.DraftTokens == 0 || st.AcceptedTokens == 0 {
			t.Errorf("-agree %v: %d of %d drafts accepted", alpha, st.AcceptedTokens, st.DraftTokens)
		}
	}
}
