// Command bench measures smolgo's speed on a GGUF model and prints one JSON
// line shaped like llama.cpp's (shared/tools/peer-bench/run.sh), so the two
// can be compared line by line on the same file and machine:
//
//	go run ./examples/bench -model smollm3-3b-Q4_K_M.gguf -threads 2 -pp 512 -tg 64 -reps 3
//
// It loads the model -reps times (load_s is the median), warms up with one
// prefill and one decode step, then measures, -reps times each: prefill of
// -pp random tokens in one forward call from an empty cache (logits of the
// last position only), and decode of -tg tokens one at a time after an
// untimed -tg-prompt token prompt, each step computing its logits. Speeds are
// medians; the *_all arrays hold every repetition. peak_rss_mb is the
// process's maximum resident set (touched pages of the mapped file count).
//
// Decode reads every weight once per token, so its speed is bounded by how
// fast the machine streams memory. After the speed runs bench measures that
// bound on the same file: read_gbps is the median rate at which -threads
// goroutines scan all tensor data of the mapped file (bytes.Count, after the
// RSS reading, so it does not inflate peak_rss_mb), tg_roofline_tps is
// read_gbps divided by the tensor bytes, and tg_roofline_frac is tg_tps over
// it: how close decode comes to the memory bandwidth (-roofline=false skips
// this).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/quant"
	"github.com/smolgo/smolgo/smollm3"
)

type result struct {
	Engine     string    `json:"engine"`
	Model      string    `json:"model"`
	ModelBytes int64     `json:"model_bytes"`
	Threads    int       `json:"threads"`
	Kernel     string    `json:"kernel"`
	KV         string    `json:"kv_type"`
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
	TGRoofline    float64 `json:"tg_roofline_tps,omitempty"`
	TGRooflineFra float64 `json:"tg_roofline_frac,omitempty"`
}

func main() {
	var (
		model    = flag.String("model", "", "GGUF model file (required)")
		threads  = flag.Int("threads", runtime.NumCPU(), "threads per matrix product")
		pp       = flag.Int("pp", 512, "prefill length in tokens (0 skips prefill)")
		tg       = flag.Int("tg", 64, "decode length in tokens (0 skips decode)")
		tgPrompt = flag.Int("tg-prompt", 16, "untimed prompt before decode")
		reps     = flag.Int("reps", 3, "repetitions (medians are reported)")
		kvType   = flag.String("kv", "f16", "KV cache type: f16, f32 or q8_0")
		seed     = flag.Uint64("seed", 1, "seed of the random prompt tokens")
		roofline = flag.Bool("roofline", true, "measure the memory read rate of the weights (decode's bound)")
	)
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(os.Stdout, log, *model, *threads, *pp, *tg, *tgPrompt, *reps, *kvType, *seed, *roofline); err != nil {
		log.Error("bench failed", "err", err)
		os.Exit(1)
	}
}

func run(out io.Writer, log *slog.Logger, path string, threads, pp, tg, tgPrompt, reps int, kvName string, seed uint64, roofline bool) error {
	if path == "" {
		return fmt.Errorf("-model is required")
	}
	if reps < 1 || pp < 0 || tg < 0 || tgPrompt < 1 || threads < 1 {
		return fmt.Errorf("bad flags: -reps %d -pp %d -tg %d -tg-prompt %d -threads %d", reps, pp, tg, tgPrompt, threads)
	}
	kv, err := llama.ParseKVType(kvName)
	if err != nil {
		return fmt.Errorf("-kv: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	need := max(pp, tgPrompt+tg) + 1
	opts := []smollm3.Option{smollm3.WithThreads(threads), smollm3.WithKVType(kv), smollm3.WithContext(need), smollm3.WithLogger(log)}

	// Load -reps times; keep the last model.
	var m *smollm3.Model
	var loads []float64
	for i := range reps {
		if m != nil {
			m.Close()
		}
		t0 := time.Now()
		m, err = smollm3.Load(path, opts...)
		if err != nil {
			return err
		}
		loads = append(loads, time.Since(t0).Seconds())
		log.Info("loaded", "rep", i+1, "seconds", loads[i])
	}
	defer m.Close()
	vocab := m.Config().Vocab

	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	tokens := func(n int) []int32 {
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(rng.IntN(vocab))
		}
		return t
	}
	cache, err := m.NewCache()
	if err != nil {
		return err
	}

	// Warm-up: one prefill and one decode step (pages in the weights).
	log.Info("warming up")
	warm := tokens(min(max(pp, 1), 32))
	if _, err := m.Forward(ctx, cache, warm, 0, false); err != nil {
		return err
	}
	if _, err := m.Forward(ctx, cache, warm[:1], len(warm), false); err != nil {
		return err
	}

	res := result{Engine: "smolgo", Model: filepath.Base(path), ModelBytes: st.Size(), Threads: threads,
		Kernel: quant.Path(), KV: kv.String(), PP: pp, TG: tg, TGPrompt: tgPrompt, Reps: reps,
		LoadFirstS: round(loads[0]), LoadS: round(median(loads)), GoVersion: runtime.Version()}

	for i := range reps {
		if pp > 0 {
			cache.Reset()
			prompt := tokens(pp)
			t0 := time.Now()
			if _, err := m.Forward(ctx, cache, prompt, 0, false); err != nil {
				return err
			}
			tps := float64(pp) / time.Since(t0).Seconds()
			res.PPTpsAll = append(res.PPTpsAll, tps)
			log.Info("prefill", "rep", i+1, "tokens", pp, "tokens_per_s", round(tps))
		}
		if tg > 0 {
			cache.Reset()
			prompt := tokens(tgPrompt)
			logits, err := m.Forward(ctx, cache, prompt, 0, false)
			if err != nil {
				return err
			}
			t0 := time.Now()
			for j := range tg {
				next := argmax(logits)
				if logits, err = m.Forward(ctx, cache, []int32{next}, tgPrompt+j, false); err != nil {
					return err
				}
			}
			tps := float64(tg) / time.Since(t0).Seconds()
			res.TGTpsAll = append(res.TGTpsAll, tps)
			log.Info("decode", "rep", i+1, "tokens", tg, "tokens_per_s", round(tps))
		}
	}
	res.PPTps, res.TGTps = median(res.PPTpsAll), median(res.TGTpsAll)
	res.PeakRSSMB = peakRSSMB()
	for i := range res.PPTpsAll {
		res.PPTpsAll[i] = round(res.PPTpsAll[i])
	}
	for i := range res.TGTpsAll {
		res.TGTpsAll[i] = round(res.TGTpsAll[i])
	}
	res.PPTps, res.TGTps = round(res.PPTps), round(res.TGTps)
	if roofline && tg > 0 {
		gbps, tensorBytes, err := readRate(ctx, path, threads, reps)
		if err != nil {
			return err
		}
		res.ReadGBps = round(gbps)
		res.TGRoofline = round(gbps * 1e9 / float64(tensorBytes))
		res.TGRooflineFra = round(res.TGTps / res.TGRoofline)
		log.Info("roofline", "read_gbps", res.ReadGBps, "tg_roofline_tps", res.TGRoofline, "tg_roofline_frac", res.TGRooflineFra)
	}
	return json.NewEncoder(out).Encode(res)
}

// readRate maps the model file again and scans all its tensor data reps
// times with threads goroutines (each takes its share of every tensor, as
// the matrix products do). It returns the median rate in GB/s and the
// tensor bytes.
func readRate(ctx context.Context, path string, threads, reps int) (float64, int64, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var total int64
	datas := make([][]byte, len(f.Tensors))
	for i := range f.Tensors {
		datas[i] = f.TensorData(&f.Tensors[i])
		total += int64(len(datas[i]))
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
	return median(rates[1:]), total, nil
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
