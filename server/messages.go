package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/smolgo/smolgo/engine"
)

// This file serves Anthropic's Messages API (POST /v1/messages), which the
// Anthropic SDKs and Claude Code speak. A request is translated into a chat
// request and validated the chat endpoint's way; the answer comes back as
// content blocks (thinking, text, tool_use), streamed as message_start,
// content_block_start/delta/stop, message_delta and message_stop events.
// Errors have Anthropic's shape: {"type": "error", "error": {"type", "message"}}.

// messagesRequest is the body of POST /v1/messages (and, without
// max_tokens, of /v1/messages/count_tokens). Fields not listed (metadata,
// service_tier, context_management, output_config, ...) are accepted and
// ignored.
type messagesRequest struct {
	Model         string             `json:"model"`
	MaxTokens     *int               `json:"max_tokens"`
	Messages      []anthropicMessage `json:"messages"`
	System        json.RawMessage    `json:"system"`
	StopSequences []string           `json:"stop_sequences"`
	Stream        bool               `json:"stream"`
	Temperature   *float64           `json:"temperature"`
	TopP          *float64           `json:"top_p"`
	TopK          *int               `json:"top_k"`
	Tools         json.RawMessage    `json:"tools"`
	ToolChoice    json.RawMessage    `json:"tool_choice"`
	Thinking      *struct {
		Type string `json:"type"` // enabled, disabled, adaptive
	} `json:"thinking"`
	SessionID string `json:"session_id"` // smolgo extension, as on the chat endpoint
	// Metadata.UserID is a hint of prefix affinity, as user is on OpenAI's
	// endpoints.
	Metadata struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is a content block of a request; which fields matter
// depends on Type.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    json.RawMessage `json:"source"`
}

// anthropicErrorBody is Anthropic's error shape.
func anthropicErrorBody(e *apiError) any {
	typ := "api_error"
	switch e.Status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusConflict:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ = "authentication_error"
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case http.StatusServiceUnavailable:
		typ = "overloaded_error"
	}
	msg := e.Message
	if e.Param != "" && !strings.Contains(msg, e.Param) {
		msg = e.Param + ": " + msg
	}
	return map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
}

// validate checks the request and converts it to engine messages and
// options; counting tokens (count_tokens) needs no max_tokens.
func (req *messagesRequest) validate(s *Server, counting bool) (*chatJob, *apiError) {
	cfg := &s.cfg
	if req.MaxTokens == nil && !counting {
		return nil, badRequest("max_tokens", "max_tokens is required")
	}
	if len(req.Messages) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty array")
	}
	job := &chatJob{}
	if len(req.System) > 0 && string(req.System) != "null" {
		sys, ae := textContent(req.System, "system", "text")
		if ae != nil {
			return nil, ae
		}
		job.msgs = append(job.msgs, engine.Message{Role: "system", Content: sys})
	}
	for i, m := range req.Messages {
		msgs, ae := m.toEngine(i)
		if ae != nil {
			return nil, ae
		}
		job.msgs = append(job.msgs, msgs...)
	}
	job.msgs = foldSystem(job.msgs)
	if ae := job.checkSize(cfg, "messages"); ae != nil {
		return nil, ae
	}
	tools, ignored, ae := anthropicTools(req.Tools)
	if ae != nil {
		return nil, ae
	}
	if len(ignored) > 0 {
		s.log.Info("messages: server tools are ignored", "tools", ignored)
	}
	choice, parallel, ae := anthropicToolChoice(req.ToolChoice, tools)
	if ae != nil {
		return nil, ae
	}
	job.useTools(tools, choice, parallel, nil, s.syntax, "tools")
	opts := &job.opts
	if !counting {
		if opts.MaxTokens, ae = limitTokens(req.MaxTokens, "max_tokens"); ae != nil {
			return nil, ae
		}
	}
	if opts.Sampler, ae = (&sampling{Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK}).sampler(cfg); ae != nil {
		return nil, ae
	}
	if len(req.StopSequences) > maxStopStrings {
		return nil, badRequest("stop_sequences", "stop_sequences has %d strings; at most %d are allowed", len(req.StopSequences), maxStopStrings)
	}
	for _, st := range req.StopSequences {
		if st != "" {
			opts.Stop = append(opts.Stop, st)
		}
	}
	// Anthropic's models think only when asked to.
	think := false
	if req.Thinking != nil {
		switch req.Thinking.Type {
		case "enabled", "adaptive":
			think = true
		case "disabled":
		default:
			return nil, badRequest("thinking.type", "thinking.type %q is not supported (use enabled, adaptive or disabled)", req.Thinking.Type)
		}
	}
	opts.Thinking = &think
	opts.ParseSpecial = cfg.ParseSpecialTokens
	opts.DropOldest = req.SessionID != ""
	return job, nil
}

// anthropicTools reads client tools ({"name", "description",
// "input_schema"}, with no type or type "custom"); server tools (a type
// such as "web_search_20250305" or "bash_20250124") run on Anthropic's side,
// so they are ignored and returned by type.
func anthropicTools(raw json.RawMessage) (tools []toolDef, ignored []string, ae *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var list []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, badRequest("tools", "tools must be an array of tools")
	}
	for i, t := range list {
		if t.Type != "" && t.Type != "custom" {
			ignored = append(ignored, t.Type)
			continue
		}
		if t.Name == "" {
			return nil, nil, badRequest(fmt.Sprintf("tools[%d].name", i), "tools[%d]: a tool needs a name", i)
		}
		tools = append(tools, toolDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	if len(tools) > maxTools {
		return nil, nil, badRequest("tools", "tools has %d entries; at most %d are allowed", len(tools), maxTools)
	}
	return tools, ignored, nil
}

// toEngine converts message i: tool_result blocks become tool messages
// (before the user's text), tool_use blocks the assistant's tool calls,
// thinking blocks its reasoning. A "system" message (Claude Code sends
// reminders that way, although the API has no such role) is accepted and
// folded like the others (foldSystem).
func (m *anthropicMessage) toEngine(i int) ([]engine.Message, *apiError) {
	param := fmt.Sprintf("messages[%d]", i)
	if m.Role != "user" && m.Role != "assistant" && m.Role != "system" {
		return nil, badRequest(param+".role", "%s.role %q is not supported (use user or assistant)", param, m.Role)
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []engine.Message{{Role: m.Role, Content: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return nil, badRequest(param+".content", "%s.content must be a string or an array of content blocks", param)
	}
	var out []engine.Message
	msg := engine.Message{Role: m.Role}
	var text strings.Builder
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.content[%d]", param, j)
		switch {
		case b.Type == "text":
			text.WriteString(b.Text)
		case b.Type == "image":
			img, ae := anthropicImage(b.Source, bp)
			if ae != nil {
				return nil, ae
			}
			msg.Images = append(msg.Images, img)
			text.WriteString(engine.ImageMarker)
		case b.Type == "thinking" && m.Role == "assistant":
			msg.ReasoningContent += b.Thinking
		case b.Type == "redacted_thinking" && m.Role == "assistant":
		case b.Type == "tool_use" && m.Role == "assistant":
			if b.ID == "" || b.Name == "" {
				return nil, badRequest(bp, "%s: a tool_use block needs id and name", bp)
			}
			args := bytes.TrimSpace(b.Input)
			if len(args) == 0 || string(args) == "null" {
				args = []byte("{}")
			}
			if args[0] != '{' || !json.Valid(args) {
				return nil, badRequest(bp+".input", "%s.input must be an object", bp)
			}
			msg.ToolCalls = append(msg.ToolCalls, engine.ToolCall{ID: b.ID, Name: b.Name, Arguments: json.RawMessage(args)})
		case b.Type == "tool_result" && m.Role == "user":
			if b.ToolUseID == "" {
				return nil, badRequest(bp, "%s: a tool_result block needs tool_use_id", bp)
			}
			result := ""
			if len(b.Content) > 0 && string(b.Content) != "null" {
				var ae *apiError
				if result, ae = textContent(b.Content, bp+".content", "text"); ae != nil {
					return nil, ae
				}
			}
			if b.IsError {
				result = "Error: " + result
			}
			out = append(out, engine.Message{Role: "tool", ToolCallID: b.ToolUseID, Content: result})
		default:
			return nil, badRequest(bp+".type", "%s: block type %q is not supported in a %s message", bp, b.Type, m.Role)
		}
	}
	if text.Len() > 0 || len(msg.ToolCalls) > 0 || msg.ReasoningContent != "" || len(out) == 0 || len(msg.Images) > 0 {
		msg.Content = text.String()
		out = append(out, msg)
	}
	return out, nil
}

// anthropicToolChoice reads tool_choice ({"type": auto|any|tool|none},
// disable_parallel_tool_use); parallel reports whether several calls may
// come in one turn.
func anthropicToolChoice(raw json.RawMessage, tools []toolDef) (tc toolChoice, parallel bool, ae *apiError) {
	parallel = true
	if len(raw) == 0 || string(raw) == "null" {
		return tc, parallel, nil
	}
	var c struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return tc, parallel, badRequest("tool_choice", "tool_choice must be an object with a type")
	}
	parallel = !c.DisableParallelToolUse
	switch c.Type {
	case "auto":
	case "none":
		tc.mode = toolNone
	case "any":
		if len(tools) == 0 {
			return tc, parallel, badRequest("tool_choice", "tool_choice any needs tools")
		}
		tc.mode = toolRequired
	case "tool":
		if c.Name == "" {
			return tc, parallel, badRequest("tool_choice.name", "tool_choice of type tool needs a name")
		}
		if !hasTool(tools, c.Name) {
			return tc, parallel, badRequest("tool_choice.name", "tool_choice names tool %q, which is not in tools", c.Name)
		}
		tc = toolChoice{mode: toolNamed, name: c.Name}
	default:
		return tc, parallel, badRequest("tool_choice.type", "tool_choice.type %q is not supported (use auto, any, tool or none)", c.Type)
	}
	return tc, parallel, nil
}

// handleMessages serves POST /v1/messages.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	fail := func(e *apiError) { writeErrorAs(w, e, anthropicErrorBody) }
	var req messagesRequest
	if !s.readRequest(w, r, &req, anthropicErrorBody) {
		return
	}
	job, ae := req.validate(s, false)
	if ae == nil {
		ae = s.checkModel(req.Model)
	}
	if ae != nil {
		fail(ae)
		return
	}
	s.runJob(w, r, jobRun{endpoint: "messages", idPrefix: "msg_", sessionID: req.SessionID, affinity: req.Metadata.UserID, stream: req.Stream, job: job, errBody: anthropicErrorBody},
		func(ctx context.Context, g *reply) {
			ms := &messageStream{g: g}
			if req.Stream {
				ms.out = newSSE(g.w)
			}
			ms.run(ctx)
		})
}

// handleCountTokens serves POST /v1/messages/count_tokens: the prompt the
// request would make, tools and system included, in tokens.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	fail := func(e *apiError) { writeErrorAs(w, e, anthropicErrorBody) }
	var req messagesRequest
	if !s.readRequest(w, r, &req, anthropicErrorBody) {
		return
	}
	job, ae := req.validate(s, true)
	if ae == nil {
		ae = s.checkModel(req.Model)
	}
	if ae != nil {
		fail(ae)
		return
	}
	s.withSlot(w, r, anthropicErrorBody, func(context.Context) {
		ids, ae := s.promptOf(job)
		if ae != nil {
			fail(ae)
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": len(ids)})
	})
}

// contentBlock is a block of the answer.
type contentBlock struct {
	Type      string          `json:"type"` // thinking, text, tool_use
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

type anthropicMessageObject struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"` // "message"
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []*contentBlock `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        anthropicUsage  `json:"usage"`
}

// messageStream turns a generation's events into content blocks, and when
// out is set streams them as Anthropic's events.
type messageStream struct {
	g       *reply
	out     *sse
	started bool
	msg     anthropicMessageObject
	open    *contentBlock // the thinking or text block being written
}

func (ms *messageStream) emit(typ string, fields map[string]any) {
	if ms.out == nil {
		return
	}
	if !ms.started {
		ms.started = true
		ms.out.begin()
		start := ms.msg
		start.Content = []*contentBlock{} // blocks come after
		ms.emit("message_start", map[string]any{"message": start})
	}
	fields["type"] = typ
	ms.out.event(typ, fields)
}

func (ms *messageStream) index() int { return len(ms.msg.Content) - 1 }

// add starts a block.
func (ms *messageStream) add(b *contentBlock) {
	ms.closeOpen()
	ms.msg.Content = append(ms.msg.Content, b)
	start := *b
	if b.Type == "tool_use" {
		start.Input = json.RawMessage("{}")
	}
	ms.emit("content_block_start", map[string]any{"index": ms.index(), "content_block": start})
}

func (ms *messageStream) closeOpen() {
	if ms.open != nil {
		ms.open = nil
		ms.emit("content_block_stop", map[string]any{"index": ms.index()})
	}
}

// text adds a piece of thinking or text.
func (ms *messageStream) text(kind engine.EventKind, t string) {
	typ, deltaType, field := "text", "text_delta", "text"
	if kind == engine.EventReasoning {
		typ, deltaType, field = "thinking", "thinking_delta", "thinking"
	}
	if ms.open == nil || ms.open.Type != typ {
		empty, sig := "", ""
		b := &contentBlock{Type: typ}
		if typ == "text" {
			b.Text = &empty
		} else {
			b.Thinking, b.Signature = &empty, &sig
		}
		ms.add(b)
		ms.open = b
	}
	if typ == "text" {
		*ms.open.Text += t
	} else {
		*ms.open.Thinking += t
	}
	ms.emit("content_block_delta", map[string]any{"index": ms.index(), "delta": map[string]string{"type": deltaType, field: t}})
}

// call adds a tool_use block.
func (ms *messageStream) call(c engine.ToolCall) {
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	b := &contentBlock{Type: "tool_use", ID: newID("toolu_"), Name: c.Name, Input: args}
	ms.add(b)
	ms.emit("content_block_delta", map[string]any{"index": ms.index(), "delta": map[string]string{"type": "input_json_delta", "partial_json": string(args)}})
	ms.emit("content_block_stop", map[string]any{"index": ms.index()})
}

func (ms *messageStream) run(ctx context.Context) {
	g := ms.g
	ms.msg = anthropicMessageObject{ID: g.id, Type: "message", Role: "assistant", Model: g.s.engine.ModelName(), Content: []*contentBlock{}}
	// message_start, sent with the first event, says how long the prompt
	// is: the engine tells before the first token.
	g.promptReady = func(prompt, cached int) {
		ms.msg.Usage.InputTokens, ms.msg.Usage.CacheReadInputTokens = prompt-cached, cached
	}
	calls := 0
	for ev, err := range g.events(ctx) {
		if err != nil {
			ms.failed(ctx, g.engineError(ctx, err))
			return
		}
		switch ev.Kind {
		case engine.EventReasoning, engine.EventContent:
			ms.text(ev.Kind, ev.Text)
		case engine.EventToolCall:
			calls++
			ms.call(*ev.ToolCall)
		case engine.EventToolError:
			g.badCall(ev)
			ms.text(engine.EventContent, ev.Text)
		}
		if ms.out != nil && ms.out.err != nil {
			g.errText = "write: " + ms.out.err.Error()
			return
		}
	}
	g.release()
	if g.stats.StopReason == engine.StopCancelled {
		if g.s.stopGen.Err() != nil {
			ms.failed(ctx, g.engineError(ctx, context.Canceled))
		}
		return
	}
	ms.closeOpen()
	stop := "end_turn"
	var seq *string
	switch {
	case g.stats.StopReason == engine.StopLength:
		stop = "max_tokens"
	case calls > 0 || g.stats.StopReason == engine.StopToolCalls:
		stop = "tool_use"
	case g.stats.StopString != "":
		stop, seq = "stop_sequence", &g.stats.StopString
	}
	ms.msg.StopReason, ms.msg.StopSequence = &stop, seq
	st := g.stats
	ms.msg.Usage = anthropicUsage{InputTokens: st.PromptTokens - st.CachedTokens, OutputTokens: st.GeneratedTokens, CacheReadInputTokens: st.CachedTokens}
	if ms.out == nil {
		writeJSON(g.w, http.StatusOK, ms.msg)
		return
	}
	ms.emit("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": seq}, "usage": ms.msg.Usage})
	ms.emit("message_stop", map[string]any{})
}

// failed reports an error: a JSON error before the stream started, else an
// error event.
func (ms *messageStream) failed(ctx context.Context, e *apiError) {
	g := ms.g
	if !g.tell(ctx) {
		return
	}
	if ms.out == nil || !ms.started {
		g.fail(e)
		return
	}
	ms.out.event("error", anthropicErrorBody(e))
}
