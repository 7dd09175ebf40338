package smollm3

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/smollm3/chat"
	"github.com/smolgo/smolgo/toolcall"
)

// prefillChunk is how many prompt tokens one forward call processes, like
// llama.cpp's default micro-batch (n_ubatch 512), so that long prompts are
// computed in the same batches. Cancellation does not wait for a chunk: the
// forward pass checks its context between layers.
const prefillChunk = 512

// backend is what a Session needs from a loaded model. *Model provides it
// (session_model.go); tests use fakes.
type backend interface {
	// newCache returns an empty KV cache for one session.
	newCache() (kvCache, error)
	// render applies the chat template with the generation prompt, the
	// reasoning mode and the tools of opts.
	render(msgs []Message, opts *GenerateOptions) (string, error)
	// encode tokenizes a rendered prompt, special tokens included.
	encode(text string) ([]int32, error)
	// newDecoder returns a streaming detokenizer that leaves special tokens out.
	newDecoder() tokenDecoder
	// endOfTurn reports whether the model ends its answer with id
	// (<|im_end|>, end of text).
	endOfTurn(id int32) bool
	// thinkTags returns the ids of <think> and </think> (ok false if the
	// vocabulary has none).
	thinkTags() (open, close int32, ok bool)
}

// kvCache runs the model over a session's KV cache.
type kvCache interface {
	// maxLen is the number of positions the cache holds.
	maxLen() int
	// forward computes tokens at positions pos, pos+1, ... (entries at and
	// after pos are overwritten) and returns the logits of the last one.
	forward(ctx context.Context, tokens []int32, pos int) ([]float32, error)
}

// tokenDecoder is the streaming detokenizer: text that is complete so far.
type tokenDecoder interface {
	Push(id int32) (string, error)
	Flush() string
}

// A Session is one conversation with a model: it owns a KV cache and keeps
// it between calls of Generate, so that a follow-up turn only computes the
// tokens that are new. Pass the whole conversation each time (including the
// model's previous answers); the session finds the longest prefix of the new
// prompt that is already cached and prefills only the rest.
//
// The same prompt asked again reuses even the prompt's logits, so a seeded
// request repeats its answer. A resumed conversation computes its new tokens
// in other batches than a fresh session would, and batched and single-token
// passes round differently (as in llama.cpp), so a resumed answer can differ
// from a fresh one where two tokens are nearly tied.
//
// A Session runs one generation at a time; make one per concurrent
// conversation. Sessions of one Model share its weights.
type Session struct {
	b     backend
	mu    sync.Mutex
	cache kvCache
	// tokens are the tokens whose keys and values are in the cache, at
	// positions 0..len-1.
	tokens []int32
	// sampled are the tokens the last generation sampled (for tests).
	sampled []int32
	// promptLogits are the logits after the last prompt's prefill, the
	// prediction for position promptEnd; promptEnd is -1 when there are none
	// or tokens[:promptEnd] has changed since. Asking the same prompt again
	// reuses them: recomputing the last prompt token alone would give
	// slightly different numbers than the batched prefill did (batch and
	// single-token kernels round differently), and a seeded request would
	// not repeat its answer.
	promptLogits []float32
	promptEnd    int
	// approxFrom is the first position whose keys and values came through
	// a context shift (approximations, never shared through a PromptCache);
	// -1 when there are none.
	approxFrom int
}

func newSession(b backend) *Session {
	return &Session{b: b, promptEnd: -1, approxFrom: -1}
}

// Reset empties the session's KV cache; the next Generate starts from
// scratch. It waits for a running generation to finish.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = s.tokens[:0]
	s.promptEnd = -1
	s.approxFrom = -1
}

// CachedTokens returns how many tokens the session's KV cache holds.
func (s *Session) CachedTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}

// Generate renders msgs with the chat template, prefills what the cache does
// not already hold, and streams the model's answer: EventReasoning and
// EventContent events as text becomes available, then one EventDone with
// Stats. A failure is yielded once as a non-nil error and ends the stream.
//
// Generation stops when the model ends its turn, when a stop string
// appears, at opts.MaxTokens, when the context is full, or when ctx is
// cancelled (then the Done event has StopReason "cancelled"; Generate
// returns within one token's time). Breaking out of the loop early stops
// generation too. In every case the session stays usable.
//
// A prompt that does not fit in the context is an error wrapping
// ErrContextFull, unless opts.DropOldest allows dropping old messages.
func (s *Session) Generate(ctx context.Context, msgs []Message, opts GenerateOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if !s.mu.TryLock() {
			yield(Event{}, ErrSessionBusy)
			return
		}
		defer s.mu.Unlock()
		g := &generation{s: s, opts: opts, yield: yield}
		if err := g.run(ctx, msgs); err != nil && !g.stopped {
			g.yield(Event{}, err)
		}
	}
}

// generation is the state of one Generate call.
type generation struct {
	s       *Session
	opts    GenerateOptions
	yield   func(Event, error) bool
	stopped bool // the consumer broke out of the loop

	stats     Stats
	prefilled time.Time // end of the prefill, start of decoding
	lastTok   int32     // the last token that produced text
	hitStop   bool      // a stop string ended the answer
	stop      *stopMatcher
	dropped   int // messages prompt dropped to fit the context
	dec       tokenDecoder
	parser    *chat.Parser     // splits reasoning from content
	tools     *toolcall.Parser // reads tool calls out of the content (with Tools)
}

func (g *generation) run(ctx context.Context, msgs []Message) error {
	s, b := g.s, g.s.b
	if g.opts.MaxTokens < 0 {
		return fmt.Errorf("smollm3: GenerateOptions.MaxTokens is %d; use 0 for no limit", g.opts.MaxTokens)
	}
	if err := g.opts.Sampler.Validate(); err != nil {
		return fmt.Errorf("smollm3: GenerateOptions.Sampler: %w", err)
	}
	if s.cache == nil {
		c, err := b.newCache()
		if err != nil {
			return fmt.Errorf("smollm3: creating the KV cache: %w", err)
		}
		s.cache = c
	}
	if g.opts.Constraint != nil {
		g.opts.Thinking = chat.Think(false)
	}
	prompt, err := g.prompt(msgs)
	if err != nil {
		return err
	}

	if g.dropped > 0 && g.opts.ShiftContext {
		if err := g.shift(prompt); err != nil {
			return err
		}
	}

	// Reuse the longest common prefix; at least one token must be computed
	// to get logits.
	common := 0
	for common < len(s.tokens) && common < len(prompt) && s.tokens[common] == prompt[common] {
		common++
	}
	if ps, ok := s.cache.(prefixStore); ok {
		if common, err = g.restorePrefix(ps, prompt, common); err != nil {
			return err
		}
	}
	var logits []float32
	if common == len(prompt) && s.promptEnd == len(prompt) {
		logits = s.promptLogits // the same prompt again: reuse its logits
	} else {
		common = min(common, len(prompt)-1)
	}
	s.tokens = s.tokens[:common]
	if s.promptEnd > common {
		s.promptEnd = -1
	}
	if s.approxFrom >= common {
		s.approxFrom = -1 // everything shifted is recomputed
	}
	s.sampled = s.sampled[:0]
	g.stats.PromptTokens = len(prompt)
	g.stats.CachedTokens = common

	start := time.Now()
	for pos := common; pos < len(prompt); pos += prefillChunk {
		if ctx.Err() != nil {
			return g.done(StopCancelled)
		}
		chunk := prompt[pos:min(pos+prefillChunk, len(prompt))]
		logits, err = s.cache.forward(ctx, chunk, pos)
		if err != nil {
			if ctx.Err() != nil {
				return g.done(StopCancelled)
			}
			return fmt.Errorf("smollm3: prefill of prompt tokens %d..%d: %w", pos, pos+len(chunk)-1, err)
		}
		s.tokens = append(s.tokens, chunk...)
		if g.opts.PrefillProgress != nil {
			g.opts.PrefillProgress(len(s.tokens), len(prompt))
		}
	}
	g.prefilled = time.Now()
	if d := g.prefilled.Sub(start).Seconds(); d > 0 && common < len(prompt) {
		g.stats.PrefillTokensPerSec = float64(len(prompt)-common) / d
	}
	if common < len(prompt) {
		s.promptLogits = append(s.promptLogits[:0], logits...)
		s.promptEnd = len(prompt)
		if ps, ok := s.cache.(prefixStore); ok && s.approxFrom < 0 {
			if err := ps.save(prompt, logits); err != nil {
				return fmt.Errorf("smollm3: saving the prompt in the prompt cache: %w", err)
			}
		}
	}

	sampler := sample.New(g.opts.Sampler)
	if w := sampler.Config().PenaltyWindow; w > 0 {
		for _, t := range prompt[max(0, len(prompt)-w):] {
			sampler.Accept(t)
		}
	}
	g.stop = newStopMatcher(g.opts.Stop)
	g.dec = b.newDecoder()
	open, closeTag, hasThink := b.thinkTags()
	if !hasThink {
		open, closeTag = -1, -1
	}
	g.parser = chat.NewParser(open, closeTag, chat.ParserOptions{TrimSpace: true})
	if len(g.opts.Tools) > 0 {
		// SmolLM3's <tool_call> tokens are not special: they decode to
		// their text, so the parser works on text alone.
		g.tools = toolcall.NewParser(-1, -1)
	}
	ctxLen := s.cache.maxLen()

	var cons *constrained
	if g.opts.Constraint != nil {
		cons = &constrained{c: g.opts.Constraint}
	}
	for {
		in := logits
		if cons != nil {
			if in, err = cons.apply(logits); err != nil {
				return err
			}
		}
		tok := sampler.Sample(in)
		if tok == sample.NoToken {
			return fmt.Errorf("smollm3: no token can be sampled at position %d: every logit is -Inf or NaN", len(s.tokens))
		}
		if cons != nil {
			if err := cons.c.Accept(tok); err != nil {
				return fmt.Errorf("smollm3: the constraint rejected sampled token %d: %w", tok, err)
			}
		}
		g.stats.GeneratedTokens++
		s.sampled = append(s.sampled, tok)
		if b.endOfTurn(tok) {
			return g.done(StopEndOfTurn)
		}
		sampler.Accept(tok)
		text, err := g.dec.Push(tok)
		if err != nil {
			return fmt.Errorf("smollm3: decoding generated token %d: %w", tok, err)
		}
		g.lastTok = tok
		if hit, ok := g.emit(g.parser.Push(tok, text), tok); !ok {
			return nil
		} else if hit {
			g.hitStop = true
			return g.done(StopEndOfTurn)
		}
		if g.opts.MaxTokens > 0 && g.stats.GeneratedTokens >= g.opts.MaxTokens {
			return g.done(StopLength)
		}
		if len(s.tokens) >= ctxLen {
			return g.done(StopLength)
		}
		if ctx.Err() != nil {
			return g.done(StopCancelled)
		}
		logits, err = s.cache.forward(ctx, []int32{tok}, len(s.tokens))
		if err != nil {
			if ctx.Err() != nil {
				return g.done(StopCancelled)
			}
			return fmt.Errorf("smollm3: decoding at position %d: %w", len(s.tokens), err)
		}
		s.tokens = append(s.tokens, tok)
	}
}

// prompt renders and tokenizes msgs, dropping old messages if allowed.
func (g *generation) prompt(msgs []Message) ([]int32, error) {
	b := g.s.b
	if len(msgs) == 0 {
		return nil, errors.New("smollm3: Generate needs at least one message")
	}
	ctxLen := g.s.cache.maxLen()
	head := 0 // a leading system message is never dropped
	if msgs[0].Role == "system" {
		head = 1
	}
	for dropped := 0; ; dropped++ {
		use := msgs
		if dropped > 0 {
			use = append(slices.Clip(msgs[:head]), msgs[head+dropped:]...)
		}
		text, err := b.render(use, &g.opts)
		if err != nil {
			return nil, fmt.Errorf("smollm3: rendering the chat template: %w", err)
		}
		ids, err := b.encode(text)
		if err != nil {
			return nil, fmt.Errorf("smollm3: tokenizing the prompt: %w", err)
		}
		if len(ids) == 0 {
			return nil, errors.New("smollm3: the rendered prompt is empty")
		}
		if len(ids) < ctxLen {
			g.dropped = dropped
			return ids, nil
		}
		if !g.opts.DropOldest || len(use)-head <= 1 {
			how := ""
			if dropped > 0 {
				how = fmt.Sprintf(" after dropping the %d oldest messages", dropped)
			}
			return nil, fmt.Errorf("smollm3: the prompt is %d tokens%s but the context holds %d, so %d tokens must go (one position is kept for the answer): %w",
				len(ids), how, ctxLen, len(ids)-ctxLen+1, ErrContextFull)
		}
	}
}

// emit sends the parser's segments as reasoning and content events; content
// goes through the stop strings first. hit reports a stop string; ok is
// false when the consumer stopped listening.
func (g *generation) emit(segs []chat.Segment, tok int32) (hit, ok bool) {
	for _, seg := range segs {
		if seg.Text == "" {
			continue
		}
		if seg.Kind == chat.Reasoning {
			if !g.opts.HideReasoning && !g.send(Event{Kind: EventReasoning, Text: seg.Text, Token: tok}) {
				return false, false
			}
			continue
		}
		if g.tools != nil {
			hit, ok = g.emitTools(g.tools.Push(-1, seg.Text), tok)
		} else {
			hit, ok = g.emitContent(seg.Text, tok)
		}
		if hit || !ok {
			return hit, ok
		}
	}
	return false, true
}

// emitContent sends answer text through the stop strings.
func (g *generation) emitContent(text string, tok int32) (hit, ok bool) {
	out, hit := g.stop.push(text)
	if out != "" && !g.send(Event{Kind: EventContent, Text: out, Token: tok}) {
		return hit, false
	}
	return hit, true
}

// emitTools sends the tool-call parser's events: text as content, calls
// and unreadable calls as their own events.
func (g *generation) emitTools(evs []toolcall.Event, tok int32) (hit, ok bool) {
	for _, ev := range evs {
		if ev.Kind == toolcall.KindText {
			if hit, ok = g.emitContent(ev.Text, tok); hit || !ok {
				return hit, ok
			}
			continue
		}
		// A call ends the text before it: what the stop strings held back
		// (a possible start of a stop string) goes out first.
		if rest := g.stop.flush(); rest != "" && !g.send(Event{Kind: EventContent, Text: rest, Token: tok}) {
			return false, false
		}
		out := Event{Kind: EventToolCall, Token: tok}
		if ev.Kind == toolcall.KindCall {
			out.ToolCall = &ToolCall{Name: ev.Call.Name, Arguments: ev.Call.Arguments}
			out.Text = toolCallText(ev.Call)
		} else {
			out.Kind, out.Text, out.Err = EventToolError, toolcall.OpenTag+ev.Raw+toolcall.CloseTag, ev.Err
		}
		if !g.send(out) {
			return false, false
		}
	}
	return false, true
}

// send yields ev, remembering when the consumer stops listening.
func (g *generation) send(ev Event) bool {
	if g.stopped {
		return false
	}
	if !g.yield(ev, nil) {
		g.stopped = true
	}
	return !g.stopped
}

// done flushes held text (unless a stop string cut the answer) and yields
// the final event.
func (g *generation) done(reason string) error {
	if !g.hitStop && g.dec != nil {
		segs := g.parser.Push(-1, g.dec.Flush())
		hit, ok := g.emit(append(segs, g.parser.Flush()...), g.lastTok)
		if ok && !hit && g.tools != nil {
			hit, ok = g.emitTools(g.tools.Flush(), g.lastTok)
		}
		if !ok {
			return nil
		}
		if rest := g.stop.flush(); !hit && rest != "" && !g.send(Event{Kind: EventContent, Text: rest, Token: g.lastTok}) {
			return nil
		}
	}
	if !g.prefilled.IsZero() {
		if d := time.Since(g.prefilled).Seconds(); d > 0 {
			g.stats.DecodeTokensPerSec = float64(g.stats.GeneratedTokens) / d
		}
	}
	g.stats.StopReason = reason
	st := g.stats
	g.send(Event{Kind: EventDone, Stats: &st})
	return nil
}

// toolCallText writes a call as SmolLM3 writes one (and as its chat template's
// tool instructions show).
func toolCallText(c toolcall.Call) string {
	name, _ := json.Marshal(c.Name)
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return toolcall.OpenTag + "\n{\"name\": " + string(name) + ", \"arguments\": " + string(args) + "}\n" + toolcall.CloseTag
}
