// Package servertest provides a deterministic fake server.Engine for tests,
// load tests and UI development: it "generates" canned text word by word,
// with optional delays, reasoning first and then content, and honours the
// same rules as a real engine (context limit and dropping the oldest
// messages, max tokens, stop strings, thinking on/off, tool calls,
// cancellation, prefix caching between turns). It ignores sampling and
// constraints: its answers are scripted.
//
// It also counts what happened (calls, cancellations, concurrent sessions),
// so tests can assert that the server really cancelled a generation or never
// ran two generations on one session at once.
package servertest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/toolcall"
)

// Engine is a fake server.Engine. The zero value is usable: it echoes the
// last user message with a 4096-token context and no delays.
type Engine struct {
	Name         string        // model id; default "fake-smollm3"
	Context      int           // context window in tokens; default 4096
	TokenDelay   time.Duration // pause before each generated token
	PrefillDelay time.Duration // pause before the first token
	// BytesPerToken is the memory a session reports per cached token
	// (server.MemorySizer); default 1024.
	BytesPerToken int64
	// CancelAsError makes a cancelled generation end with an error wrapping
	// ctx.Err() instead of an EventDone with StopReason "cancelled".
	CancelAsError bool
	// Reply computes the answer; nil means Echo.
	Reply func(msgs []engine.Message) (reasoning, content string)

	calls, cancelled, active, maxActive, overlaps, sessions atomic.Int64

	vocabMu sync.Mutex
	vocab   map[string]int32 // pieces (see Tokenize) numbered as first seen
	pieces  []string
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
	e.sessions.Add(1)
	return &Session{e: e}
}

// NewConstraint implements server.Engine; the fake's answers ignore it.
func (e *Engine) NewConstraint(g *grammar.Grammar) (engine.Constraint, error) { return nil, nil }

// Tokenize implements server.Tokenizing: the text's pieces (see the
// function Tokenize), numbered in the order the engine first saw them. The
// fake has no special tokens, so special changes nothing.
func (e *Engine) Tokenize(text string, special bool) ([]int32, error) {
	e.vocabMu.Lock()
	defer e.vocabMu.Unlock()
	if e.vocab == nil {
		e.vocab = make(map[string]int32)
	}
	var ids []int32
	for _, p := range Tokenize(text) {
		id, ok := e.vocab[p]
		if !ok {
			id = int32(len(e.pieces))
			e.vocab[p] = id
			e.pieces = append(e.pieces, p)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Detokenize implements server.Tokenizing; ids the engine never gave out
// are an error.
func (e *Engine) Detokenize(ids []int32) (string, error) {
	var b strings.Builder
	for i, id := range ids {
		p, err := e.TokenPiece(id)
		if err != nil {
			return "", fmt.Errorf("token %d (at index %d): %w", id, i, err)
		}
		b.WriteString(p)
	}
	return b.String(), nil
}

// TokenPiece implements server.Tokenizing.
func (e *Engine) TokenPiece(id int32) (string, error) {
	e.vocabMu.Lock()
	defer e.vocabMu.Unlock()
	if id < 0 || int(id) >= len(e.pieces) {
		return "", fmt.Errorf("fake engine: token %d is not in the vocabulary of %d pieces", id, len(e.pieces))
	}
	return e.pieces[id], nil
}

// Echo is the default reply: a short reasoning and the last user message
// echoed back. A message "count N" is answered with the numbers 1..N, which
// makes long, predictable streams for stop-button and load tests, and
// "think N" reasons in N steps before a short answer.
//
// Tool calling: a message "call NAME {json}" is answered with a call of the
// tool NAME with those arguments, written the way SmolLM3 writes it
// (<tool_call>{"name": NAME, "arguments": {json}}</tool_call>); the JSON is
// passed through as given, so broken JSON makes a malformed call. A
// conversation that ends with a "tool" message (a tool's result) is answered
// with "The tool returned: " and that result.
func Echo(msgs []engine.Message) (reasoning, content string) {
	if n := len(msgs); n > 0 && msgs[n-1].Role == "tool" {
		return "A tool answered. I will report its result.", "The tool returned: " + msgs[n-1].Content
	}
	last := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			last = msgs[i].Content
			break
		}
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

// Tokenize splits text into the fake's tokens: each token is a run of
// non-space characters with the spaces that follow it, so joining the tokens
// gives back the text.
func Tokenize(s string) []string {
	var toks []string
	start := 0
	inSpace := false
	for i, r := range s {
		space := r == ' ' || r == '\n' || r == '\t'
		if !space && inSpace && i > start {
			toks = append(toks, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		toks = append(toks, s[start:])
	}
	return toks
}

// Session is the fake's conversation state: the tokens of the last prompt and
// answer, used to report cached tokens like a real KV cache would.
type Session struct {
	e       *Engine
	mu      sync.Mutex
	cache   []string
	running atomic.Bool
}

// Reset implements server.Session. Like engine.Session's, it waits for a
// running generation to finish, so a server that resets a busy session
// while holding a lock shows up in tests as a stall.
func (s *Session) Reset() {
	for s.running.Load() {
		time.Sleep(time.Millisecond)
	}
	s.mu.Lock()
	s.cache = nil
	s.mu.Unlock()
}

// MemoryBytes implements server.Session.
func (s *Session) MemoryBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	per := s.e.BytesPerToken
	if per <= 0 {
		per = 1024
	}
	return int64(len(s.cache)) * per
}

func render(msgs []engine.Message, thinking bool) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
	}
	b.WriteString("<|im_start|>assistant\n")
	if !thinking {
		b.WriteString("<think>\n\n</think>\n")
	}
	return b.String()
}

func tokenID(piece string) int32 {
	h := fnv.New32a()
	h.Write([]byte(piece))
	return int32(h.Sum32() & 0xffff)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fit drops the oldest messages after a leading system message until the
// prompt fits ctxLen (the last message stays), as engine's DropOldest does.
func fit(msgs []engine.Message, thinking bool, ctxLen int) ([]engine.Message, []string, int) {
	dropped := 0
	for {
		prompt := Tokenize(render(msgs, thinking))
		first := 0
		if len(msgs) > 0 && msgs[0].Role == "system" {
			first = 1
		}
		if len(prompt) < ctxLen || len(msgs)-first <= 1 {
			return msgs, prompt, dropped
		}
		msgs = append(msgs[:first:first], msgs[first+1:]...)
		dropped++
	}
}

// Generate implements server.Session.
func (s *Session) Generate(ctx context.Context, msgs []engine.Message, opts engine.GenerateOptions) iter.Seq2[engine.Event, error] {
	return func(yield func(engine.Event, error) bool) {
		e := s.e
		e.calls.Add(1)
		if !s.running.CompareAndSwap(false, true) {
			e.overlaps.Add(1)
		} else {
			defer s.running.Store(false)
		}
		n := e.active.Add(1)
		defer e.active.Add(-1)
		for {
			m := e.maxActive.Load()
			if n <= m || e.maxActive.CompareAndSwap(m, n) {
				break
			}
		}

		thinking := opts.Thinking == nil || *opts.Thinking
		ctxLen := e.ContextLength()
		dropped := 0
		prompt := Tokenize(render(msgs, thinking))
		if opts.RawPrompt != nil {
			// A plain completion: the prompt is the text itself, the
			// reply is to it as one user message, all of it content.
			text, err := e.Detokenize(opts.RawPrompt)
			if err != nil {
				yield(engine.Event{}, err)
				return
			}
			thinking = false
			msgs = []engine.Message{{Role: "user", Content: text}}
			prompt = Tokenize(text)
		} else if opts.DropOldest {
			msgs, prompt, dropped = fit(msgs, thinking, ctxLen)
		}
		if len(prompt) > ctxLen {
			yield(engine.Event{}, fmt.Errorf("fake engine: prompt is %d tokens, context is %d: %w", len(prompt), ctxLen, engine.ErrContextFull))
			return
		}
		s.mu.Lock()
		cached := 0
		for cached < len(prompt) && cached < len(s.cache) && prompt[cached] == s.cache[cached] {
			cached++
		}
		s.cache = append(s.cache[:cached:cached], prompt[cached:]...)
		s.mu.Unlock()

		reply := e.Reply
		if reply == nil {
			reply = Echo
		}
		reasoning, content := reply(msgs)
		if !thinking {
			reasoning = ""
		}
		stop := engine.StopEndOfTurn
		stopString := ""
		for _, st := range opts.Stop {
			if i := strings.Index(content, st); st != "" && i >= 0 {
				content, stopString = content[:i], st
			}
		}
		start := time.Now()
		stats := &engine.Stats{PromptTokens: len(prompt), CachedTokens: cached, DroppedMessages: dropped}
		finish := func() {
			el := time.Since(start).Seconds()
			if el > 0 {
				stats.DecodeTokensPerSec = float64(stats.GeneratedTokens) / el
			}
			stats.PrefillTokensPerSec = 1e4
			yield(engine.Event{Kind: engine.EventDone, Stats: stats}, nil)
		}
		cancelled := func(err error) {
			e.cancelled.Add(1)
			if e.CancelAsError {
				yield(engine.Event{}, fmt.Errorf("fake engine: generation cancelled: %w", err))
				return
			}
			stats.StopReason = engine.StopCancelled
			finish()
		}
		if err := sleep(ctx, e.PrefillDelay); err != nil {
			cancelled(err)
			return
		}
		type piece struct {
			kind engine.EventKind
			text string
		}
		var pieces []piece
		if thinking {
			pieces = append(pieces, piece{engine.EventContent, "<think>\n"})
			for _, t := range Tokenize(reasoning) {
				pieces = append(pieces, piece{engine.EventReasoning, t})
			}
			pieces = append(pieces, piece{engine.EventContent, "\n</think>\n"})
		}
		for _, t := range Tokenize(content) {
			pieces = append(pieces, piece{engine.EventContent, t})
		}
		// With tools, the content goes through the tool-call parser, as
		// a real model's format does.
		var tools *toolcall.Parser
		if len(opts.Tools) > 0 && opts.RawPrompt == nil {
			tools = toolcall.NewParser(-1, -1)
		}
		calls := 0
		emit := func(ev engine.Event) bool {
			if tools == nil || ev.Kind != engine.EventContent {
				return ev.Text == "" && ev.Kind == engine.EventContent || yield(ev, nil)
			}
			return s.emitTools(tools.Push(-1, ev.Text), ev.Token, &calls, yield)
		}
		for _, p := range pieces {
			if opts.MaxTokens > 0 && stats.GeneratedTokens >= opts.MaxTokens ||
				len(prompt)+stats.GeneratedTokens >= ctxLen {
				stop = engine.StopLength
				break
			}
			if opts.EndAfterToolCall && calls > 0 {
				stop = engine.StopToolCalls
				break
			}
			if err := sleep(ctx, e.TokenDelay); err != nil {
				cancelled(err)
				return
			}
			if err := ctx.Err(); err != nil {
				cancelled(err)
				return
			}
			stats.GeneratedTokens++
			s.mu.Lock()
			s.cache = append(s.cache, p.text)
			s.mu.Unlock()
			ev := engine.Event{Kind: p.kind, Text: p.text, Token: tokenID(p.text)}
			if p.text == "<think>\n" || p.text == "\n</think>\n" {
				// Markers are tokens too, but a real engine's parser
				// leaves them out of the text.
				continue
			}
			if !emit(ev) {
				return
			}
		}
		if tools != nil && !s.emitTools(tools.Flush(), 0, &calls, yield) {
			return
		}
		stats.StopReason = stop
		if stop == engine.StopEndOfTurn {
			stats.StopString = stopString
		}
		finish()
	}
}

// emitTools yields the tool-call parser's events as engine events.
func (s *Session) emitTools(evs []toolcall.Event, tok int32, calls *int, yield func(engine.Event, error) bool) bool {
	for _, tev := range evs {
		ev := engine.Event{Token: tok}
		switch tev.Kind {
		case toolcall.KindText:
			if tev.Text == "" {
				continue
			}
			ev.Kind, ev.Text = engine.EventContent, tev.Text
		case toolcall.KindCall:
			ev.Kind, ev.Text = engine.EventToolCall, toolcall.Text(tev.Call)
			ev.ToolCall = &engine.ToolCall{ID: fmt.Sprintf("call_%d", *calls), Name: tev.Call.Name, Arguments: tev.Call.Arguments}
			*calls++
		default:
			ev.Kind, ev.Text, ev.Err = engine.EventToolError, toolcall.OpenTag+tev.Raw+toolcall.CloseTag, tev.Err
		}
		if !yield(ev, nil) {
			return false
		}
	}
	return true
}
