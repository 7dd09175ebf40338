package server

import (
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

// messagesRequest is the body of POST /v1/messages. Fields not listed
// (metadata, service_tier, ...) are accepted and ignored.
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

// chat translates the request into the chat endpoint's form.
func (req *messagesRequest) chat() (*chatRequest, error) {
	if req.MaxTokens == nil {
		return nil, badRequest("max_tokens", "max_tokens is required")
	}
	if len(req.Messages) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty array")
	}
	c := &chatRequest{Model: req.Model, Stream: req.Stream, SessionID: req.SessionID}
	c.MaxTokens, c.Temperature, c.TopP, c.TopK = req.MaxTokens, req.Temperature, req.TopP, req.TopK
	if len(req.StopSequences) > 0 {
		c.Stop, _ = json.Marshal(req.StopSequences)
	}
	if len(req.System) > 0 && string(req.System) != "null" {
		sys, err := anthropicText(req.System, "system")
		if err != nil {
			return nil, err
		}
		c.Messages = append(c.Messages, chatMessage{Role: "system", Content: jsonString(sys)})
	}
	for i, m := range req.Messages {
		msgs, err := m.chat(i)
		if err != nil {
			return nil, err
		}
		c.Messages = append(c.Messages, msgs...)
	}
	var err error
	if c.Tools, err = flatTools(req.Tools, func(typ string) bool { return typ == "" || typ == "custom" },
		`client tools ({"name": …, "input_schema": …})`); err != nil {
		return nil, err
	}
	if c.ToolChoice, c.ParallelToolCalls, err = anthropicToolChoice(req.ToolChoice); err != nil {
		return nil, err
	}
	// Anthropic's models think only when asked to.
	think := req.Thinking != nil && req.Thinking.Type != "disabled"
	if req.Thinking != nil && !map[string]bool{"enabled": true, "disabled": true, "adaptive": true}[req.Thinking.Type] {
		return nil, badRequest("thinking.type", "thinking.type %q is not supported (use enabled or disabled)", req.Thinking.Type)
	}
	c.ChatTemplateKwargs.EnableThinking = &think
	return c, nil
}

// anthropicText reads a string or an array of text blocks.
func anthropicText(raw json.RawMessage, param string) (string, error) {
	return textContent(raw, param, "text")
}

// chat converts message i: tool_result blocks become tool messages (before
// the user's text), tool_use blocks the assistant's tool calls, thinking
// blocks its reasoning.
func (m *anthropicMessage) chat(i int) ([]chatMessage, error) {
	param := fmt.Sprintf("messages[%d]", i)
	if m.Role != "user" && m.Role != "assistant" {
		return nil, badRequest(param+".role", "%s.role %q is not supported (use user or assistant)", param, m.Role)
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []chatMessage{{Role: m.Role, Content: jsonString(s)}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return nil, badRequest(param+".content", "%s.content must be a string or an array of content blocks", param)
	}
	var out []chatMessage
	msg := chatMessage{Role: m.Role}
	var text strings.Builder
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.content[%d]", param, j)
		switch {
		case b.Type == "text":
			text.WriteString(b.Text)
		case b.Type == "thinking" && m.Role == "assistant":
			msg.ReasoningContent += b.Thinking
		case b.Type == "redacted_thinking" && m.Role == "assistant":
		case b.Type == "tool_use" && m.Role == "assistant":
			if b.ID == "" || b.Name == "" {
				return nil, badRequest(bp, "%s: a tool_use block needs id and name", bp)
			}
			c := wireToolCall{ID: b.ID, Type: "function"}
			c.Function.Name, c.Function.Arguments = b.Name, string(b.Input)
			msg.ToolCalls = append(msg.ToolCalls, c)
		case b.Type == "tool_result" && m.Role == "user":
			if b.ToolUseID == "" {
				return nil, badRequest(bp, "%s: a tool_result block needs tool_use_id", bp)
			}
			result := ""
			if len(b.Content) > 0 && string(b.Content) != "null" {
				var err error
				if result, err = anthropicText(b.Content, bp+".content"); err != nil {
					return nil, err
				}
			}
			if b.IsError {
				result = "Error: " + result
			}
			out = append(out, chatMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: jsonString(result)})
		default:
			return nil, badRequest(bp+".type", "%s: block type %q is not supported in a %s message", bp, b.Type, m.Role)
		}
	}
	if text.Len() > 0 || len(msg.ToolCalls) > 0 || msg.ReasoningContent != "" || len(out) == 0 {
		msg.Content = jsonString(text.String())
		out = append(out, msg)
	}
	return out, nil
}

// anthropicToolChoice converts tool_choice ({"type": auto|any|tool|none},
// disable_parallel_tool_use) to the chat form.
func anthropicToolChoice(raw json.RawMessage) (json.RawMessage, *bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if err := json.Unmarshal(raw, &tc); err != nil {
		return nil, nil, badRequest("tool_choice", "tool_choice must be an object with a type")
	}
	var parallel *bool
	if tc.DisableParallelToolUse {
		f := false
		parallel = &f
	}
	switch tc.Type {
	case "auto", "none":
		return jsonString(tc.Type), parallel, nil
	case "any":
		return jsonString("required"), parallel, nil
	case "tool":
		if tc.Name == "" {
			return nil, nil, badRequest("tool_choice.name", "tool_choice of type tool needs a name")
		}
		b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}})
		return b, parallel, nil
	}
	return nil, nil, badRequest("tool_choice.type", "tool_choice.type %q is not supported (use auto, any, tool or none)", tc.Type)
}

// handleMessages serves POST /v1/messages.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	fail := func(e *apiError) { writeErrorAs(w, e, anthropicErrorBody) }
	var req messagesRequest
	if !s.readRequest(w, r, &req, anthropicErrorBody) {
		return
	}
	if ae := s.checkModel(req.Model); ae != nil {
		fail(ae)
		return
	}
	chat, err := req.chat()
	if err != nil {
		fail(err.(*apiError))
		return
	}
	job, err := chat.validate(&s.cfg, s.engine.ContextLength())
	if err != nil {
		fail(err.(*apiError))
		return
	}
	s.runJob(w, r, jobRun{endpoint: "messages", idPrefix: "msg_", sessionID: req.SessionID, stream: req.Stream, job: job, errBody: anthropicErrorBody},
		func(ctx context.Context, g *generation) {
			ms := &messageStream{g: g}
			if req.Stream {
				ms.out = newSSE(g.w)
			}
			ms.run(ctx)
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
	g       *generation
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
