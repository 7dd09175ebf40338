// Package servertest provides a deterministic fake server.Engine for tests,
// load tests and UI development. It is the real engine (package engine's
// generate loop, scheduler and prompt reuse) over the fake model of package
// engine/enginetest, whose answers are scripted: the last user message
// echoed back word by word, with reasoning first (Echo), or whatever Reply
// says. So everything the engine does (context limit and dropping the
// oldest messages, max tokens, stop strings, thinking on or off, tool calls
// read out of the answer, constraints and their budgets, logit bias,
// cancellation, prefix caching between turns) happens as it does with a
// model.
//
// It also counts what happened (calls, cancellations, concurrent sessions),
// so tests can assert that the server really cancelled a generation or never
// ran two generations on one session at once.
package servertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/engine/enginetest"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/server"
)

// Engine is a fake server.Engine. The zero value is usable: it echoes the
// last user message with a 4096-token context and no delays. Set its
// fields before the first use.
type Engine struct {
	Name         string        // model id; default "fake-smollm3"
	Context      int           // context window in tokens; default 4096
	TokenDelay   time.Duration // pause in every forward step that decodes
	PrefillDelay time.Duration // pause in every forward step that computes a prompt
	// BytesPerToken is the memory a session reports per cached token;
	// default 1024.
	BytesPerToken int64
	// CancelAsError makes a cancelled generation end with an error wrapping
	// ctx.Err() instead of an EventDone with StopReason "cancelled".
	CancelAsError bool
	// Reply computes the answer from the conversation; nil means Echo.
	Reply func(msgs []engine.Message) (reasoning, content string)
	// Sequences bounds the generations the engine computes at once
	// (engine.Config.MaxSequences); default 64.
	Sequences int

	once  sync.Once
	model *engine.Model
	b     *enginetest.Backend
	f     *enginetest.Format
	err   error

	calls, cancelled, active, maxActive, overlaps, sessions atomic.Int64
}

// Counters is a snapshot of what an Engine has seen.
type Counters struct {
	Calls     int64 // Generate calls
	Cancelled int64 // generations that observed a cancelled context
	Active    int64 // generations running now
	MaxActive int64 // most generations that ran at once
	Overlaps  int64 // times one session was used by two generations at once (a server bug)
	Sessions  int64 // sessions created
}

// Counters returns a snapshot of the engine's counters.
func (e *Engine) Counters() Counters {
	return Counters{
		Calls: e.calls.Load(), Cancelled: e.cancelled.Load(), Active: e.active.Load(),
		MaxActive: e.maxActive.Load(), Overlaps: e.overlaps.Load(), Sessions: e.sessions.Load(),
	}
}

// init makes the engine's model on first use.
func (e *Engine) init() {
	e.once.Do(func() {
		seqs := e.Sequences
		if seqs <= 0 {
			seqs = 64
		}
		e.b = enginetest.NewBackend(enginetest.Options{Context: e.ContextLength(), StepDelay: e.TokenDelay,
			PrefillDelay: e.PrefillDelay, BytesPerToken: e.BytesPerToken, Vocab: 1 << 14, Answer: e.answerPrompt})
		e.f = &enginetest.Format{Tok: e.b.Tok}
		var cfg engine.Config
		if cfg, e.err = engine.NewConfig(engine.WithContext(e.ContextLength()), engine.WithMaxSequences(seqs)); e.err == nil {
			e.model, e.err = engine.New(e.b, e.f, cfg)
		}
	})
}

// Model is the engine.Model underneath.
func (e *Engine) Model() *engine.Model {
	e.init()
	return e.model
}

// Close stops the engine's model (its scheduler goroutine).
func (e *Engine) Close() error {
	e.init()
	if e.model == nil {
		return e.err
	}
	return e.model.Close()
}

// ModelName implements server.Engine.
func (e *Engine) ModelName() string {
	if e.Name == "" {
		return "fake-smollm3"
	}
	return e.Name
}

// ContextLength implements server.Engine.
func (e *Engine) ContextLength() int {
	if e.Context <= 0 {
		return 4096
	}
	return e.Context
}

// NewSession implements server.Engine.
func (e *Engine) NewSession() server.Session {
	e.init()
	e.sessions.Add(1)
	s := &Session{e: e}
	if e.model != nil {
		s.s = e.model.NewSession()
	}
	return s
}

// NewConstraint implements server.Engine: a real grammar constraint over
// the fake vocabulary, as it stands when the generation starts (the fake's
// vocabulary grows with the words it sees, and the answer's words are
// numbered when its generation starts, after the server made the
// constraint).
func (e *Engine) NewConstraint(g *grammar.Grammar) (engine.Constraint, error) {
	e.init()
	if e.err != nil {
		return nil, e.err
	}
	return &lazyConstraint{e: e, g: g}, nil
}

// lazyConstraint builds its grammar.Constraint on first use.
type lazyConstraint struct {
	e   *Engine
	g   *grammar.Grammar
	c   *grammar.Constraint
	ctx context.Context
}

func (l *lazyConstraint) get() *grammar.Constraint {
	if l.c == nil {
		tok := l.e.b.Tok
		text := make([][]byte, tok.Len())
		for id := range text {
			if tok.Normal(int32(id)) {
				text[id] = tok.TokenBytes(int32(id))
			}
		}
		v, err := grammar.NewVocab(text, tok.EndOfGeneration())
		if err != nil {
			panic(err) // the fake's vocabulary is always valid
		}
		l.c = l.g.NewConstraint(v)
		if l.ctx != nil {
			l.c.SetContext(l.ctx)
		}
	}
	return l.c
}

func (l *lazyConstraint) Allow(mask []bool)          { l.get().Allow(mask) }
func (l *lazyConstraint) Accept(id int32) error      { return l.get().Accept(id) }
func (l *lazyConstraint) Done() bool                 { return l.get().Done() }
func (l *lazyConstraint) Limit(n int)                { l.get().Limit(n) }
func (l *lazyConstraint) Apply(logits []float32) int { return l.get().Apply(logits) }
func (l *lazyConstraint) MinBudget() int             { return l.get().MinBudget() }
func (l *lazyConstraint) Err() error                 { return l.get().Err() }
func (l *lazyConstraint) SetContext(ctx context.Context) {
	l.ctx = ctx
	if l.c != nil {
		l.c.SetContext(ctx)
	}
}

// Tokenize implements server.Tokenizing: the fake vocabulary's pieces (see
// enginetest.Tokenizer).
func (e *Engine) Tokenize(text string, special bool) ([]int32, error) {
	e.init()
	return e.b.Tok.Encode(text, special), nil
}

// Detokenize implements server.Tokenizing; ids the engine never gave out
// are an error.
func (e *Engine) Detokenize(ids []int32) (string, error) {
	e.init()
	return e.b.Tok.Decode(ids, false)
}

// TokenPiece implements server.Tokenizing.
func (e *Engine) TokenPiece(id int32) (string, error) {
	e.init()
	p := e.b.Tok.TokenBytes(id)
	if p == nil {
		return "", fmt.Errorf("fake engine: token %d is not in the vocabulary", id)
	}
	return string(p), nil
}

// PromptTokens implements server.Templating.
func (e *Engine) PromptTokens(msgs []engine.Message, opts engine.PromptOptions) ([]int32, error) {
	e.init()
	return e.f.Prompt(msgs, opts)
}

// answer is the text the model writes for msgs: Reply's (or Echo's)
// reasoning in a think block, unless thinking is off, then the content.
func (e *Engine) answer(msgs []engine.Message, thinking bool) string {
	reply := e.Reply
	if reply == nil {
		reply = Echo
	}
	reasoning, content := reply(msgs)
	if !thinking {
		return content
	}
	return "<think>\n" + reasoning + "\n</think>\n" + content
}

// answerPrompt answers a prompt the sessions did not announce (the engine
// dropped old messages to fit the context): from its messages as rendered.
func (e *Engine) answerPrompt(prompt string) string {
	return e.answer(enginetest.ParseChatML(prompt), !enginetest.ThinkingOff(prompt))
}

// Echo is the default reply: a short reasoning and the last user message
// echoed back. A message "count N" is answered with the numbers 1..N, which
// makes long, predictable streams for stop-button and load tests, and
// "think N" reasons in N steps before a short answer.
//
// Tool calling: a message "call NAME {json}" (or with such a line among
// others) is answered with a call of the tool NAME with those arguments, written the way SmolLM3 writes it
// (<tool_call>{"name": NAME, "arguments": {json}}</tool_call>); the JSON is
// passed through as given, so broken JSON makes a malformed call. A
// conversation that ends with a "tool" message (a tool's result), or with a
// user message of notes right after one, is answered with "The tool
// returned: " and that result, unless a user message has a line
// "answer TEXT": then with TEXT (an agent's final answer in its format, say
// JSON). A message "answer TEXT" alone is answered with TEXT.
func Echo(msgs []engine.Message) (reasoning, content string) {
	n := len(msgs)
	if n > 1 && msgs[n-1].Role == "user" && msgs[n-2].Role == "tool" && callLine(msgs[n-1].Content) == "" {
		n-- // notes after a tool's result (agents add their environment there)
	}
	if n > 0 && msgs[n-1].Role == "tool" {
		for i := n - 1; i >= 0; i-- {
			if a := lineAfter(msgs[i].Content, "answer "); msgs[i].Role == "user" && a != "" {
				return "A tool answered. I will give the answer I was asked for.", a
			}
		}
		return "A tool answered. I will report its result.", "The tool returned: " + msgs[n-1].Content
	}
	last := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			last = msgs[i].Content
			break
		}
	}
	if c := callLine(last); c != "" {
		last = c // a call asked for among other text (an agent's notes)
	} else if a := lineAfter(last, "answer "); a != "" {
		return "I was told what to answer.", a
	}
	words := len(strings.Fields(last))
	reasoning = fmt.Sprintf("The user wrote %d words. I will echo them back.", words)
	if n, ok := strings.CutPrefix(last, "think "); ok {
		if k, err := strconv.Atoi(strings.TrimSpace(n)); err == nil && k > 0 && k <= 100000 {
			var b strings.Builder
			for i := 1; i <= k; i++ {
				fmt.Fprintf(&b, "Step %d: consider the question again.\n", i)
			}
			return b.String(), fmt.Sprintf("I thought in %d steps.", k)
		}
	}
	if call, ok := strings.CutPrefix(last, "call "); ok {
		name, args, _ := strings.Cut(strings.TrimSpace(call), " ")
		if args = strings.TrimSpace(args); args == "" {
			args = "{}"
		}
		quoted, _ := json.Marshal(name)
		return fmt.Sprintf("The user wants me to call %s.", name),
			fmt.Sprintf("<tool_call>\n{\"name\": %s, \"arguments\": %s}\n</tool_call>", quoted, args)
	}
	if n, ok := strings.CutPrefix(last, "count "); ok {
		if k, err := strconv.Atoi(strings.TrimSpace(n)); err == nil && k > 0 && k <= 100000 {
			var b strings.Builder
			for i := 1; i <= k; i++ {
				if i > 1 {
					b.WriteByte(' ')
				}
				b.WriteString(strconv.Itoa(i))
			}
			return fmt.Sprintf("Counting to %d.", k), b.String()
		}
	}
	return reasoning, "You said: " + last
}

// callLine returns the last line of text that starts with "call ", or "".
func callLine(text string) string {
	if rest := lineAfter(text, "call "); rest != "" {
		return "call " + rest
	}
	return ""
}

// lineAfter returns what follows prefix on the last line of text that
// starts with it, or "".
func lineAfter(text, prefix string) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), prefix); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// Tokenize splits text into the fake's tokens: each token is a run of
// non-space characters with the spaces that follow it, so joining the tokens
// gives back the text.
func Tokenize(s string) []string { return enginetest.Pieces(s) }

// Session is the fake's conversation: an engine.Session, counted.
type Session struct {
	e *Engine
	s *engine.Session
}

// Reset implements server.Session: it waits for a running generation to
// finish, so a server that resets a busy session while holding a lock
// shows up in tests as a stall.
func (s *Session) Reset() {
	if s.s != nil {
		s.s.Reset()
	}
}

// MemoryBytes implements server.Session.
func (s *Session) MemoryBytes() int64 {
	if s.s == nil {
		return 0
	}
	return s.s.MemoryBytes()
}

// Generate implements server.Session: the engine's generation, with the
// answer scripted from msgs.
func (s *Session) Generate(ctx context.Context, msgs []engine.Message, opts engine.GenerateOptions) iter.Seq2[engine.Event, error] {
	return func(yield func(engine.Event, error) bool) {
		e := s.e
		e.calls.Add(1)
		if s.s == nil {
			yield(engine.Event{}, e.err)
			return
		}
		n := e.active.Add(1)
		defer e.active.Add(-1)
		for {
			m := e.maxActive.Load()
			if n <= m || e.maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		// The answer is scripted from the messages as given; the prompt
		// they render to is where the model finds it. (The engine turns
		// thinking off under a constraint.)
		if opts.RawPrompt != nil {
			text, err := e.Detokenize(opts.RawPrompt)
			if err != nil {
				yield(engine.Event{}, err)
				return
			}
			e.b.SetRawAnswer(opts.RawPrompt, e.answer([]engine.Message{{Role: "user", Content: text}}, false))
			defer e.b.ClearRawAnswer(opts.RawPrompt)
		} else if len(msgs) > 0 {
			thinking := opts.Thinking
			if opts.Constraint != nil {
				off := false
				thinking = &off
			}
			ids, err := e.f.Prompt(msgs, engine.PromptOptions{Thinking: thinking, ReasoningEffort: opts.ReasoningEffort, Tools: opts.Tools, ParseSpecial: opts.ParseSpecial})
			if err == nil {
				prompt, _ := e.b.Tok.Decode(ids, false)
				e.b.SetAnswer(prompt, e.answer(msgs, thinking == nil || *thinking))
				defer e.b.ClearAnswer(prompt)
			}
		}
		for ev, err := range s.s.Generate(ctx, msgs, opts) {
			if errors.Is(err, engine.ErrSessionBusy) {
				e.overlaps.Add(1)
			}
			if ev.Kind == engine.EventDone && ev.Stats.StopReason == engine.StopCancelled {
				e.cancelled.Add(1)
				if e.CancelAsError {
					yield(engine.Event{}, fmt.Errorf("fake engine: generation cancelled: %w", ctx.Err()))
					return
				}
			}
			if err != nil && ctx.Err() != nil {
				e.cancelled.Add(1)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}
