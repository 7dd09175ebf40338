// Command bench measures smolgo's speed on a GGUF model and prints one JSON
// line shaped like llama.cpp's (shared/tools/peer-bench/run.sh), so the two
// can be compared line by line on the same file and machine:
//
//	go run ./examples/bench -model smollm3-3b-Q4_K_M.gguf -threads 2 -pp 512 -tg 64 -reps 3
//	go run ./examples/bench -model smollm3-3b-Q4_K_M.gguf -threads 2 -pp 16 -tg 32 -parallel 4
//
// It opens the model with engine.Open (any registered architecture) -reps
// times (load_s is the median), warms up with one prefill and one decode
// step, then measures, -reps times each, on the model's engine.Backend
// (the code that computes, CPU or -device): prefill of -pp random tokens
// from an empty cache in steps of the backend's batch size (logits of the
// last position only), and decode of -tg tokens one at a time after an
// untimed -tg-prompt token prompt, each step computing its logits. Speeds
// are medians; the *_all arrays hold every repetition. peak_rss_mb is the
// process's maximum resident set (touched pages of the mapped file count).
//
// -parallel N then measures N sessions of the model decoding at once
// through the engine, which computes one token of each per forward step
// (continuous batching), like llama.cpp's bench --parallel N: par_tps is
// the total decode rate of the N streams (median over -reps), par_stream_tps
// each stream's own rate, par_mean_batch the sequences per forward step and
// par_cpu_ms_per_token the process's CPU time per token, which a busy
// neighbour on a shared host does not inflate as it does wall time (see
// benchParallel). -speculate turns lookup speculative decoding on in
// those sessions (par_draft_tokens, par_accepted_tokens), as -draft-model F
// does speculative decoding with F as the draft model and -mtp with the
// model's own MTP block (-draft-max tokens a step; run without it beside to
// compare); -copy makes their
// answers repeat their prompts, the workload speculation is for (see
// copyBackend), so that -speculate's speed-up can be measured on the real
// model's passes:
//
//	go run ./examples/bench -model F -pp 0 -tg 64 -parallel 1 -copy -speculate
//
// -agree A does the same for a draft model: both models' real passes, their
// logits edited so that each drafted token is the model's with
// probability A (see agreeBackend), for the speed-up as a function of
// acceptance on random weights; the same run without -draft-model gives
// the same answers undrafted:
//
//	go run ./examples/bench -model T -pp 0 -tg 64 -parallel 1 -agree 0.8 [-draft-model D -draft-max 3]
//
// -arrive P adds a
// P-token prompt arriving while those sessions decode and reports how long
// their tokens wait meanwhile (see benchArrival):
//
//	go run ./examples/bench -model F -threads 2 -pp 0 -tg 64 -parallel 3 -arrive 2000 -pass-cost
//
// -pass-cost prints the time of one forward pass of k tokens for k = 1, 2,
// 4, 8, 16 and the prefill chunk (see benchPassCost): the curve that
// batching and speculation trade on.
//
// Decode reads every weight once per token, so its speed is bounded by how
// fast the machine streams memory. After the speed runs bench measures that
// bound on the same file: read_gbps is the median rate at which -threads
// goroutines scan all tensor data of the mapped file (bytes.Count, after the
// RSS reading, so it does not inflate peak_rss_mb), tg_roofline_tps is
// read_gbps divided by the bytes a token reads, and tg_roofline_frac is
// tg_tps over it: how close decode comes to the memory bandwidth
// (-roofline=false skips this). A token reads every tensor, but of a
// mixture of experts' 3-D expert tensors (*_exps) only the experts it is
// routed to: expert_used_count of expert_count, so those count for that
// share of their bytes (token_bytes_mb says what the roofline divides by).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/smolgo/smolgo/backend"
	_ "github.com/smolgo/smolgo/cuda" // the cuda device, for -device cuda in a build with -tags cuda
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	_ "github.com/smolgo/smolgo/models" // every model family, for engine.Open
	"github.com/smolgo/smolgo/quant"
)

type result struct {
	Engine     string    `json:"engine"`
	Model      string    `json:"model"`
	ModelBytes int64     `json:"model_bytes"`
	Threads    int       `json:"threads"`
	Kernel     string    `json:"kernel"`
	KV         string    `json:"kv_type"`
	Device     string    `json:"device"`
	Layout     string    `json:"layout"` // the weights' layout: interleaved (default) or file (-keep-layout)
	PP         int       `json:"pp"`
	PPTps      float64   `json:"pp_tps"`
	TG         int       `json:"tg"`
	TGPrompt   int       `json:"tg_prompt"`
	TGTps      float64   `json:"tg_tps"`
	LoadS      float64   `json:"load_s"`
	LoadFirstS float64   `json:"load_first_s"`
	PeakRSSMB  float64   `json:"peak_rss_mb"`
	Reps       int       `json:"reps"`
	PPTpsAll   []float64 `json:"pp_tps_all"`
	TGTpsAll   []float64 `json:"tg_tps_all"`
	GoVersion  string    `json:"go_version"`

	ReadGBps      float64 `json:"read_gbps,omitempty"`
	TokenBytesMB  float64 `json:"token_bytes_mb,omitempty"`
	TGRoofline    float64 `json:"tg_roofline_tps,omitempty"`
	TGRooflineFra float64 `json:"tg_roofline_frac,omitempty"`

	// -parallel N (the names of llama.cpp's bench --parallel N, plus
	// smolgo's own details).
	Parallel     int       `json:"parallel,omitempty"`
	ParTps       float64   `json:"par_tps,omitempty"`
	ParTpsAll    []float64 `json:"par_tps_all,omitempty"`
	ParStreamTps []float64 `json:"par_stream_tps,omitempty"`
	ParMeanBatch []float64 `json:"par_mean_batch,omitempty"`
	// ParCPUMs is the process's CPU milliseconds (all threads) per decoded
	// token of the -parallel run, one per repetition: steadier than par_tps
	// where neighbours share the host.
	ParCPUMs []float64 `json:"par_cpu_ms_per_token,omitempty"`
	// ParStepMs is the mean time of one forward step and ParBusy the
	// share of the wall time spent in steps, one per repetition: the rest
	// went to sampling, streaming and gathering the streams between steps.
	ParStepMs   []float64 `json:"par_step_ms,omitempty"`
	ParBusy     []float64 `json:"par_busy,omitempty"`
	ParDraft    int       `json:"par_draft_tokens,omitempty"`
	ParAccepted int       `json:"par_accepted_tokens,omitempty"`
	ParSteps    int64     `json:"par_steps,omitempty"` // forward steps of the timed decodes, all repetitions

	// -pass-cost (see benchPassCost).
	PassK    []int     `json:"pass_k,omitempty"`
	PassMs   []float64 `json:"pass_ms,omitempty"`
	PassCost []float64 `json:"pass_cost,omitempty"`
	// PassAllMs is pass_ms with the logits of every row, for the sizes
	// up to 16.
	PassAllMs []float64 `json:"pass_all_ms,omitempty"`

	// -arrive P with -parallel N (see benchArrival).
	Arrive          int     `json:"arrive,omitempty"`
	ArriveFirstS    float64 `json:"arrive_first_token_s,omitempty"`
	ArriveStepMs    float64 `json:"arrive_step_ms,omitempty"`
	ArriveMeanBatch float64 `json:"arrive_mean_batch,omitempty"`
	ArriveMaxGapMs  float64 `json:"arrive_max_gap_ms,omitempty"`
	DecodeGapMs     float64 `json:"decode_gap_ms,omitempty"`
}

// params are the flags.
type params struct {
	path                            string
	threads, pp, tg, tgPrompt, reps int
	kv, device                      string
	seed                            uint64
	roofline, speculate, passCost   bool
	copyPrompt, keepLayout          bool
	agree                           float64
	parallel, arrive                int
	cpuProfile                      string
	draftModel                      string
	mtp                             bool
	draftMax                        int
}

func main() {
	var p params
	flag.StringVar(&p.path, "model", "", "GGUF model file (required)")
	flag.IntVar(&p.threads, "threads", runtime.NumCPU(), "threads per matrix product")
	flag.IntVar(&p.pp, "pp", 512, "prefill length in tokens (0 skips prefill)")
	flag.IntVar(&p.tg, "tg", 64, "decode length in tokens (0 skips decode)")
	flag.IntVar(&p.tgPrompt, "tg-prompt", 16, "untimed prompt before decode")
	flag.IntVar(&p.reps, "reps", 3, "repetitions (medians are reported)")
	flag.StringVar(&p.kv, "kv", "f16", "KV cache type: f16, f32 or q8_0")
	flag.StringVar(&p.device, "device", "cpu", "where the model runs: cpu, or cuda:N in a build with CUDA")
	flag.Uint64Var(&p.seed, "seed", 1, "seed of the random prompt tokens")
	flag.BoolVar(&p.roofline, "roofline", true, "measure the memory read rate of the weights (decode's bound)")
	flag.IntVar(&p.parallel, "parallel", 0, "also decode -tg tokens in `N` sessions of the model at once (0: off)")
	flag.BoolVar(&p.passCost, "pass-cost", false, "print the time of one pass of k tokens for k = 1, 2, 4, 8, 16 and the prefill chunk")
	flag.IntVar(&p.arrive, "arrive", 0, "with -parallel N: a prompt of `P` tokens arrives while the N streams decode; print how long their tokens wait")
	flag.BoolVar(&p.speculate, "speculate", false, "lookup speculative decoding in the -parallel sessions")
	flag.StringVar(&p.draftModel, "draft-model", "", "GGUF `file` of a model of the same vocabulary that drafts tokens in the -parallel sessions (speculative decoding with a draft model)")
	flag.IntVar(&p.draftMax, "draft-max", engine.DefaultDraftMax, "with -draft-model or -mtp: the most tokens drafted per step")
	flag.BoolVar(&p.mtp, "mtp", false, "draft with the model's own multi-token-prediction block in the -parallel sessions (a Qwen3.5 file with nextn_predict_layers)")
	flag.BoolVar(&p.copyPrompt, "copy", false, "with -parallel N: the answers repeat their prompts (the model's real passes, their logits edited), the workload lookup speculation is for")
	flag.Float64Var(&p.agree, "agree", 0, "with -parallel N (and -draft-model): the draft names the model's token on this share of positions (the models' real passes, their logits edited; see agreeBackend), so that a draft's speed-up can be measured against acceptance; run without -draft-model beside it for the same answers undrafted")
	flag.BoolVar(&p.keepLayout, "keep-layout", false, "keep the weights in the file's layout (no interleaved copy), to compare")
	flag.StringVar(&p.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `file` (go tool pprof)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if p.cpuProfile != "" {
		f, err := os.Create(p.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			log.Error("bench failed", "err", fmt.Errorf("-cpuprofile: %w", err))
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if err := run(ctx, os.Stdout, log, p); err != nil {
		log.Error("bench failed", "err", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, log *slog.Logger, p params) error {
	if p.path == "" {
		return fmt.Errorf("-model is required")
	}
	if p.reps < 1 || p.pp < 0 || p.tg < 0 || p.tgPrompt < 1 || p.threads < 1 || p.parallel < 0 || p.parallel > 1024 {
		return fmt.Errorf("bad flags: -reps %d -pp %d -tg %d -tg-prompt %d -threads %d -parallel %d",
			p.reps, p.pp, p.tg, p.tgPrompt, p.threads, p.parallel)
	}
	if p.parallel > 0 && p.tg == 0 {
		return fmt.Errorf("-parallel %d needs -tg > 0", p.parallel)
	}
	if p.copyPrompt && (p.parallel == 0 || p.arrive > 0) {
		return fmt.Errorf("-copy needs -parallel > 0 and no -arrive")
	}
	if p.arrive < 0 || p.arrive > 0 && (p.parallel == 0 || p.tg < 8) {
		return fmt.Errorf("-arrive %d needs -parallel > 0 and -tg >= 8", p.arrive)
	}
	kv, err := backend.ParseKVType(p.kv)
	if err != nil {
		return fmt.Errorf("-kv: %w", err)
	}

	st, err := os.Stat(p.path)
	if err != nil {
		return err
	}
	need := max(p.pp, p.tgPrompt+p.tg, p.arrive, p.tgPrompt+engine.DefaultPrefillChunk) + 1
	opts := []engine.Option{engine.WithThreads(p.threads), engine.WithKVType(p.kv), engine.WithContext(need),
		engine.WithLogger(log), engine.WithDevice(p.device), engine.WithSpeculation(p.speculate), engine.WithKeepLayout(p.keepLayout),
		engine.WithMaxSequences(max(p.parallel+min(p.arrive, 1), engine.DefaultMaxSequences))}

	if p.agree < 0 || p.agree > 1 {
		return fmt.Errorf("-agree %v: want a share between 0 and 1", p.agree)
	}
	if p.agree > 0 && (p.parallel == 0 || p.copyPrompt || p.speculate || p.mtp) {
		return fmt.Errorf("-agree needs -parallel > 0, and no -copy, -speculate or -mtp")
	}
	var draft *engine.Model
	if p.draftModel != "" {
		if p.parallel == 0 || p.copyPrompt || p.speculate {
			return fmt.Errorf("-draft-model needs -parallel > 0, and no -copy or -speculate")
		}
		d, err := engine.Open(p.draftModel, engine.WithThreads(p.threads), engine.WithKVType(p.kv), engine.WithContext(need),
			engine.WithLogger(log), engine.WithDevice(p.device), engine.WithMaxSequences(max(p.parallel, engine.DefaultMaxSequences)))
		if err != nil {
			return fmt.Errorf("-draft-model: %w", err)
		}
		defer d.Close()
		draft = d
		opts = append(opts, engine.WithDraft(d), engine.WithDraftLimits(p.draftMax, 0, 0))
	}

	if p.mtp {
		if p.parallel == 0 || p.copyPrompt || p.speculate || p.draftModel != "" {
			return fmt.Errorf("-mtp needs -parallel > 0, and no -copy, -speculate or -draft-model")
		}
		opts = append(opts, engine.WithMTP(), engine.WithDraftLimits(p.draftMax, 0, 0))
	}

	// Load -reps times; keep the last model.
	var m *engine.Model
	var loads []float64
	for i := range p.reps {
		if m != nil {
			m.Close()
		}
		t0 := time.Now()
		m, err = engine.Open(p.path, opts...)
		if err != nil {
			return err
		}
		loads = append(loads, time.Since(t0).Seconds())
		log.Info("loaded", "rep", i+1, "seconds", loads[i])
	}
	defer m.Close()
	b := m.Backend()
	vocab := b.Vocab()

	rng := rand.New(rand.NewPCG(p.seed, 0x5eed))
	tokens := func(n int) []int32 {
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(rng.IntN(vocab))
		}
		return t
	}
	// The speed runs step the backend directly, as llama.cpp's bench
	// calls llama_decode: no sessions run meanwhile, so nothing else
	// steps it.
	cache, err := b.NewCache()
	if err != nil {
		return err
	}
	defer cache.Close()
	logits := make([]float32, vocab)

	// Warm-up: one prefill and one decode step (pages in the weights).
	log.Info("warming up")
	warm := tokens(min(max(p.pp, 1), 32))
	if err := forward(ctx, b, cache, warm, logits); err != nil {
		return err
	}
	if err := forward(ctx, b, cache, warm[:1], logits); err != nil {
		return err
	}

	res := result{Engine: "smolgo", Model: filepath.Base(p.path), ModelBytes: st.Size(), Threads: p.threads,
		Kernel: quant.Path(), KV: kv.String(), Device: m.Config().Device, Layout: layoutName(p.keepLayout), PP: p.pp, TG: p.tg, TGPrompt: p.tgPrompt, Reps: p.reps,
		LoadFirstS: round(loads[0]), LoadS: round(median(loads)), GoVersion: runtime.Version()}

	for i := range p.reps {
		if p.pp > 0 {
			if err := cache.Truncate(0); err != nil {
				return err
			}
			prompt := tokens(p.pp)
			t0 := time.Now()
			if err := forward(ctx, b, cache, prompt, logits); err != nil {
				return err
			}
			tps := float64(p.pp) / time.Since(t0).Seconds()
			res.PPTpsAll = append(res.PPTpsAll, tps)
			log.Info("prefill", "rep", i+1, "tokens", p.pp, "tokens_per_s", round(tps))
		}
		if p.tg > 0 {
			if err := cache.Truncate(0); err != nil {
				return err
			}
			if err := forward(ctx, b, cache, tokens(p.tgPrompt), logits); err != nil {
				return err
			}
			t0 := time.Now()
			for range p.tg {
				if err := forward(ctx, b, cache, []int32{argmax(logits)}, logits); err != nil {
					return err
				}
			}
			tps := float64(p.tg) / time.Since(t0).Seconds()
			res.TGTpsAll = append(res.TGTpsAll, tps)
			log.Info("decode", "rep", i+1, "tokens", p.tg, "tokens_per_s", round(tps))
		}
	}
	if p.passCost {
		if err := benchPassCost(ctx, log, b, cache, p, tokens, logits, &res); err != nil {
			return err
		}
	}
	if p.parallel > 0 {
		pm := m
		if p.copyPrompt {
			// A second engine over the same weights, whose backend
			// makes the answers copy their prompts (copyBackend).
			if pm, err = engine.New(newCopyBackend(b, p.tgPrompt), m.Format(), m.Config()); err != nil {
				return err
			}
			defer pm.Close()
		}
		if p.agree > 0 {
			// Engines over the same weights whose backends make the
			// draft agree with the model on a share p.agree of the
			// positions (agreeBackend).
			var done func()
			if pm, done, err = agreeingModel(m, draft, p.agree, p.seed); err != nil {
				return err
			}
			defer done()
		}
		if err := benchParallel(ctx, log, pm, p, tokens, &res); err != nil {
			return err
		}
	}
	if p.arrive > 0 {
		if err := benchArrival(ctx, log, m, p, tokens, &res); err != nil {
			return err
		}
	}
	res.PPTps, res.TGTps = median(res.PPTpsAll), median(res.TGTpsAll)
	res.PeakRSSMB = peakRSSMB()
	roundAll(res.PPTpsAll)
	roundAll(res.TGTpsAll)
	res.PPTps, res.TGTps = round(res.PPTps), round(res.TGTps)
	if p.roofline && p.tg > 0 {
		gbps, tensorBytes, err := readRate(ctx, p.path, p.threads, p.reps)
		if err != nil {
			return err
		}
		res.ReadGBps = round(gbps)
		res.TokenBytesMB = round(tensorBytes / 1e6)
		res.TGRoofline = round(gbps * 1e9 / tensorBytes)
		res.TGRooflineFra = round(res.TGTps / res.TGRoofline)
		log.Info("roofline", "read_gbps", res.ReadGBps, "tg_roofline_tps", res.TGRoofline, "tg_roofline_frac", res.TGRooflineFra)
	}
	return json.NewEncoder(out).Encode(res)
}

// forward runs tokens through the backend after what cache holds, in steps
// of at most the backend's batch size (llama.cpp's n_ubatch), and writes
// the last token's logits.
func forward(ctx context.Context, b engine.Backend, cache engine.Cache, tokens []int32, logits []float32) error {
	bs := b.BatchSize()
	for i := 0; i < len(tokens); i += bs {
		seq := engine.Seq{Cache: cache, Tokens: tokens[i:min(i+bs, len(tokens))]}
		if i+bs >= len(tokens) {
			seq.Logits = logits
		}
		if err := b.Step(ctx, []engine.Seq{seq}); err != nil {
			return err
		}
	}
	return nil
}

// benchParallel measures p.parallel sessions of m decoding at once, as a
// server with that many busy conversations does (llama.cpp's bench
// --parallel N): the engine computes one token of every session per forward
// step. Each repetition gives every session its own random prompt of
// -tg-prompt tokens, computes the prompts (untimed, all sessions at once),
// then times the sessions decoding -tg tokens each from there: the first
// token of each comes from the prompt's logits, which the session kept, and
// each of the -tg steps after it computes one token per session. par_tps is
// all sessions' computed tokens over the time until the last one finished,
// par_stream_tps each session's own rate (its tokens over its own time).
//
// Generation is greedy. Without -speculate a constraint keeps the
// end-of-turn tokens out, so that every session decodes all -tg tokens, as
// llama.cpp's streams do (constrained generations do not speculate; with
// -speculate a session that ends its turn early stops, with a warning).
func benchParallel(ctx context.Context, log *slog.Logger, m *engine.Model, p params, tokens func(int) []int32, res *result) error {
	n := p.parallel
	var keepGoing engine.Constraint
	if !p.speculate && !p.copyPrompt { // a copied prompt has no end of turn
		keepGoing = newNoEndOfTurn(m.Format(), m.Backend().Vocab())
	}
	sessions := make([]*engine.Session, n)
	for i := range sessions {
		sessions[i] = m.NewSession()
		defer sessions[i].Close()
	}
	streamTps := make([][]float64, n)
	for rep := range p.reps {
		prompts := make([][]int32, n)
		for i := range prompts {
			prompts[i] = tokens(p.tgPrompt)
		}
		// The prompts, with one token from each (not computed).
		if _, err := generateAll(ctx, sessions, prompts, engine.GenerateOptions{MaxTokens: 1, Constraint: keepGoing}); err != nil {
			return err
		}
		before := m.Occupancy()
		cpu0 := cpuSeconds()
		t0 := time.Now()
		runs, err := generateAll(ctx, sessions, prompts, engine.GenerateOptions{MaxTokens: p.tg + 1, Constraint: keepGoing})
		if err != nil {
			return err
		}
		var total int
		var last time.Duration
		for i, r := range runs {
			if r.stats.CachedTokens != len(prompts[i]) {
				return fmt.Errorf("parallel session %d: %d of %d prompt tokens cached after the untimed prompt run", i, r.stats.CachedTokens, len(prompts[i]))
			}
			computed := r.stats.GeneratedTokens - 1 // the first came from the prompt's logits
			if computed < p.tg {
				log.Warn("parallel session ended early", "session", i, "tokens", computed, "of", p.tg, "stop", r.stats.StopReason)
			}
			d := r.end.Sub(t0)
			streamTps[i] = append(streamTps[i], float64(computed)/d.Seconds())
			total += computed
			last = max(last, d)
			res.ParDraft += r.stats.DraftTokens
			res.ParAccepted += r.stats.AcceptedTokens
		}
		after := m.Occupancy()
		if cpu := cpuSeconds() - cpu0; cpu > 0 && total > 0 {
			res.ParCPUMs = append(res.ParCPUMs, round(1000*cpu/float64(total)))
		}
		tps := float64(total) / last.Seconds()
		res.ParTpsAll = append(res.ParTpsAll, tps)
		batch := float64(after.StepSequences-before.StepSequences) / float64(max(after.Steps-before.Steps, 1))
		res.ParSteps += after.Steps - before.Steps
		res.ParMeanBatch = append(res.ParMeanBatch, round(batch))
		if steps := after.Steps - before.Steps; steps > 0 {
			busy := after.StepTime - before.StepTime
			res.ParStepMs = append(res.ParStepMs, round(float64(busy.Microseconds())/1000/float64(steps)))
			res.ParBusy = append(res.ParBusy, round(busy.Seconds()/last.Seconds()))
		}
		log.Info("parallel decode", "rep", rep+1, "sessions", n, "tokens", total, "tokens_per_s", round(tps), "mean_batch", round(batch))
	}
	res.Parallel = n
	res.ParTps = round(median(res.ParTpsAll))
	roundAll(res.ParTpsAll)
	for _, tps := range streamTps {
		res.ParStreamTps = append(res.ParStreamTps, round(median(tps)))
	}
	return nil
}

// finished is how one session's generation in generateAll ended.
type finished struct {
	stats engine.Stats
	end   time.Time
}

// generateAll runs one raw-prompt generation in each session at once and
// waits for all of them.
func generateAll(ctx context.Context, sessions []*engine.Session, prompts [][]int32, opts engine.GenerateOptions) ([]finished, error) {
	return generateAllTimed(ctx, sessions, prompts, opts, nil)
}

// generateAllTimed is generateAll that also calls onText(i, ev, now), when
// onText is not nil, from session i's goroutine at each piece of its text.
func generateAllTimed(ctx context.Context, sessions []*engine.Session, prompts [][]int32, opts engine.GenerateOptions, onText func(int, engine.Event, time.Time)) ([]finished, error) {
	runs := make([]finished, len(sessions))
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	start := make(chan struct{}) // all start together, as far as goroutines can
	for i, s := range sessions {
		o := opts
		o.RawPrompt = prompts[i]
		wg.Go(func() {
			<-start
			for ev, err := range s.Generate(ctx, nil, o) {
				if err != nil {
					errs[i] = fmt.Errorf("parallel session %d: %w", i, err)
					return
				}
				switch ev.Kind {
				case engine.EventContent, engine.EventReasoning:
					if onText != nil {
						onText(i, ev, time.Now())
					}
				case engine.EventDone:
					runs[i] = finished{stats: *ev.Stats, end: time.Now()}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return runs, nil
}

// noEndOfTurn is a constraint that allows every token but those that end
// the model's turn. It keeps no state, so generations may share it.
type noEndOfTurn struct{ allowed []bool }

func newNoEndOfTurn(f engine.Format, vocab int) noEndOfTurn {
	allowed := make([]bool, vocab)
	for id := range allowed {
		allowed[id] = !f.EndOfTurn(int32(id))
	}
	return noEndOfTurn{allowed}
}

func (c noEndOfTurn) Allow(mask []bool)     { copy(mask, c.allowed) }
func (c noEndOfTurn) Accept(id int32) error { return nil }
func (c noEndOfTurn) Done() bool            { return false }

// Mark lets a draft model draft under the constraint (engine.Marker),
// which has no state to go back to.
func (c noEndOfTurn) Mark() (back func()) { return func() {} }

// readRate maps the model file again and scans all its tensor data reps
// times with threads goroutines (each takes its share of every tensor, as
// the matrix products do). It returns the median rate in GB/s and the
// tensor bytes.
func readRate(ctx context.Context, path string, threads, reps int) (float64, float64, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var total int64
	var perToken float64 // the bytes one decode step reads
	share := expertShare(f)
	_, untied := f.Tensor("output.weight")
	datas := make([][]byte, len(f.Tensors))
	for i := range f.Tensors {
		datas[i] = f.TensorData(&f.Tensors[i])
		total += int64(len(datas[i]))
		switch name := f.Tensors[i].Name; {
		case strings.Contains(name, "_exps."):
			perToken += float64(len(datas[i])) * share
		case name == "token_embd.weight" && untied:
			// One row per token: the embedding lookup.
		default:
			perToken += float64(len(datas[i]))
		}
	}
	var rates []float64
	for range reps + 1 { // the first pass pages the second mapping in
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		t0 := time.Now()
		var wg sync.WaitGroup
		for th := range threads {
			wg.Go(func() {
				for _, d := range datas {
					n := len(d)
					bytes.Count(d[n*th/threads:n*(th+1)/threads], []byte{0x5a})
				}
			})
		}
		wg.Wait()
		rates = append(rates, float64(total)/time.Since(t0).Seconds()/1e9)
	}
	return median(rates[1:]), perToken, nil
}

// expertShare is the share of a mixture of experts' expert tensors one
// token reads, expert_used_count / expert_count (1 for a dense file).
func expertShare(f *gguf.File) float64 {
	arch, err := f.Architecture()
	if err != nil {
		return 1
	}
	n, err1 := f.Uint32(arch + ".expert_count")
	used, err2 := f.Uint32(arch + ".expert_used_count")
	if err1 != nil || err2 != nil || n == 0 || used > n {
		return 1
	}
	return float64(used) / float64(n)
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func round(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func roundAll(x []float64) {
	for i := range x {
		x[i] = round(x[i])
	}
}

// layoutName names the weights' layout in the JSON line: interleaved when
// the CPU's kernels interleave q4_K (the quantized models' main type) and
// -keep-layout is off.
func layoutName(keep bool) string {
	if keep || quant.InterleaveRows(gguf.TypeQ4_K) == 0 {
		return "file"
	}
	return "interleaved"
}
