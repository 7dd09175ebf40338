// Command tools lets SmolLM3 call Go functions from a terminal chat.
//
//	tools -model SmolLM3-3B-Q4_K_M.gguf -prompt "What is 1234 * 5678, and what time is it in Tokyo?"
//
// The model is shown two tools, "multiply" and "current_time", in the
// format of SmolLM3's chat template. When its answer holds calls
// (<tool_call>{"name": …, "arguments": …}</tool_call>), the program runs the
// Go functions, sends their results back as "tool" messages and lets the
// model continue, until it answers without calling anything (or after
// -rounds rounds). A call the model writes badly is answered with an error
// message as its result, so that it can try again.
//
// Without -prompt it reads one question per line from standard input.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/smollm3"
	"github.com/smolgo/smolgo/toolcall"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, log); err != nil && !errors.Is(err, flag.ErrHelp) {
		log.Error("tools failed", "err", err)
		os.Exit(1)
	}
}

// A tool is a Go function the model may call.
type tool struct {
	// spec is the OpenAI-style definition shown to the model.
	spec json.RawMessage
	// call runs the function on the model's arguments (a JSON object).
	call func(args json.RawMessage) (any, error)
}

// demoTools are the functions this program offers; now is the clock.
func demoTools(now func() time.Time) map[string]tool {
	return map[string]tool{
		"multiply": {
			spec: json.RawMessage(`{"type": "function", "function": {"name": "multiply", "description": "Multiply two numbers exactly.",
				"parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}`),
			call: func(args json.RawMessage) (any, error) {
				var in struct{ A, B *float64 }
				if err := json.Unmarshal(args, &in); err != nil || in.A == nil || in.B == nil {
					return nil, errors.New(`multiply needs numbers "a" and "b"`)
				}
				return map[string]float64{"product": *in.A * *in.B}, nil
			},
		},
		"current_time": {
			spec: json.RawMessage(`{"type": "function", "function": {"name": "current_time", "description": "The current time in a time zone.",
				"parameters": {"type": "object", "properties": {"zone": {"type": "string", "description": "IANA time zone, such as Asia/Tokyo"}}, "required": ["zone"]}}}`),
			call: func(args json.RawMessage) (any, error) {
				var in struct{ Zone string }
				if err := json.Unmarshal(args, &in); err != nil {
					return nil, err
				}
				loc, err := time.LoadLocation(in.Zone)
				if err != nil {
					return nil, fmt.Errorf("unknown time zone %q", in.Zone)
				}
				return map[string]string{"time": now().In(loc).Format("2006-01-02 15:04 MST")}, nil
			},
		},
	}
}

// generate produces the model's next answer (its content) to msgs.
type generate func(ctx context.Context, msgs []smollm3.Message) (string, error)

// converse answers question, running tool calls until the model answers
// without one or rounds runs out. It returns the whole conversation.
func converse(ctx context.Context, gen generate, tools map[string]tool, msgs []smollm3.Message, rounds int, log *slog.Logger) ([]smollm3.Message, error) {
	for round := 0; ; round++ {
		answer, err := gen(ctx, msgs)
		if err != nil {
			return msgs, err
		}
		// The template copies an assistant turn's content verbatim, so
		// the calls stay in it as the model wrote them.
		msgs = append(msgs, smollm3.Message{Role: "assistant", Content: answer})
		p := toolcall.NewParser(-1, -1)
		events := append(p.Push(-1, answer), p.Flush()...)
		var results []smollm3.Message
		for _, ev := range events {
			var result any
			switch ev.Kind {
			case toolcall.KindCall:
				t, ok := tools[ev.Call.Name]
				if !ok {
					result = map[string]string{"error": fmt.Sprintf("there is no tool named %q", ev.Call.Name)}
					break
				}
				out, err := t.call(ev.Call.Arguments)
				if err != nil {
					out = map[string]string{"error": err.Error()}
				}
				log.Info("tool call", "name", ev.Call.Name, "arguments", string(ev.Call.Arguments), "result", out)
				result = out
			case toolcall.KindError:
				log.Warn("unreadable tool call", "err", ev.Err)
				result = map[string]string{"error": "could not read your tool call: " + ev.Err.Error()}
			default:
				continue
			}
			b, _ := json.Marshal(result)
			results = append(results, smollm3.Message{Role: "tool", Content: string(b)})
		}
		if len(results) == 0 {
			return msgs, nil
		}
		msgs = append(msgs, results...)
		if round+1 >= rounds {
			return msgs, fmt.Errorf("the model still calls tools after %d rounds", rounds)
		}
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	model := fs.String("model", "", "GGUF model `file` (required)")
	prompt := fs.String("prompt", "", "ask this question and exit (default: read questions from standard input)")
	threads := fs.Int("threads", 0, "threads (0: all cores)")
	maxTokens := fs.Int("n", 1024, "maximum tokens per answer")
	rounds := fs.Int("rounds", 4, "most tool-call rounds per question")
	think := fs.Bool("think", false, "let the model reason before answering")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		return errors.New("-model is required")
	}
	var opts []smollm3.Option
	if *threads > 0 {
		opts = append(opts, smollm3.WithThreads(*threads))
	}
	m, err := smollm3.Load(*model, opts...)
	if err != nil {
		return err
	}
	defer m.Close()
	tools := demoTools(time.Now)
	var specs []json.RawMessage
	for _, name := range []string{"multiply", "current_time"} {
		specs = append(specs, tools[name].spec)
	}
	s := m.NewSession()
	gen := func(ctx context.Context, msgs []smollm3.Message) (string, error) {
		var b strings.Builder
		g := smollm3.GenerateOptions{MaxTokens: *maxTokens, Sampler: sample.SmolLM3Defaults(), Tools: specs,
			Thinking: think, HideReasoning: true}
		for ev, err := range s.Generate(ctx, msgs, g) {
			if err != nil {
				return "", err
			}
			// With Tools set, calls arrive as their own events; their
			// Text is the call as the model writes it, which converse
			// reads back (and the next turn's prompt must show).
			switch ev.Kind {
			case smollm3.EventContent, smollm3.EventToolCall, smollm3.EventToolError:
				b.WriteString(ev.Text)
			}
		}
		return b.String(), nil
	}
	ask := func(q string) error {
		msgs, err := converse(ctx, gen, tools, []smollm3.Message{{Role: "user", Content: q}}, *rounds, log)
		if len(msgs) > 0 && msgs[len(msgs)-1].Role == "assistant" {
			fmt.Fprintln(stdout, strings.TrimSpace(msgs[len(msgs)-1].Content))
		}
		return err
	}
	if *prompt != "" {
		return ask(*prompt)
	}
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		if q := strings.TrimSpace(sc.Text()); q != "" {
			if err := ask(q); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}
