// Command tools lets a model call Go functions from a terminal chat.
//
//	tools -model SmolLM3-3B-Q4_K_M.gguf -prompt "What is 1234 * 5678, and what time is it in Tokyo?"
//
// The model is shown two tools, "multiply" and "current_time", through its
// chat template (engine.GenerateOptions.Tools). The engine reads the calls
// the model writes out of its answer (for SmolLM3,
// <tool_call>{"name": …, "arguments": …}</tool_call>) and streams each as an
// engine.EventToolCall; the program runs the Go functions, sends their
// results back as "tool" messages and lets the model continue, until it
// answers without calling anything (or after -rounds rounds). A call the
// model writes badly (an engine.EventToolError) is answered with an error
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
	"iter"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/smolgo/smolgo/engine"
	_ "github.com/smolgo/smolgo/models" // every model family, for engine.Open
	"github.com/smolgo/smolgo/sample"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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

// An answer is one assistant turn as the engine streams it: the content,
// and the tool calls in the order the model wrote them.
type answer struct {
	content string
	calls   []call
}

// A call is one tool call of an answer: read (an EventToolCall), or
// unreadable (an EventToolError: text is what the model wrote, err why it
// cannot be read).
type call struct {
	tc   *engine.ToolCall
	text string
	err  error
}

// generate produces the model's next answer to msgs.
type generate func(ctx context.Context, msgs []engine.Message) (answer, error)

// collect reads one generation's events into an answer. The calls come
// from the engine (the model's Format reads them out of the text), so the
// program never parses the model's tool-call syntax itself.
func collect(events iter.Seq2[engine.Event, error]) (answer, error) {
	var a answer
	var content strings.Builder
	for ev, err := range events {
		if err != nil {
			return a, err
		}
		switch ev.Kind {
		case engine.EventContent:
			content.WriteString(ev.Text)
		case engine.EventToolCall:
			a.calls = append(a.calls, call{tc: ev.ToolCall, text: ev.Text})
		case engine.EventToolError:
			a.calls = append(a.calls, call{text: ev.Text, err: ev.Err})
		}
	}
	a.content = content.String()
	return a, nil
}

// converse answers the question in msgs, running tool calls until the model
// answers without one or rounds runs out. It returns the whole
// conversation.
func converse(ctx context.Context, gen generate, tools map[string]tool, msgs []engine.Message, rounds int, log *slog.Logger) ([]engine.Message, error) {
	for round := 0; ; round++ {
		a, err := gen(ctx, msgs)
		if err != nil {
			return msgs, err
		}
		// The template writes the calls back the way the model writes
		// them. A call that could not be read goes back as the text the
		// model wrote, so it sees what the error is about.
		reply := engine.Message{Role: "assistant", Content: a.content}
		var results []engine.Message
		for _, c := range a.calls {
			var result any
			msg := engine.Message{Role: "tool"}
			if c.err != nil {
				log.Warn("unreadable tool call", "text", c.text, "err", c.err)
				reply.Content += c.text
				result = map[string]string{"error": "could not read your tool call: " + c.err.Error()}
			} else {
				reply.ToolCalls = append(reply.ToolCalls, *c.tc)
				msg.ToolCallID, msg.Name = c.tc.ID, c.tc.Name
				result = runTool(tools, *c.tc, log)
			}
			b, _ := json.Marshal(result)
			msg.Content = string(b)
			results = append(results, msg)
		}
		msgs = append(msgs, reply)
		if len(results) == 0 {
			return msgs, nil
		}
		msgs = append(msgs, results...)
		if round+1 >= rounds {
			return msgs, fmt.Errorf("the model still calls tools after %d rounds", rounds)
		}
	}
}

// runTool runs one call and returns its result, or an error object for the
// model.
func runTool(tools map[string]tool, tc engine.ToolCall, log *slog.Logger) any {
	t, ok := tools[tc.Name]
	if !ok {
		return map[string]string{"error": fmt.Sprintf("there is no tool named %q", tc.Name)}
	}
	out, err := t.call(tc.Arguments)
	if err != nil {
		out = map[string]string{"error": err.Error()}
	}
	log.Info("tool call", "name", tc.Name, "arguments", string(tc.Arguments), "result", out)
	return out
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
	m, err := engine.Open(*model, engine.WithThreads(*threads), engine.WithLogger(log))
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
	opts := engine.GenerateOptions{MaxTokens: *maxTokens, Sampler: sample.SmolLM3Defaults(), Tools: specs,
		Thinking: think, HideReasoning: true}
	gen := func(ctx context.Context, msgs []engine.Message) (answer, error) {
		return collect(s.Generate(ctx, msgs, opts))
	}
	ask := func(q string) error {
		msgs, err := converse(ctx, gen, tools, []engine.Message{{Role: "user", Content: q}}, *rounds, log)
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
