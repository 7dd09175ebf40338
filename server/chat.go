package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/smolgo/smolgo/engine"
)

// handleChat serves POST /v1/chat/completions.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if !s.readRequest(w, r, &req, nil) {
		return
	}
	job, ae := req.validate(&s.cfg, s.syntax)
	if ae == nil {
		ae = s.checkModel(req.Model)
	}
	if ae == nil {
		ae = s.checkLogitBias(job.opts.LogitBias)
	}
	if ae != nil {
		writeError(w, ae)
		return
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	s.runJob(w, r, jobRun{endpoint: "chat", idPrefix: "chatcmpl-", sessionID: req.SessionID, affinity: req.affinityKey(), stream: req.Stream, job: job},
		func(ctx context.Context, g *reply) {
			if req.Stream {
				g.stream(ctx, includeUsage)
			} else {
				g.complete(ctx)
			}
		})
}

// checkLogitBias checks that logit_bias names tokens of the vocabulary,
// when the engine can say.
func (s *Server) checkLogitBias(bias map[int32]float32) *apiError {
	t, ok := s.engine.(Tokenizing)
	if !ok {
		return nil
	}
	for id := range bias {
		if _, err := t.TokenPiece(id); err != nil {
			return badRequest("logit_bias", "logit_bias: %v", err)
		}
	}
	return nil
}

// readRequest refuses requests while the server shuts down and decodes the
// JSON body into v; it writes the error (in errBody's shape; nil means
// OpenAI's) and returns false when there is one.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, v any, errBody func(*apiError) any) bool {
	if s.draining.Load() {
		w.Header().Set("Connection", "close")
		writeErrorAs(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error",
			Code: "shutting_down", Message: "server is shutting down; retry on another replica"}, errBody)
		return false
	}
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, v); err != nil {
		writeErrorAs(w, decodeError(err, s.cfg.MaxBodyBytes), errBody)
		return false
	}
	return true
}

// jobRun is a validated generation request of any API, for runJob.
type jobRun struct {
	endpoint  string // the API, for logs: "chat", "completions", "responses", "messages"
	idPrefix  string // of the response id
	sessionID string // a server-side session (POST /api/sessions), or "" for the slot's
	affinity  string // prompt_cache_key or user: a hint for the slot (see slotQueue.acquireFor)
	stream    bool
	job       *chatJob
	// errBody writes an error in the API's shape; nil means OpenAI's.
	errBody func(*apiError) any
}

// runJob is the path every generation endpoint shares: it takes the named
// session, waits in line for a slot, compiles the request's grammar under
// the request's context (holding the slot, so that compilation counts
// against the queue), and then calls produce, which runs the generation
// and writes the answer in its API's shape. The context produce gets ends
// when the client goes away or when shutdown runs out of grace.
func (s *Server) runJob(w http.ResponseWriter, r *http.Request, jr jobRun, produce func(ctx context.Context, g *reply)) {
	ctx := r.Context()
	reqID := requestID(ctx)
	arrived := time.Now()
	fail := func(e *apiError) { writeErrorAs(w, e, jr.errBody) }
	if ae := s.refuseEncoder(); ae != nil {
		fail(ae)
		return
	}

	// Resources held for the generation (the named session, the slot) are
	// released as soon as the engine is done, before the last bytes of the
	// answer are written: a client that reads the end of its answer and
	// sends its next turn at once must find them free.
	var held []func()
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
		held = nil
	}
	defer release()

	// A named session is this conversation's own KV cache; it is held for
	// the whole generation so that two generations never share it.
	var sess Session
	if jr.sessionID != "" {
		named, done, err := s.sessions.acquire(ctx, jr.sessionID, s.cfg.SessionWait)
		if err != nil {
			if ctx.Err() != nil {
				return // the client left while waiting
			}
			status, code := http.StatusNotFound, "session_not_found"
			if errors.Is(err, errSessionBusy) {
				status, code = http.StatusConflict, "session_busy"
			}
			fail(&apiError{Status: status, Type: "invalid_request_error", Param: "session_id", Code: code, Message: err.Error()})
			return
		}
		held = append(held, done)
		sess = named
	}

	slot, err := s.sched.acquireFor(ctx, jr.affinity)
	if err != nil {
		if errors.Is(err, errQueueFull) {
			busy, waiting := s.sched.load(s.cfg.Slots)
			s.log.Warn("queue full", "request_id", reqID, "busy", busy, "queued", waiting)
			fail(&apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "queue_full",
				Message: "model busy: all generation slots are in use and the queue is full; retry shortly"})
		}
		return // otherwise the client left while waiting
	}
	held = append(held, func() { s.sched.release(slot) })
	queueWait := time.Since(arrived)
	if sess == nil {
		sess = s.slotSession(slot)
	}

	s.inflight.Add(1)
	defer s.inflight.Done()
	genCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopAfter := context.AfterFunc(s.stopGen, cancel)
	defer stopAfter()

	if jr.job.format != nil {
		if ae := s.prepareConstraint(genCtx, jr.job); ae != nil {
			if genCtx.Err() == nil {
				fail(ae)
			}
			return
		}
	}

	g := &reply{s: s, w: w, job: jr.job, opts: jr.job.opts, sess: sess, errBody: jr.errBody, endpoint: jr.endpoint, reqID: reqID, release: release,
		id: newID(jr.idPrefix), created: time.Now().Unix(), queueWait: queueWait, arrived: arrived, start: time.Now()}
	produce(genCtx, g)
	s.metrics.generation(jr.endpoint, g)
	st := g.stats
	s.log.Info("generation", "endpoint", jr.endpoint, "request_id", reqID, "stream", jr.stream, "session", jr.sessionID,
		"slot", slot, "queue_wait", queueWait.Round(time.Microsecond), "duration", time.Since(g.start).Round(time.Microsecond),
		"prompt_tokens", st.PromptTokens, "cached_tokens", st.CachedTokens, "generated_tokens", st.GeneratedTokens,
		"prefill_tok_s", round1(st.PrefillTokensPerSec), "decode_tok_s", round1(st.DecodeTokensPerSec), "stop", st.StopReason, "error", g.errText)
}

// prepareConstraint compiles the job's grammar and makes the engine's
// constraint from it. Bad schemas are 400s naming the problem.
func (s *Server) prepareConstraint(ctx context.Context, job *chatJob) *apiError {
	g, err := job.format(ctx)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return ae
		}
		return &apiError{Status: 499, Type: "server_error", Code: "cancelled", Message: "request cancelled: " + err.Error()}
	}
	c, err := s.engine.NewConstraint(g)
	if err != nil {
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "preparing the constraint: " + err.Error()}
	}
	job.grammar, job.opts.Constraint = g, c
	return nil
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// decodeBody reads one JSON object from the body, bounded by limit.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errEmptyBody
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return &json.SyntaxError{Offset: dec.InputOffset()}
	}
	return nil
}

// slotSession returns the engine session owned by slot, making it on first
// use. Requests without a session id share it, so a client that sends a
// growing conversation to a one-slot server still reuses its KV cache.
func (s *Server) slotSession(slot int) Session {
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	if s.slotSessions[slot] == nil {
		s.slotSessions[slot] = s.engine.NewSession()
	}
	return s.slotSessions[slot]
}

// reply is one answer being produced, in any API's shape (the engine
// runs it as a generation of its own; this is the HTTP side).
type reply struct {
	s         *Server
	w         http.ResponseWriter
	job       *chatJob
	opts      engine.GenerateOptions // the job's, for this answer
	sess      Session
	errBody   func(*apiError) any // the API's error shape (nil: OpenAI's)
	endpoint  string              // the API (jobRun.endpoint)
	reqID     string
	id        string
	created   int64
	queueWait time.Duration
	arrived   time.Time // when the request was read
	start     time.Time // when it got its slot

	release func() // frees the session and slot once the engine is done

	stats       engine.Stats
	firstToken  time.Duration  // from arrival to the first event (0: none)
	reasoning   int            // reasoning events
	calls       []wireToolCall // the tool calls so far
	errText     string
	promptReady func(prompt, cached int) // see engine.GenerateOptions.PromptReady
}

// events runs the job on the session, recording the time to the first
// token, the reasoning events and, from EventDone, the stats.
func (g *reply) events(ctx context.Context) iter.Seq2[engine.Event, error] {
	return func(yield func(engine.Event, error) bool) {
		opts := g.opts
		opts.PromptReady = g.promptReady
		for ev, err := range g.sess.Generate(ctx, g.job.msgs, opts) {
			if err != nil {
				g.errText = err.Error()
				yield(ev, err)
				return
			}
			switch ev.Kind {
			case engine.EventDone:
				g.finish(ev.Stats)
			case engine.EventReasoning:
				g.reasoning++
			}
			if g.firstToken == 0 && ev.Kind != engine.EventDone {
				g.firstToken = time.Since(g.arrived)
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// tell reports whether an error should still be written: the client is
// there, or the server is stopping it.
func (g *reply) tell(ctx context.Context) bool {
	return ctx.Err() == nil || g.s.stopGen.Err() != nil
}

// fail writes an API error in the API's shape.
func (g *reply) fail(e *apiError) { writeErrorAs(g.w, e, g.errBody) }

// cancelled reports a generation that ended because its context did; it
// writes the shutdown error when that was the reason.
func (g *reply) cancelled(ctx context.Context) bool {
	if g.stats.StopReason != engine.StopCancelled {
		return false
	}
	if g.s.stopGen.Err() != nil {
		g.fail(g.engineError(ctx, context.Canceled))
	}
	return true
}

// engineError maps an error from the engine to an API error.
func (g *reply) engineError(ctx context.Context, err error) *apiError {
	var long *engine.PromptTooLongError
	switch {
	case errors.As(err, &long) && g.endpoint == "messages":
		// Anthropic's words, which Claude Code looks for before it
		// compacts the conversation.
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: fmt.Sprintf("prompt is too long: %d tokens > %d maximum", long.Tokens, long.Context-1)}
	case errors.Is(err, engine.ErrImage):
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "messages", Code: "invalid_image", Message: err.Error()}
	case errors.Is(err, engine.ErrTemplate):
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "messages", Message: err.Error()}
	case errors.Is(err, engine.ErrContextFull):
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "messages",
			Code: "context_length_exceeded", Message: err.Error()}
	case g.s.stopGen.Err() != nil:
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down",
			Message: "server is shutting down; the generation was stopped"}
	case ctx.Err() != nil:
		return &apiError{Status: 499, Type: "server_error", Code: "cancelled", Message: "generation cancelled"}
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "generation failed: " + err.Error()}
}

func (g *reply) finish(st *engine.Stats) {
	if st != nil {
		g.stats = *st
	}
	if g.s.stopGen.Err() != nil && g.stats.StopReason == engine.StopCancelled {
		g.errText = "stopped by shutdown"
	}
}

func (g *reply) usage() usage {
	var u usage
	u.PromptTokens = g.stats.PromptTokens
	u.CompletionTokens = g.stats.GeneratedTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = g.stats.CachedTokens
	u.CompletionTokensDetails.ReasoningTokens = g.reasoning
	return u
}

func (g *reply) timings() *timings {
	st := g.stats
	t := &timings{PromptN: st.PromptTokens - st.CachedTokens, CacheN: st.CachedTokens,
		PromptPerSecond: st.PrefillTokensPerSec, PredictedN: st.GeneratedTokens,
		PredictedPerSecond: st.DecodeTokensPerSec, QueueMS: float64(g.queueWait.Microseconds()) / 1000,
		StopReasonExtension: st.StopReason, DroppedMessages: st.DroppedMessages,
		DraftN: st.DraftTokens, DraftAcceptedN: st.AcceptedTokens}
	if st.DecodeTokensPerSec > 0 {
		t.PredictedMS = float64(st.GeneratedTokens) / st.DecodeTokensPerSec * 1000
	}
	return t
}

// choices runs the request's n answers (chat's n) and calls each(i, c)
// for answer i in a goroutine of its own (answer 0 in this one); it
// returns when all are done. Answer 0 runs on the request's session; the
// others on sessions of their own, started once the first one's prompt is
// computed, so that with the prompt cache they take it from there (they
// share the slot's batch place with it: the engine batches their steps).
// Each answer gets its own seed (the request's plus its index) and, under a
// grammar, its own constraint.
func (g *reply) choices(ctx context.Context, each func(i int, c *reply)) []*reply {
	n := max(g.job.n, 1)
	gens := []*reply{g}
	if n == 1 {
		each(0, g)
		return gens
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan struct{})
	var once sync.Once
	g.promptReady = func(int, int) { once.Do(func() { close(ready) }) }
	for i := 1; i < n; i++ {
		c := *g
		c.sess = g.s.engine.NewSession()
		c.stats, c.calls, c.reasoning, c.firstToken, c.errText, c.promptReady = engine.Stats{}, nil, 0, 0, "", nil
		if seed := c.opts.Sampler.Seed; seed != 0 {
			c.opts.Sampler.Seed = seed + uint64(i)
		}
		if g.job.grammar != nil {
			if cons, err := g.s.engine.NewConstraint(g.job.grammar); err == nil {
				c.opts.Constraint = cons
			}
		}
		gens = append(gens, &c)
	}
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer gens[i].sess.Reset() // its memory goes now
			select {
			case <-ready:
			case <-ctx.Done():
				return
			}
			each(i, gens[i])
		}()
	}
	each(0, g)
	once.Do(func() { close(ready) }) // the first answer failed before its prompt was ready
	wg.Wait()
	return gens
}

// chatChoice is one answer of a chat completion, collected.
type chatChoice struct {
	content, reasoning strings.Builder
	lps                []tokenLogprob
	err                error
}

// collect runs one answer to its end.
func (g *reply) collect(ctx context.Context, c *chatChoice) {
	for ev, err := range g.events(ctx) {
		if err != nil {
			c.err = err
			return
		}
		if g.opts.Logprobs {
			c.lps = append(c.lps, wireLogprobs(ev.Logprobs)...)
		}
		switch ev.Kind {
		case engine.EventReasoning:
			c.reasoning.WriteString(ev.Text)
		case engine.EventContent:
			c.content.WriteString(ev.Text)
		case engine.EventToolCall:
			g.calls = append(g.calls, toWire(*ev.ToolCall))
		case engine.EventToolError:
			g.badCall(ev)
			c.content.WriteString(ev.Text) // nothing the model said is lost
		}
	}
}

// complete produces a non-streaming answer (n of them, with n).
func (g *reply) complete(ctx context.Context) {
	results := make([]chatChoice, max(g.job.n, 1))
	gens := g.choices(ctx, func(i int, c *reply) { c.collect(ctx, &results[i]) })
	g.release()
	for i := range results {
		if err := results[i].err; err != nil {
			if g.tell(ctx) {
				g.fail(gens[i].engineError(ctx, err))
			}
			return
		}
	}
	if g.cancelled(ctx) {
		return // the client is gone, or shutdown stopped it
	}
	out := completion{ID: g.id, Object: "chat.completion", Created: g.created, Model: g.s.engine.ModelName(),
		SystemFingerprint: fingerprint, Usage: g.usage(), Timings: g.timings()}
	for i, c := range gens {
		r := &results[i]
		msg := responseMessage{Role: "assistant", ToolCalls: c.calls}
		if text := r.content.String(); text != "" || len(c.calls) == 0 {
			msg.Content = &text
		}
		if r.reasoning.Len() > 0 {
			text := r.reasoning.String()
			msg.ReasoningContent = &text
		}
		choice := completionChoice{Index: i, Message: msg, FinishReason: finishReason(c.stats.StopReason, len(c.calls))}
		if g.opts.Logprobs {
			choice.Logprobs = &choiceLogprobs{Content: r.lps}
		}
		out.Choices = append(out.Choices, choice)
		if i > 0 {
			u := c.usage()
			out.Usage.CompletionTokens += u.CompletionTokens
			out.Usage.TotalTokens += u.CompletionTokens
			out.Usage.CompletionTokensDetails.ReasoningTokens += u.CompletionTokensDetails.ReasoningTokens
		}
	}
	writeJSON(g.w, http.StatusOK, out)
}

// badCall logs a tool call the model wrote but that could not be read; it
// is returned as text.
func (g *reply) badCall(ev engine.Event) {
	g.s.log.Warn("unreadable tool call returned as text", "request_id", g.reqID, "error", ev.Err)
}

const fingerprint = "smolgo"

// sse writes Server-Sent Events, flushing each one.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func newSSE(w http.ResponseWriter) *sse { return &sse{w: w, rc: http.NewResponseController(w)} }

// begin sends the headers of an event stream.
func (e *sse) begin() {
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	e.w.WriteHeader(http.StatusOK)
}

// data writes an event with only a data line: v as JSON, or a string as it is.
func (e *sse) data(v any) { e.event("", v) }

// event writes an event of the given type (none when empty) with v as its data.
func (e *sse) event(name string, v any) {
	if e.err != nil {
		return
	}
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		b, e.err = json.Marshal(v)
		if e.err != nil {
			return
		}
	}
	buf := make([]byte, 0, len(name)+len(b)+16)
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	// A stalled client must not hold a slot forever.
	e.rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, e.err = e.w.Write(buf); e.err == nil {
		e.err = e.rc.Flush()
	}
}

// chatStream writes the chunks of one or more answers to one event stream.
type chatStream struct {
	g       *reply // the request's (answer 0)
	out     *sse
	mu      sync.Mutex // the answers write from goroutines of their own
	started bool
	failed  bool
}

// begin sends the headers, once.
func (cs *chatStream) beginLocked() {
	if !cs.started {
		cs.out.begin()
		cs.started = true
	}
}

// send writes answer i's delta (the role with its first one).
func (cs *chatStream) send(i int, first *bool, d delta, lp *choiceLogprobs) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.failed {
		return false
	}
	cs.beginLocked()
	if *first {
		d.Role, *first = "assistant", false
	}
	c := cs.g.chunk(d, nil)
	c.Choices[0].Index, c.Choices[0].Logprobs = i, lp
	cs.out.data(c)
	return cs.out.err == nil
}

// stream produces a streaming answer: OpenAI chat.completion.chunk events
// (the role arrives with each answer's first delta, beside its first text,
// reasoning or tool call: no empty content before a call), a last chunk per
// answer with its finish_reason, then (with stream_options.include_usage)
// a usage chunk, then [DONE]. Headers are sent with the first event, so an
// error before it (context full) is still a plain JSON error with its
// status code.
func (g *reply) stream(ctx context.Context, includeUsage bool) {
	cs := &chatStream{g: g, out: newSSE(g.w)}
	errs := make([]error, max(g.job.n, 1))
	gens := g.choices(ctx, func(i int, c *reply) {
		first := true
		for ev, err := range c.events(ctx) {
			if err != nil {
				errs[i] = err
				return
			}
			var lp *choiceLogprobs
			if c.opts.Logprobs && len(ev.Logprobs) > 0 {
				lp = &choiceLogprobs{Content: wireLogprobs(ev.Logprobs)}
			}
			ok := true
			switch ev.Kind {
			case engine.EventReasoning:
				t := ev.Text
				ok = cs.send(i, &first, delta{ReasoningContent: &t}, lp)
			case engine.EventContent:
				t := ev.Text
				ok = cs.send(i, &first, delta{Content: &t}, lp)
			case engine.EventToolCall:
				call := toWire(*ev.ToolCall)
				idx := len(c.calls)
				c.calls = append(c.calls, call)
				call.Index = &idx
				ok = cs.send(i, &first, delta{ToolCalls: []wireToolCall{call}}, lp)
			case engine.EventToolError:
				c.badCall(ev)
				t := ev.Text
				ok = cs.send(i, &first, delta{Content: &t}, lp)
			}
			if !ok {
				if cs.out.err != nil {
					c.errText = "write: " + cs.out.err.Error()
				}
				return // the client is gone; leaving the loop stops the engine
			}
		}
		if first && c.stats.StopReason != engine.StopCancelled {
			empty := ""
			cs.send(i, &first, delta{Content: &empty}, nil) // an empty answer still has a role
		}
	})
	g.release()
	out := cs.out
	for i, err := range errs {
		if err == nil {
			continue
		}
		e := gens[i].engineError(ctx, err)
		if !g.tell(ctx) {
			return
		}
		if !cs.started {
			g.fail(e)
			return
		}
		out.data(e.body())
		out.data("[DONE]")
		return
	}
	if cs.out.err != nil {
		return
	}
	cs.beginLocked()
	if g.stats.StopReason == engine.StopCancelled {
		if g.s.stopGen.Err() != nil {
			out.data(g.engineError(ctx, context.Canceled).body())
			out.data("[DONE]")
		}
		return
	}
	total := g.usage()
	for i, c := range gens {
		fr := finishReason(c.stats.StopReason, len(c.calls))
		last := g.chunk(delta{}, &fr)
		last.Choices[0].Index = i
		last.Timings = c.timings()
		out.data(last)
		if i > 0 {
			u := c.usage()
			total.CompletionTokens += u.CompletionTokens
			total.TotalTokens += u.CompletionTokens
			total.CompletionTokensDetails.ReasoningTokens += u.CompletionTokensDetails.ReasoningTokens
		}
	}
	if includeUsage {
		c := g.chunk(delta{}, nil)
		c.Choices = []chunkChoice{}
		c.Usage = &total
		out.data(c)
	}
	out.data("[DONE]")
}

func (g *reply) chunk(d delta, finish *string) chunk {
	return chunk{ID: g.id, Object: "chat.completion.chunk", Created: g.created, Model: g.s.engine.ModelName(),
		SystemFingerprint: fingerprint, Choices: []chunkChoice{{Index: 0, Delta: d, FinishReason: finish}}}
}
