package server

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/smolgo/smolgo/engine"
)

// This file serves OpenAI's Responses API (POST /v1/responses, GET and
// DELETE /v1/responses/{id}): what @ai-sdk/openai's default model and the
// openai SDKs' client.responses call. A request is translated into a chat
// request and validated the chat endpoint's way; its answer comes back as
// output items (reasoning, message, function_call), streamed as the API's
// typed events. Responses are stored (unless "store": false) for
// previous_response_id, in a store bounded by count and bytes.

// responsesRequest is the body of POST /v1/responses. Fields not listed
// (user, truncation, include, ...) are accepted and ignored.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	Stream             bool            `json:"stream"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	PreviousResponseID string          `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Metadata           json.RawMessage `json:"metadata"`
	Text               *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
	Reasoning *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	} `json:"reasoning"`
	SessionID string `json:"session_id"` // smolgo extension, as on the chat endpoint
}

// respItem is an input item; which fields matter depends on Type.
type respItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// chat translates the request into the chat endpoint's form.
func (req *responsesRequest) chat() (*chatRequest, error) {
	c := &chatRequest{Model: req.Model, Stream: req.Stream, ParallelToolCalls: req.ParallelToolCalls, SessionID: req.SessionID}
	c.Temperature, c.TopP, c.MaxTokens = req.Temperature, req.TopP, req.MaxOutputTokens
	if req.Instructions != "" {
		c.Messages = append(c.Messages, chatMessage{Role: "system", Content: jsonString(req.Instructions)})
	}
	msgs, err := responseItems(req.Input)
	if err != nil {
		return nil, err
	}
	c.Messages = append(c.Messages, msgs...)
	if c.Tools, err = flatTools(req.Tools, func(typ string) bool { return typ == "function" },
		`{"type": "function", "name": …, "parameters": …} tools`); err != nil {
		return nil, err
	}
	if len(req.ToolChoice) > 0 && req.ToolChoice[0] == '{' {
		var tc struct{ Type, Name string }
		if err := json.Unmarshal(req.ToolChoice, &tc); err != nil || tc.Type != "function" || tc.Name == "" {
			return nil, badRequest("tool_choice", `tool_choice must be "auto", "none", "required" or {"type": "function", "name": …}`)
		}
		c.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}})
	} else {
		c.ToolChoice = req.ToolChoice
	}
	if req.Text != nil && len(req.Text.Format) > 0 && string(req.Text.Format) != "null" {
		var f struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(req.Text.Format, &f); err != nil {
			return nil, badRequest("text.format", "text.format must be an object with a type")
		}
		rf := map[string]any{"type": f.Type}
		if f.Type == "json_schema" {
			rf["json_schema"] = map[string]any{"name": f.Name, "schema": f.Schema}
		}
		c.ResponseFormat, _ = json.Marshal(rf)
	}
	if req.Reasoning != nil {
		c.ReasoningEffort = req.Reasoning.Effort
	}
	return c, nil
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// responseItems converts input: a string (one user message) or an array of
// items. Function calls join the assistant message before them; reasoning
// items become the next assistant message's reasoning.
func responseItems(raw json.RawMessage) ([]chatMessage, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []chatMessage{{Role: "user", Content: jsonString(text)}}, nil
	}
	var items []respItem
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, badRequest("input", "input must be a string or a non-empty array of items")
	}
	var out []chatMessage
	reasoning := ""
	lastAssistant := func() *chatMessage {
		if n := len(out); n > 0 && out[n-1].Role == "assistant" {
			return &out[n-1]
		}
		out = append(out, chatMessage{Role: "assistant", ReasoningContent: reasoning})
		reasoning = ""
		return &out[len(out)-1]
	}
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "message", "":
			content, err := responseContent(it.Content, param)
			if err != nil {
				return nil, err
			}
			m := chatMessage{Role: it.Role, Content: content}
			if it.Role == "assistant" {
				m.ReasoningContent, reasoning = reasoning, ""
			}
			out = append(out, m)
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, badRequest(param, "%s: a function_call item needs call_id and name", param)
			}
			a := lastAssistant()
			c := wireToolCall{ID: it.CallID, Type: "function"}
			c.Function.Name, c.Function.Arguments = it.Name, it.Arguments
			a.ToolCalls = append(a.ToolCalls, c)
		case "function_call_output":
			if it.CallID == "" {
				return nil, badRequest(param, "%s: a function_call_output item needs call_id", param)
			}
			content, err := responseContent(it.Output, param+".output")
			if err != nil {
				return nil, err
			}
			out = append(out, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: content})
		case "reasoning":
			for _, s := range it.Summary {
				reasoning += s.Text
			}
			var parts []struct{ Text string }
			if json.Unmarshal(it.Content, &parts) == nil {
				for _, p := range parts {
					reasoning += p.Text
				}
			}
		default:
			return nil, badRequest(param+".type", "%s: item type %q is not supported (use message, function_call, function_call_output or reasoning)", param, it.Type)
		}
	}
	return out, nil
}

// responseContent reads an item's content (a string or an array of text
// parts) as the chat endpoint's string content.
func responseContent(raw json.RawMessage, param string) (json.RawMessage, error) {
	text, err := textContent(raw, param, "input_text", "output_text", "text")
	if err != nil {
		return nil, err
	}
	return jsonString(text), nil
}

// flatTools converts tools written flat ({"type", "name", "description",
// and "parameters" or Anthropic's "input_schema"}) to the chat form
// ({"type": "function", "function": {...}}); ok says which types are
// accepted and what, in an error, names them.
func flatTools(raw json.RawMessage, ok func(typ string) bool, what string) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, badRequest("tools", "tools must be an array of tools")
	}
	out := make([]map[string]any, len(tools))
	for i, t := range tools {
		if !ok(t.Type) || t.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d]: only %s are supported", i, what)
		}
		f := map[string]any{"name": t.Name, "description": t.Description}
		if len(t.Parameters) > 0 {
			f["parameters"] = t.Parameters
		} else if len(t.InputSchema) > 0 {
			f["parameters"] = t.InputSchema
		}
		out[i] = map[string]any{"type": "function", "function": f}
	}
	b, _ := json.Marshal(out)
	return b, nil
}

// handleResponses serves POST /v1/responses.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if !s.readRequest(w, r, &req, nil) {
		return
	}
	if ae := s.checkModel(req.Model); ae != nil {
		writeError(w, ae)
		return
	}
	chat, err := req.chat()
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	job, err := chat.validate(&s.cfg, s.engine.ContextLength())
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	// The stored conversation goes after this request's instructions (the
	// previous response's instructions are not carried over).
	var history []engine.Message
	if req.PreviousResponseID != "" {
		prev, ok := s.stored.get(req.PreviousResponseID)
		if !ok {
			writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "previous_response_id",
				Code: "previous_response_not_found", Message: "previous response " + req.PreviousResponseID + " not found (it may have been evicted, or was made with store: false)"})
			return
		}
		sys := 0
		if len(job.msgs) > 0 && job.msgs[0].Role == "system" {
			sys = 1
		}
		history = prev.conversation
		job.msgs = append(append(job.msgs[:sys:sys], history...), job.msgs[sys:]...)
		if n := messagesBytes(job.msgs); n > s.cfg.MaxPromptBytes {
			writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "previous_response_id",
				Code: "context_length_exceeded", Message: fmt.Sprintf("the conversation is %d bytes of text; this server accepts at most %d", n, s.cfg.MaxPromptBytes)})
			return
		}
	}
	summary := req.Reasoning != nil && req.Reasoning.Summary != ""
	s.runJob(w, r, jobRun{endpoint: "responses", idPrefix: "resp_", sessionID: req.SessionID, stream: req.Stream, job: job},
		func(ctx context.Context, g *generation) {
			rs := &responseStream{g: g, req: &req, summary: summary}
			if req.Stream {
				rs.out = newSSE(g.w)
			}
			resp := rs.run(ctx)
			if resp == nil || req.Store != nil && !*req.Store {
				return
			}
			conv := job.msgs
			if len(conv) > 0 && conv[0].Role == "system" {
				conv = conv[1:]
			}
			s.stored.put(resp.ID, storedResponse{conversation: append(conv[:len(conv):len(conv)], rs.answer()...), response: resp})
		})
}

// messagesBytes is the text of a conversation, as MaxPromptBytes counts it.
func messagesBytes(msgs []engine.Message) int {
	total := 0
	for _, m := range msgs {
		total += len(m.Content) + len(m.ReasoningContent)
		for _, c := range m.ToolCalls {
			total += len(c.Name) + len(c.Arguments)
		}
	}
	return total
}

// --- the response object and its items ---

type responseObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"` // "response"
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"` // in_progress, completed, incomplete, failed
	Model              string          `json:"model"`
	Output             []*outputItem   `json:"output"`
	Usage              *responseUsage  `json:"usage"`
	Error              *responseError  `json:"error"`
	IncompleteDetails  *incomplete     `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	Metadata           json.RawMessage `json:"metadata"`
	Store              bool            `json:"store"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// outputItem is an output item: a reasoning, message or function_call.
type outputItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status,omitempty"`
	// message
	Role    string        `json:"role,omitempty"`
	Content []contentPart `json:"content,omitempty"`
	// reasoning (Summary is always present on reasoning items)
	Summary *[]contentPart `json:"summary,omitempty"`
	// function_call
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
}

type contentPart struct {
	Type        string `json:"type"` // output_text, reasoning_text, summary_text
	Text        string `json:"text"`
	Annotations *[]any `json:"annotations,omitempty"` // output_text only
	Logprobs    *[]any `json:"logprobs,omitempty"`    // output_text only
}

// responseStream turns a generation's events into output items, and when
// out is set streams them as the API's events.
type responseStream struct {
	g       *generation
	req     *responsesRequest
	summary bool // reasoning as summary_text parts (the request asked for a summary)
	out     *sse
	seq     int
	started bool

	resp *responseObject
	open *outputItem // the reasoning or message item being written
}

func (rs *responseStream) object(status string) *responseObject {
	if rs.resp == nil {
		req := rs.req
		rs.resp = &responseObject{ID: rs.g.id, Object: "response", CreatedAt: rs.g.created, Model: rs.g.s.engine.ModelName(),
			Output: []*outputItem{}, MaxOutputTokens: req.MaxOutputTokens, Temperature: req.Temperature, TopP: req.TopP,
			ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
			ToolChoice:        rawOr(req.ToolChoice, `"auto"`), Tools: rawOr(req.Tools, `[]`), Metadata: rawOr(req.Metadata, `{}`),
			Store: req.Store == nil || *req.Store}
		if req.Instructions != "" {
			rs.resp.Instructions = &req.Instructions
		}
		if req.PreviousResponseID != "" {
			rs.resp.PreviousResponseID = &req.PreviousResponseID
		}
	}
	rs.resp.Status = status
	return rs.resp
}

func rawOr(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(def)
	}
	return raw
}

// emit writes one streamed event (nothing when not streaming).
func (rs *responseStream) emit(typ string, fields map[string]any) {
	if rs.out == nil {
		return
	}
	if !rs.started {
		rs.started = true
		rs.out.begin()
		// The items come after, in their own events.
		early := *rs.object("in_progress")
		early.Output = []*outputItem{}
		rs.emit("response.created", map[string]any{"response": &early})
		rs.emit("response.in_progress", map[string]any{"response": &early})
	}
	fields["type"] = typ
	fields["sequence_number"] = rs.seq
	rs.seq++
	rs.out.event(typ, fields)
}

// index is the output index of the open item.
func (rs *responseStream) index() int { return len(rs.resp.Output) - 1 }

// add starts an output item.
func (rs *responseStream) add(it *outputItem) {
	rs.object("in_progress")
	it.Status = "in_progress"
	rs.resp.Output = append(rs.resp.Output, it)
	rs.emit("response.output_item.added", map[string]any{"output_index": rs.index(), "item": it})
}

// text adds a piece of reasoning or content, opening the item it belongs to.
func (rs *responseStream) text(kind engine.EventKind, t string) {
	want := "message"
	partType, deltaEvent := "output_text", "response.output_text.delta"
	if kind == engine.EventReasoning {
		want = "reasoning"
		partType, deltaEvent = "reasoning_text", "response.reasoning_text.delta"
		if rs.summary {
			partType, deltaEvent = "summary_text", "response.reasoning_summary_text.delta"
		}
	}
	if rs.open == nil || rs.open.Type != want {
		rs.closeOpen()
		it := &outputItem{Type: want, ID: newID(map[string]string{"message": "msg_", "reasoning": "rs_"}[want])}
		part := contentPart{Type: partType}
		if want == "message" {
			it.Role = "assistant"
			it.Content = []contentPart{}
			part.Annotations, part.Logprobs = &[]any{}, &[]any{}
		} else {
			it.Summary = &[]contentPart{}
		}
		rs.add(it)
		rs.open = it
		switch {
		case want == "message":
			rs.emit("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": rs.index(), "content_index": 0, "part": part})
			it.Content = append(it.Content, part)
		case rs.summary:
			rs.emit("response.reasoning_summary_part.added", map[string]any{"item_id": it.ID, "output_index": rs.index(), "summary_index": 0, "part": part})
			*it.Summary = append(*it.Summary, part)
		default:
			it.Content = append(it.Content, part)
		}
	}
	it := rs.open
	fields := map[string]any{"item_id": it.ID, "output_index": rs.index(), "delta": t}
	if rs.summary && want == "reasoning" {
		(*it.Summary)[0].Text += t
		fields["summary_index"] = 0
	} else {
		it.Content[0].Text += t
		fields["content_index"] = 0
		if want == "message" {
			fields["logprobs"] = []any{}
		}
	}
	rs.emit(deltaEvent, fields)
}

// closeOpen finishes the open reasoning or message item.
func (rs *responseStream) closeOpen() {
	it := rs.open
	if it == nil {
		return
	}
	rs.open = nil
	it.Status = "completed"
	idx := rs.index()
	switch {
	case it.Type == "message":
		p := it.Content[0]
		rs.emit("response.output_text.done", map[string]any{"item_id": it.ID, "output_index": idx, "content_index": 0, "text": p.Text, "logprobs": []any{}})
		rs.emit("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": idx, "content_index": 0, "part": p})
	case rs.summary:
		p := (*it.Summary)[0]
		rs.emit("response.reasoning_summary_text.done", map[string]any{"item_id": it.ID, "output_index": idx, "summary_index": 0, "text": p.Text})
		rs.emit("response.reasoning_summary_part.done", map[string]any{"item_id": it.ID, "output_index": idx, "summary_index": 0, "part": p})
	default:
		rs.emit("response.reasoning_text.done", map[string]any{"item_id": it.ID, "output_index": idx, "content_index": 0, "text": it.Content[0].Text})
	}
	rs.emit("response.output_item.done", map[string]any{"output_index": idx, "item": it})
}

// call adds a complete function call.
func (rs *responseStream) call(c wireToolCall) {
	rs.closeOpen()
	empty := ""
	it := &outputItem{Type: "function_call", ID: newID("fc_"), CallID: c.ID, Name: c.Function.Name, Arguments: &empty}
	rs.add(it)
	idx := rs.index()
	args := c.Function.Arguments
	rs.emit("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": idx, "delta": args})
	it.Arguments, it.Status = &args, "completed"
	rs.emit("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": idx, "name": it.Name, "arguments": args})
	rs.emit("response.output_item.done", map[string]any{"output_index": idx, "item": it})
}

// run runs the generation and writes the response, streamed or whole; it
// returns the finished response, or nil when there is none to store.
func (rs *responseStream) run(ctx context.Context) *responseObject {
	g := rs.g
	rs.object("in_progress")
	for ev, err := range g.events(ctx) {
		if err != nil {
			rs.failed(ctx, g.engineError(ctx, err))
			return nil
		}
		switch ev.Kind {
		case engine.EventReasoning:
			rs.text(ev.Kind, ev.Text)
		case engine.EventContent:
			rs.text(ev.Kind, ev.Text)
		case engine.EventToolCall:
			c := toWire(*ev.ToolCall)
			g.calls = append(g.calls, c)
			rs.call(c)
		case engine.EventToolError:
			g.badCall(ev)
			rs.text(engine.EventContent, ev.Text)
		}
		if rs.out != nil && rs.out.err != nil {
			g.errText = "write: " + rs.out.err.Error()
			return nil
		}
	}
	g.release()
	if g.stats.StopReason == engine.StopCancelled {
		if g.s.stopGen.Err() != nil {
			rs.failed(ctx, g.engineError(ctx, context.Canceled))
		}
		return nil
	}
	rs.closeOpen()
	resp := rs.object("completed")
	final := "response.completed"
	if g.stats.StopReason == engine.StopLength {
		resp.Status, final = "incomplete", "response.incomplete"
		resp.IncompleteDetails = &incomplete{Reason: "max_output_tokens"}
	}
	u := &responseUsage{InputTokens: g.stats.PromptTokens, OutputTokens: g.stats.GeneratedTokens,
		TotalTokens: g.stats.PromptTokens + g.stats.GeneratedTokens}
	u.InputTokensDetails.CachedTokens = g.stats.CachedTokens
	u.OutputTokensDetails.ReasoningTokens = g.reasoning
	resp.Usage = u
	if rs.out != nil {
		rs.emit(final, map[string]any{"response": resp})
	} else {
		writeJSON(g.w, http.StatusOK, resp)
	}
	return resp
}

// failed reports an error: a JSON error before the stream started, else
// an error event and response.failed.
func (rs *responseStream) failed(ctx context.Context, e *apiError) {
	g := rs.g
	if !g.tell(ctx) {
		return
	}
	if rs.out == nil || !rs.started {
		g.fail(e)
		return
	}
	code := e.Code
	if code == "" {
		code = e.Type
	}
	rs.emit("error", map[string]any{"code": code, "message": e.Message, "param": nil})
	resp := rs.object("failed")
	resp.Error = &responseError{Code: code, Message: e.Message}
	rs.emit("response.failed", map[string]any{"response": resp})
}

// answer is the response as the assistant's turn of the conversation, for
// previous_response_id.
func (rs *responseStream) answer() []engine.Message {
	var msgs []engine.Message
	m := engine.Message{Role: "assistant"}
	for _, it := range rs.resp.Output {
		switch it.Type {
		case "reasoning":
			for _, p := range it.Content {
				m.ReasoningContent += p.Text
			}
			if it.Summary != nil {
				for _, p := range *it.Summary {
					m.ReasoningContent += p.Text
				}
			}
		case "message":
			m.Content += it.Content[0].Text
		case "function_call":
			m.ToolCalls = append(m.ToolCalls, engine.ToolCall{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(*it.Arguments)})
		}
	}
	return append(msgs, m)
}

// --- stored responses ---

// storedResponse is a response kept for previous_response_id and GET.
type storedResponse struct {
	conversation []engine.Message // without instructions, ending with the answer
	response     *responseObject
	bytes        int64
}

// responseStore keeps the latest responses, least recently used out first,
// bounded by count and by the bytes of their conversations.
type responseStore struct {
	max      int
	maxBytes int64

	mu    sync.Mutex
	lru   *list.List // of *storedEntry, most recent at the front
	ids   map[string]*list.Element
	bytes int64
}

type storedEntry struct {
	id string
	storedResponse
}

func newResponseStore(max int, maxBytes int64) *responseStore {
	return &responseStore{max: max, maxBytes: maxBytes, lru: list.New(), ids: make(map[string]*list.Element)}
}

func (st *responseStore) put(id string, r storedResponse) {
	if st.max <= 0 {
		return
	}
	r.bytes = int64(messagesBytes(r.conversation)) + 512
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ids[id] = st.lru.PushFront(&storedEntry{id: id, storedResponse: r})
	st.bytes += r.bytes
	for st.lru.Len() > st.max || st.bytes > st.maxBytes && st.lru.Len() > 1 {
		st.dropLocked(st.lru.Back())
	}
}

func (st *responseStore) get(id string) (storedResponse, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	el, ok := st.ids[id]
	if !ok {
		return storedResponse{}, false
	}
	st.lru.MoveToFront(el)
	return el.Value.(*storedEntry).storedResponse, true
}

func (st *responseStore) remove(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	el, ok := st.ids[id]
	if ok {
		st.dropLocked(el)
	}
	return ok
}

func (st *responseStore) dropLocked(el *list.Element) {
	e := st.lru.Remove(el).(*storedEntry)
	delete(st.ids, e.id)
	st.bytes -= e.bytes
}

func responseNotFound(id string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "response_id",
		Code: "not_found", Message: "response " + id + " not found"}
}

func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, ok := s.stored.get(id)
	if !ok {
		writeError(w, responseNotFound(id))
		return
	}
	writeJSON(w, http.StatusOK, st.response)
}

func (s *Server) handleDeleteResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.stored.remove(id) {
		writeError(w, responseNotFound(id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
}
