// Command chat talks with a model in the terminal: any file of a family
// that package models registers (SmolLM3, Llama 3.x and SmolLM2, Qwen2.5,
// Qwen3, Gemma 3, Granite, Phi-4-mini; go doc ./models), opened with
// engine.Open.
//
// Interactive:
//
//	chat -model SmolLM3-3B-Q4_K_M.gguf
//
// Type a message and press Enter; the answer streams as it is generated, the
// model's reasoning dimmed (or hidden with -hide-reasoning), followed by the
// token counts and speeds. Commands: /think and /no_think switch the
// reasoning mode, /reset starts a new conversation, /quit exits. Ctrl-C
// stops the current answer; a second Ctrl-C (or one at the prompt) exits.
//
// For scripts, -prompt asks one question, prints the answer (reasoning goes
// to standard error) and exits:
//
//	chat -model FILE -prompt "Why is the sky blue?" -n 64 -temp 0 -think=false
//
// Sampling defaults to SmolLM3's recommendation (temperature 0.6, top-p
// 0.95) whatever the model; -temp 0 is greedy. -speculate turns on lookup speculative decoding
// (the same answer, sometimes faster when it repeats the conversation), and
// -device picks where the model runs ("cpu", or "cuda:N" in a build with
// CUDA). SIGTERM ends the program like a Ctrl-C at the prompt.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/smolgo/smolgo/cuda" // the cuda device, for -device cuda in a build with -tags cuda
	"github.com/smolgo/smolgo/engine"
	_ "github.com/smolgo/smolgo/models" // every model family, for engine.Open
	"github.com/smolgo/smolgo/sample"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// Ctrl-C stops an answer (see watchInterrupts); SIGTERM ends everything.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, interrupts, log)
	if err != nil && !errors.Is(err, errQuit) && !errors.Is(err, context.Canceled) && !errors.Is(err, flag.ErrHelp) {
		log.Error("chat failed", "err", err)
		os.Exit(1)
	}
}

// errQuit ends the program without an error message.
var errQuit = errors.New("quit")

type config struct {
	model, prompt, system string
	n, ctx, threads       int
	think, hideReasoning  bool
	speculate             bool
	color, device         string
	sampler               sample.Config
}

// decimal widens x to the float64 with the same shortest decimal form, so
// that -h shows a default of 0.6 and not 0.6000000238418579.
func decimal(x float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return v
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	defaults := sample.SmolLM3Defaults()
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.model, "model", "", "GGUF model `file` (required)")
	fs.StringVar(&c.prompt, "prompt", "", "ask this one question, print the answer and exit")
	fs.StringVar(&c.system, "system", "", "system message")
	fs.IntVar(&c.n, "n", 0, "maximum tokens per answer, reasoning included (0: until the model stops)")
	fs.IntVar(&c.ctx, "ctx", 8192, "context length in tokens (0: the model's own)")
	fs.IntVar(&c.threads, "threads", 0, "threads (0: all cores)")
	fs.StringVar(&c.device, "device", "cpu", "where the model runs: cpu, or cuda:N in a build with CUDA")
	fs.BoolVar(&c.speculate, "speculate", false, "lookup speculative decoding (drafts copied from the conversation; same output)")
	fs.BoolVar(&c.think, "think", true, "let the model reason before answering")
	fs.BoolVar(&c.hideReasoning, "hide-reasoning", false, "do not show the reasoning")
	fs.StringVar(&c.color, "color", "auto", "dim the reasoning and stats: auto, always or never")
	temp := fs.Float64("temp", decimal(defaults.Temperature), "temperature (0: greedy)")
	topP := fs.Float64("top-p", decimal(defaults.TopP), "top-p (1: off)")
	topK := fs.Int("top-k", 0, "top-k (0: off)")
	minP := fs.Float64("min-p", 0, "min-p (0: off)")
	repeat := fs.Float64("repeat-penalty", 1, "repetition penalty (1: off)")
	seed := fs.Uint64("seed", 0, "random seed (0: random)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (flags come before it?)", fs.Arg(0))
	}
	if c.model == "" {
		return c, errors.New("-model is required")
	}
	if c.color != "auto" && c.color != "always" && c.color != "never" {
		return c, fmt.Errorf("-color %q: want auto, always or never", c.color)
	}
	c.sampler = sample.Config{Temperature: float32(*temp), TopP: float32(*topP), TopK: *topK,
		MinP: float32(*minP), RepeatPenalty: float32(*repeat), Seed: *seed}
	if err := c.sampler.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// run is the program; main wires it to the process. interrupts delivers
// Ctrl-C.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, interrupts <-chan os.Signal, log *slog.Logger) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	m, err := engine.Open(c.model, engine.WithLogger(log), engine.WithThreads(c.threads), engine.WithContext(c.ctx),
		engine.WithDevice(c.device), engine.WithSpeculation(c.speculate))
	if err != nil {
		return err
	}
	defer m.Close()
	log.Info("model loaded", "file", c.model, "seconds", time.Since(start).Seconds())

	ch := &chat{
		cfg: c, session: m.NewSession(), stdout: stdout, stderr: stderr,
		dim: c.color == "always" || c.color == "auto" && isTerminal(stdout),
	}
	if c.prompt != "" {
		return ch.answerOnce(ctx, interrupts)
	}
	return ch.interactive(ctx, stdin, interrupts)
}

type chat struct {
	cfg     config
	session *engine.Session
	history []engine.Message
	stdout  io.Writer
	stderr  io.Writer
	dim     bool

	mu     sync.Mutex
	cancel context.CancelFunc // of the answer being generated, nil between answers
}

func (c *chat) options(interactive bool) engine.GenerateOptions {
	think := c.cfg.think
	return engine.GenerateOptions{
		MaxTokens: c.cfg.n, Sampler: c.cfg.sampler, Thinking: &think,
		HideReasoning: c.cfg.hideReasoning, DropOldest: interactive,
		PrefillProgress: c.progress(),
	}
}

// progress shows how far a long prompt's prefill is, on a terminal.
func (c *chat) progress() func(done, total int) {
	if !isTerminal(c.stderr) {
		return nil
	}
	shown := false
	return func(done, total int) {
		switch {
		case done < total:
			fmt.Fprintf(c.stderr, "\r[reading the prompt: %d of %d tokens]", done, total)
			shown = true
		case shown:
			fmt.Fprint(c.stderr, "\r\x1b[K")
		}
	}
}

func (c *chat) messages(user string) []engine.Message {
	var msgs []engine.Message
	if c.cfg.system != "" {
		msgs = append(msgs, engine.Message{Role: "system", Content: c.cfg.system})
	}
	msgs = append(msgs, c.history...)
	return append(msgs, engine.Message{Role: "user", Content: user})
}

// answerOnce is the -prompt mode: the answer on stdout, the rest on stderr.
func (c *chat) answerOnce(ctx context.Context, interrupts <-chan os.Signal) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-interrupts:
			cancel()
		case <-ctx.Done():
		}
	}()
	answer, stats, err := c.generate(ctx, c.messages(c.cfg.prompt), c.options(false), c.stderr)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(answer, "\n") {
		fmt.Fprintln(c.stdout)
	}
	c.printStats(c.stderr, stats)
	return nil
}

// interactive reads messages and commands until end of input or /quit.
func (c *chat) interactive(ctx context.Context, stdin io.Reader, interrupts <-chan os.Signal) error {
	quit := make(chan struct{})
	go c.watchInterrupts(interrupts, quit)
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	fmt.Fprintln(c.stdout, "Type a message. Commands: /think /no_think /reset /quit. Ctrl-C stops an answer.")
	for {
		fmt.Fprint(c.stdout, "> ")
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
			if !ok {
				fmt.Fprintln(c.stdout)
				return nil
			}
		case <-quit:
			fmt.Fprintln(c.stdout)
			return errQuit
		case <-ctx.Done():
			fmt.Fprintln(c.stdout)
			return ctx.Err()
		}
		line = strings.TrimSpace(line)
		switch line {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		case "/think", "/no_think":
			c.cfg.think = line == "/think"
			fmt.Fprintf(c.stdout, "reasoning %s\n", map[bool]string{true: "on", false: "off"}[c.cfg.think])
			continue
		case "/reset":
			c.history = nil
			c.session.Reset()
			fmt.Fprintln(c.stdout, "new conversation")
			continue
		}
		if strings.HasPrefix(line, "/") {
			fmt.Fprintf(c.stdout, "unknown command %s (try /think, /no_think, /reset, /quit)\n", line)
			continue
		}
		answerCtx, cancel := context.WithCancel(ctx)
		c.mu.Lock()
		c.cancel = cancel
		c.mu.Unlock()
		msgs := c.messages(line)
		answer, stats, err := c.generate(answerCtx, msgs, c.options(true), c.stdout)
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
		cancel()
		select {
		case <-quit:
			fmt.Fprintln(c.stdout)
			return errQuit
		case <-ctx.Done():
			fmt.Fprintln(c.stdout)
			return ctx.Err()
		default:
		}
		fmt.Fprintln(c.stdout)
		if err != nil {
			fmt.Fprintf(c.stdout, "error: %v\n", err)
			continue
		}
		c.printStats(c.stdout, stats)
		c.history = append(msgs[len(msgs)-len(c.history)-1:], engine.Message{Role: "assistant", Content: answer})
	}
}

// watchInterrupts turns Ctrl-C into cancelling the current answer. A Ctrl-C
// with no answer running (at the prompt, or a second one while the answer
// stops) quits.
func (c *chat) watchInterrupts(interrupts <-chan os.Signal, quit chan<- struct{}) {
	for range interrupts {
		c.mu.Lock()
		cancel := c.cancel
		c.cancel = nil
		c.mu.Unlock()
		if cancel == nil {
			close(quit)
			return
		}
		cancel()
	}
}

// generate streams one answer: reasoning (dimmed) to reasoningOut, content to
// stdout. It returns the content.
func (c *chat) generate(ctx context.Context, msgs []engine.Message, opts engine.GenerateOptions, reasoningOut io.Writer) (string, *engine.Stats, error) {
	var answer strings.Builder
	var stats *engine.Stats
	inReasoning := false
	for ev, err := range c.session.Generate(ctx, msgs, opts) {
		if err != nil {
			return answer.String(), nil, err
		}
		switch ev.Kind {
		case engine.EventReasoning:
			if !inReasoning {
				inReasoning = true
				c.style(reasoningOut, true)
			}
			fmt.Fprint(reasoningOut, ev.Text)
		case engine.EventContent:
			if inReasoning {
				inReasoning = false
				c.style(reasoningOut, false)
				fmt.Fprint(reasoningOut, "\n\n")
			}
			answer.WriteString(ev.Text)
			fmt.Fprint(c.stdout, ev.Text)
		case engine.EventDone:
			stats = ev.Stats
		}
	}
	if inReasoning {
		c.style(reasoningOut, false)
	}
	return answer.String(), stats, nil
}

func (c *chat) style(w io.Writer, dim bool) {
	if !c.dim {
		return
	}
	if dim {
		fmt.Fprint(w, "\x1b[2m")
	} else {
		fmt.Fprint(w, "\x1b[0m")
	}
}

func (c *chat) printStats(w io.Writer, st *engine.Stats) {
	if st == nil {
		return
	}
	c.style(w, true)
	fmt.Fprintf(w, "[%d prompt tokens (%d cached), %.1f tokens/s prefill; %d generated, %.1f tokens/s; %s]",
		st.PromptTokens, st.CachedTokens, st.PrefillTokensPerSec, st.GeneratedTokens, st.DecodeTokensPerSec, st.StopReason)
	if st.DraftTokens > 0 {
		fmt.Fprintf(w, " [speculation: %d of %d drafted tokens accepted]", st.AcceptedTokens, st.DraftTokens)
	}
	c.style(w, false)
	fmt.Fprintln(w)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
