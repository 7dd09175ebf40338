package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/smolgo/smolgo/engine"
)

// handleChat serves POST /v1/chat/completions.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	reqID := requestID(ctx)
	if s.draining.Load() {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error",
			Code: "shutting_down", Message: "server is shutting down"})
		return
	}
	var req chatRequest
	if err := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		writeError(w, decodeError(err, s.cfg.MaxBodyBytes))
		return
	}
	job, err := req.validate(&s.cfg, s.engine.ContextLength())
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if ae := s.checkModel(req.Model); ae != nil {
		writeError(w, ae)
		return
	}
	if job.format != nil {
		c, err := s.engine.NewConstraint(job.format)
		if err != nil {
			writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "preparing the constraint: " + err.Error()})
			return
		}
		job.opts.Constraint = c
	}

	// Resources held for the generation (the named session, the slot) are
	// released as soon as the engine is done, before the last bytes of the
	// answer are written: a client that reads [DONE] and sends its next
	// turn at once must find them free.
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
	if req.SessionID != "" {
		named, done, err := s.sessions.acquire(ctx, req.SessionID, s.cfg.SessionWait)
		if err != nil {
			if ctx.Err() != nil {
				return // the client left while waiting
			}
			status, code := http.StatusNotFound, "session_not_found"
			if errors.Is(err, errSessionBusy) {
				status, code = http.StatusConflict, "session_busy"
			}
			writeError(w, &apiError{Status: status, Type: "invalid_request_error", Param: "session_id", Code: code, Message: err.Error()})
			return
		}
		held = append(held, done)
		sess = named
	}

	queued := time.Now()
	slot, err := s.sched.acquire(ctx)
	if err != nil {
		if errors.Is(err, errQueueFull) {
			busy, waiting := s.sched.load(s.cfg.Slots)
			s.log.Warn("queue full", "request_id", reqID, "busy", busy, "queued", waiting)
			writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "queue_full",
				Message: "model busy: all generation slots are in use and the queue is full; retry shortly"})
		}
		return // otherwise the client left while waiting
	}
	held = append(held, func() { s.sched.release(slot) })
	queueWait := time.Since(queued)
	if sess == nil {
		sess = s.slotSession(slot)
	}

	// The generation stops when the client goes away or when shutdown
	// runs out of grace.
	s.inflight.Add(1)
	defer s.inflight.Done()
	genCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopAfter := context.AfterFunc(s.stopGen, cancel)
	defer stopAfter()

	g := &generation{s: s, w: w, req: &req, reqID: reqID, release: release, id: newID("chatcmpl-"), created: time.Now().Unix(), queueWait: queueWait, start: time.Now()}
	if req.Stream {
		g.stream(genCtx, sess, job)
	} else {
		g.complete(genCtx, sess, job)
	}
	st := g.stats
	s.log.Info("chat completion", "request_id", reqID, "stream", req.Stream, "session", req.SessionID,
		"slot", slot, "queue_wait", queueWait.Round(time.Microsecond), "duration", time.Since(g.start).Round(time.Microsecond),
		"prompt_tokens", st.PromptTokens, "cached_tokens", st.CachedTokens, "generated_tokens", st.GeneratedTokens,
		"prefill_tok_s", round1(st.PrefillTokensPerSec), "decode_tok_s", round1(st.DecodeTokensPerSec), "stop", st.StopReason, "error", g.errText)
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

// generation is one chat completion being produced.
type generation struct {
	s         *Server
	w         http.ResponseWriter
	req       *chatRequest
	reqID     string
	id        string
	created   int64
	queueWait time.Duration
	start     time.Time

	release func() // frees the session and slot once the engine is done

	stats     engine.Stats
	reasoning int            // reasoning events
	calls     []wireToolCall // the tool calls so far
	errText   string
}

// engineError maps an error from the engine to an API error.
func (g *generation) engineError(ctx context.Context, err error) *apiError {
	switch {
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

func (g *generation) finish(st *engine.Stats) {
	if st != nil {
		g.stats = *st
	}
	if g.s.stopGen.Err() != nil && g.stats.StopReason == engine.StopCancelled {
		g.errText = "stopped by shutdown"
	}
}

func (g *generation) usage() usage {
	var u usage
	u.PromptTokens = g.stats.PromptTokens
	u.CompletionTokens = g.stats.GeneratedTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = g.stats.CachedTokens
	u.CompletionTokensDetails.ReasoningTokens = g.reasoning
	return u
}

func (g *generation) timings() *timings {
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

// complete produces a non-streaming answer.
func (g *generation) complete(ctx context.Context, sess Session, job *chatJob) {
	var content, reasoning strings.Builder
	var lps []tokenLogprob
	for ev, err := range sess.Generate(ctx, job.msgs, job.opts) {
		if err != nil {
			e := g.engineError(ctx, err)
			g.errText = err.Error()
			if ctx.Err() == nil || g.s.stopGen.Err() != nil {
				writeError(g.w, e)
			}
			return
		}
		if job.opts.Logprobs {
			lps = append(lps, wireLogprobs(ev.Logprobs)...)
		}
		switch ev.Kind {
		case engine.EventReasoning:
			g.reasoning++
			reasoning.WriteString(ev.Text)
		case engine.EventContent:
			content.WriteString(ev.Text)
		case engine.EventToolCall:
			g.calls = append(g.calls, toWire(*ev.ToolCall))
		case engine.EventToolError:
			g.badCall(ev)
			content.WriteString(ev.Text) // nothing the model said is lost
		case engine.EventDone:
			g.finish(ev.Stats)
		}
	}
	g.release()
	if g.stats.StopReason == engine.StopCancelled {
		if g.s.stopGen.Err() != nil {
			writeError(g.w, g.engineError(ctx, context.Canceled))
		}
		return // the client is gone
	}
	msg := responseMessage{Role: "assistant", ToolCalls: g.calls}
	if text := content.String(); text != "" || len(g.calls) == 0 {
		msg.Content = &text
	}
	if reasoning.Len() > 0 {
		r := reasoning.String()
		msg.ReasoningContent = &r
	}
	choice := completionChoice{Index: 0, Message: msg, FinishReason: finishReason(g.stats.StopReason, len(g.calls))}
	if job.opts.Logprobs {
		choice.Logprobs = &choiceLogprobs{Content: lps}
	}
	writeJSON(g.w, http.StatusOK, completion{
		ID: g.id, Object: "chat.completion", Created: g.created, Model: g.s.engine.ModelName(),
		SystemFingerprint: fingerprint,
		Choices:           []completionChoice{choice},
		Usage:             g.usage(), Timings: g.timings(),
	})
}

// badCall logs a tool call the model wrote but that could not be read; it
// is returned as text.
func (g *generation) badCall(ev engine.Event) {
	g.s.log.Warn("unreadable tool call returned as text", "request_id", g.reqID, "error", ev.Err)
}

const fingerprint = "smolgo"

// sse writes Server-Sent Events, flushing each one.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func (e *sse) data(v any) {
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
	buf := make([]byte, 0, len(b)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	// A stalled client must not hold a slot forever.
	e.rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, e.err = e.w.Write(buf); e.err == nil {
		e.err = e.rc.Flush()
	}
}

// stream produces a streaming answer: OpenAI chat.completion.chunk events,
// then (with stream_options.include_usage) a usage chunk, then [DONE].
// Headers are sent with the first event, so an error before it (context
// full) is still a plain JSON error with its status code.
func (g *generation) stream(ctx context.Context, sess Session, job *chatJob) {
	out := &sse{w: g.w, rc: http.NewResponseController(g.w)}
	started := false
	begin := func() {
		h := g.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		g.w.WriteHeader(http.StatusOK)
		started = true
		empty := ""
		out.data(g.chunk(delta{Role: "assistant", Content: &empty}, nil))
	}
	includeUsage := g.req.StreamOptions != nil && g.req.StreamOptions.IncludeUsage
	for ev, err := range sess.Generate(ctx, job.msgs, job.opts) {
		if err != nil {
			e := g.engineError(ctx, err)
			g.errText = err.Error()
			if !started {
				if ctx.Err() == nil || g.s.stopGen.Err() != nil {
					writeError(g.w, e)
				}
				return
			}
			if ctx.Err() == nil || g.s.stopGen.Err() != nil {
				out.data(e.body())
				out.data("[DONE]")
			}
			return
		}
		if !started {
			begin()
		}
		var lp *choiceLogprobs
		if job.opts.Logprobs && len(ev.Logprobs) > 0 {
			lp = &choiceLogprobs{Content: wireLogprobs(ev.Logprobs)}
		}
		switch ev.Kind {
		case engine.EventReasoning:
			g.reasoning++
			t := ev.Text
			out.data(g.chunkLP(delta{ReasoningContent: &t}, lp))
		case engine.EventContent:
			t := ev.Text
			out.data(g.chunkLP(delta{Content: &t}, lp))
		case engine.EventToolCall:
			c := toWire(*ev.ToolCall)
			idx := len(g.calls)
			g.calls = append(g.calls, c)
			c.Index = &idx
			out.data(g.chunkLP(delta{ToolCalls: []wireToolCall{c}}, lp))
		case engine.EventToolError:
			g.badCall(ev)
			t := ev.Text
			out.data(g.chunkLP(delta{Content: &t}, lp))
		case engine.EventDone:
			g.finish(ev.Stats)
		}
		if out.err != nil {
			g.errText = "write: " + out.err.Error()
			return // the client is gone; leaving the loop stops the engine
		}
	}
	g.release()
	if !started {
		begin()
	}
	if g.stats.StopReason == engine.StopCancelled {
		if g.s.stopGen.Err() != nil {
			out.data(g.engineError(ctx, context.Canceled).body())
			out.data("[DONE]")
		}
		return
	}
	fr := finishReason(g.stats.StopReason, len(g.calls))
	last := g.chunk(delta{}, &fr)
	last.Timings = g.timings()
	out.data(last)
	if includeUsage {
		u := g.usage()
		c := g.chunk(delta{}, nil)
		c.Choices = []chunkChoice{}
		c.Usage = &u
		out.data(c)
	}
	out.data("[DONE]")
}

// chunkLP is a chunk with a delta and its tokens' log-probabilities.
func (g *generation) chunkLP(d delta, lp *choiceLogprobs) chunk {
	c := g.chunk(d, nil)
	c.Choices[0].Logprobs = lp
	return c
}

func (g *generation) chunk(d delta, finish *string) chunk {
	return chunk{ID: g.id, Object: "chat.completion.chunk", Created: g.created, Model: g.s.engine.ModelName(),
		SystemFingerprint: fingerprint, Choices: []chunkChoice{{Index: 0, Delta: d, FinishReason: finish}}}
}
