package server

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

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
// (truncation, include, ...) are accepted and ignored.
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
	Background         *bool           `json:"background"`
	Conversation       json.RawMessage `json:"conversation"`
	Text               *textOptions    `json:"text"`
	Reasoning          *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	} `json:"reasoning"`
	SessionID string `json:"session_id"` // smolgo extension, as on the chat endpoint
	affinityFields
}

// textOptions is the request's "text": the answer's format.
type textOptions struct {
	Format json.RawMessage `json:"format"`
}

// respItem is an input item; which fields matter depends on Type.
type respItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"` // custom_tool_call
	Output    json.RawMessage `json:"output"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
	// Tools are the definitions an additional_tools item carries (Codex
	// sends its tools so, with an empty top-level tools).
	Tools json.RawMessage `json:"tools"`
	// Text marks an item that carries content of its own.
	Text json.RawMessage `json:"text"`
}

// validate checks the request and converts it to engine messages and
// options: the instructions, the stored conversation of
// previous_response_id, then the input items, which may refer to items of
// stored responses (item_reference).
func (req *responsesRequest) validate(s *Server) (*chatJob, *apiError) {
	cfg := &s.cfg
	switch {
	case req.Background != nil && *req.Background:
		return nil, badRequest("background", "background responses are not supported: this server answers while the request is open")
	case len(req.Conversation) > 0 && string(req.Conversation) != "null":
		return nil, badRequest("conversation", "conversation is not supported; use previous_response_id or send the whole input")
	}
	if ae := checkMetadata(req.Metadata); ae != nil {
		return nil, ae
	}
	if ae := s.checkModel(req.Model); ae != nil {
		return nil, ae
	}
	job := &chatJob{}
	if req.Instructions != "" {
		job.msgs = append(job.msgs, engine.Message{Role: "system", Content: req.Instructions})
	}
	if req.PreviousResponseID != "" {
		prev, ok := s.stored.get(req.PreviousResponseID)
		if !ok {
			return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "previous_response_id",
				Code: "previous_response_not_found", Message: "previous response " + req.PreviousResponseID + " not found (it may have been evicted, or was made with store: false)"}
		}
		// The earlier instructions are not carried over.
		job.conversation = slices.Clone(prev.conversation)
	}
	msgs, extra, ae := responseItems(req.Input, s.stored.item)
	if ae != nil {
		return nil, ae
	}
	job.ignoredItems = extra.ignored
	job.conversation = append(job.conversation, msgs...)
	job.msgs = foldSystem(append(job.msgs, job.conversation...))
	param := "input"
	if req.PreviousResponseID != "" {
		param = "previous_response_id"
	}
	if ae := job.checkSize(cfg, param); ae != nil {
		return nil, ae
	}
	tools, ignored, namespaces, ae := responsesTools(req.Tools, "tools")
	if ae != nil {
		return nil, ae
	}
	// Tools sent as additional_tools input items join the top-level ones,
	// the first definition of a name winning.
	for _, at := range extra.tools {
		more, moreIgnored, moreNS, ae := responsesTools(at.raw, at.param+".tools")
		if ae != nil {
			return nil, ae
		}
		ignored = append(ignored, moreIgnored...)
		for _, d := range more {
			if !slices.ContainsFunc(tools, func(t toolDef) bool { return t.Name == d.Name }) {
				tools = append(tools, d)
			}
		}
		for k, v := range moreNS {
			if namespaces == nil {
				namespaces = map[string][2]string{}
			}
			if _, ok := namespaces[k]; !ok {
				namespaces[k] = v
			}
		}
	}
	if len(tools) > maxTools {
		return nil, badRequest("tools", "tools has %d functions; at most %d are allowed", len(tools), maxTools)
	}
	if len(job.ignoredItems) > 0 {
		s.log.Info("responses: input items without conversation content are ignored", "types", job.ignoredItems)
	}
	job.ignored, job.namespaces = ignored, namespaces
	if len(ignored) > 0 {
		s.log.Info("responses: tools the server cannot run are ignored", "tools", ignored)
	}
	choice, ae := responsesToolChoice(req.ToolChoice, tools)
	if ae != nil {
		return nil, ae
	}
	answer, ae := textFormat(req.Text)
	if ae != nil {
		return nil, ae
	}
	job.useTools(tools, choice, req.ParallelToolCalls == nil || *req.ParallelToolCalls, answer, s.syntax, "tools")
	opts := &job.opts
	if opts.MaxTokens, ae = limitTokens(req.MaxOutputTokens, "max_output_tokens"); ae != nil {
		return nil, ae
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = cfg.DefaultMaxTokens
	}
	if opts.Sampler, ae = (&sampling{Temperature: req.Temperature, TopP: req.TopP}).sampler(cfg); ae != nil {
		return nil, ae
	}
	if req.Reasoning != nil {
		if opts.Thinking, ae = thinking(nil, req.Reasoning.Effort, "reasoning.effort"); ae != nil {
			return nil, ae
		}
		opts.ReasoningEffort = req.Reasoning.Effort
	}
	opts.ParseSpecial = cfg.ParseSpecialTokens
	opts.DropOldest = req.SessionID != ""
	return job, nil
}

// responsesTools reads Responses tools: functions ({"type": "function",
// "name", "description", "parameters"}) and namespaces ({"type":
// "namespace", "name", "tools": [functions]}, as Codex groups tools), whose
// functions are shown to the model as NAMESPACE__NAME; namespaces maps
// those names back. The other types run on OpenAI's side (web search, file
// search, a computer, code, images, remote MCP servers): this server runs
// none, so they are ignored and returned in ignored (the response lists
// them) rather than failing the request.
func responsesTools(raw json.RawMessage, where string) (tools []toolDef, ignored []string, namespaces map[string][2]string, ae *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil, nil
	}
	type fn struct {
		Type        string            `json:"type"`
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Parameters  json.RawMessage   `json:"parameters"`
		Tools       []json.RawMessage `json:"tools"`
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, nil, badRequest(where, "%s must be an array of tools", where)
	}
	for i, t := range list {
		param := fmt.Sprintf("%s[%d]", where, i)
		var f fn
		if err := json.Unmarshal(t, &f); err != nil {
			return nil, nil, nil, badRequest(param, "%s must be a tool object", param)
		}
		switch f.Type {
		case "function":
			if f.Name == "" {
				return nil, nil, nil, badRequest(param+".name", "%s: a function tool needs a name", param)
			}
			tools = append(tools, toolDef{Name: f.Name, Description: f.Description, Parameters: f.Parameters})
		case "namespace":
			if f.Name == "" {
				return nil, nil, nil, badRequest(param+".name", "%s: a namespace needs a name", param)
			}
			for j, st := range f.Tools {
				var g fn
				if err := json.Unmarshal(st, &g); err != nil || g.Name == "" {
					return nil, nil, nil, badRequest(fmt.Sprintf("%s.tools[%d]", param, j), "%s.tools[%d] must be a function with a name", param, j)
				}
				if g.Type != "function" {
					ignored = append(ignored, g.Type)
					continue
				}
				flat := f.Name + "__" + g.Name
				if namespaces == nil {
					namespaces = map[string][2]string{}
				}
				namespaces[flat] = [2]string{f.Name, g.Name}
				tools = append(tools, toolDef{Name: flat, Description: g.Description, Parameters: g.Parameters})
			}
		case "":
			return nil, nil, nil, badRequest(param+".type", "%s.type is missing", param)
		default:
			ignored = append(ignored, f.Type)
		}
	}
	if len(tools) > maxTools {
		return nil, nil, nil, badRequest(where, "%s has %d functions; at most %d are allowed", where, len(tools), maxTools)
	}
	return tools, ignored, namespaces, nil
}

// responsesToolChoice reads tool_choice: "auto", "none", "required",
// {"type": "function", "name"}, or {"type": "allowed_tools", "mode"}.
func responsesToolChoice(raw json.RawMessage, tools []toolDef) (toolChoice, *apiError) {
	var tc toolChoice
	if len(raw) == 0 || string(raw) == "null" {
		return tc, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto":
		case "none":
			tc.mode = toolNone
		case "required":
			tc.mode = toolRequired
		default:
			return tc, badRequest("tool_choice", `tool_choice %q is not supported (use "auto", "none", "required" or {"type": "function", "name": …})`, s)
		}
		if tc.mode == toolRequired && len(tools) == 0 {
			return tc, badRequest("tool_choice", "tool_choice required needs function tools")
		}
		return tc, nil
	}
	var obj struct {
		Type, Name, Namespace, Mode string
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return tc, badRequest("tool_choice", "tool_choice must be a string or an object with a type")
	}
	switch obj.Type {
	case "function":
		name := obj.Name
		if obj.Namespace != "" {
			name = obj.Namespace + "__" + name
		}
		if obj.Name == "" || !hasTool(tools, name) {
			return tc, badRequest("tool_choice", "tool_choice names function %q, which is not in tools", name)
		}
		return toolChoice{mode: toolNamed, name: name}, nil
	case "allowed_tools":
		if obj.Mode == "required" {
			tc.mode = toolRequired
		}
		return tc, nil
	}
	return tc, badRequest("tool_choice", "tool_choice of type %q names a tool this server cannot run; only function tools run here", obj.Type)
}

// textFormat reads text.format: text, json_object or json_schema (with
// name, schema and strict beside the type).
func textFormat(text *textOptions) (grammarBuild, *apiError) {
	if text == nil || len(text.Format) == 0 || string(text.Format) == "null" {
		return nil, nil
	}
	var f struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(text.Format, &f); err != nil {
		return nil, badRequest("text.format", "text.format must be an object with a type")
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return jsonObjectGrammar, nil
	case "json_schema":
		if len(f.Schema) == 0 || string(f.Schema) == "null" {
			return nil, badRequest("text.format.schema", "text.format of type json_schema needs a schema")
		}
		return schemaGrammar("text.format.schema", f.Schema), nil
	}
	return nil, badRequest("text.format.type", "text.format.type %q is not supported (use text, json_object or json_schema)", f.Type)
}

// responseItems converts input: a string (one user message) or an array of
// items. Function calls join the assistant message before them; reasoning
// items become the next assistant message's reasoning; item_reference
// items are looked up with ref among the stored responses' output items.
func responseItems(raw json.RawMessage, ref func(id string) (respItem, bool)) ([]engine.Message, itemExtras, *apiError) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []engine.Message{{Role: "user", Content: text}}, itemExtras{}, nil
	}
	var items []respItem
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, itemExtras{}, badRequest("input", "input must be a string or a non-empty array of items")
	}
	c := &itemConverter{}
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		if it.Type == "item_reference" {
			got, ok := ref(it.ID)
			if !ok {
				return nil, itemExtras{}, badRequest(param+".id", "%s: item %q is not stored here (it may have been evicted, or was made with store: false)", param, it.ID)
			}
			it = got
		}
		if ae := c.add(it, param); ae != nil {
			return nil, itemExtras{}, ae
		}
	}
	if len(c.out) == 0 {
		return nil, itemExtras{}, badRequest("input", "input has no message, call or result to answer (only %s)", strings.Join(c.extra.ignored, ", "))
	}
	return c.out, c.extra, nil
}

// itemExtras is what input items carry besides the conversation: the tool
// definitions of additional_tools items (Codex sends its tools there), and
// the types of the items left out.
type itemExtras struct {
	tools []struct {
		raw   json.RawMessage
		param string
	}
	ignored []string
}

// itemConverter builds the conversation of input items.
type itemConverter struct {
	out       []engine.Message
	reasoning string // for the next assistant message
	extra     itemExtras
}

// assistant returns the assistant message that calls join: the last
// message if it is the assistant's, else a new one.
func (c *itemConverter) assistant() *engine.Message {
	if n := len(c.out); n > 0 && c.out[n-1].Role == "assistant" {
		return &c.out[n-1]
	}
	c.out = append(c.out, engine.Message{Role: "assistant", ReasoningContent: c.reasoning})
	c.reasoning = ""
	return &c.out[len(c.out)-1]
}

func (c *itemConverter) add(it respItem, param string) *apiError {
	switch it.Type {
	case "message", "":
		role := it.Role
		switch role {
		case "user", "assistant", "system":
		case "developer":
			role = "system"
		default:
			return badRequest(param+".role", "%s.role %q is not supported (use user, assistant, system or developer)", param, it.Role)
		}
		content, imgs, ae := mediaContent(it.Content, param+".content", []string{"input_text", "output_text", "text"}, []string{"input_image"})
		if ae != nil {
			return ae
		}
		m := engine.Message{Role: role, Content: content, Images: imgs}
		if role == "assistant" {
			m.ReasoningContent, c.reasoning = c.reasoning, ""
		}
		c.out = append(c.out, m)
	case "function_call", "custom_tool_call":
		if it.CallID == "" || it.Name == "" {
			return badRequest(param, "%s: a %s item needs call_id and name", param, it.Type)
		}
		name := it.Name
		if it.Namespace != "" {
			name = it.Namespace + "__" + name
		}
		args, ok := toolArguments(it.Arguments)
		if it.Type == "custom_tool_call" {
			args, _ = json.Marshal(map[string]string{"input": it.Input})
			ok = true
		}
		if !ok {
			return badRequest(param+".arguments", "%s.arguments is not a JSON object", param)
		}
		a := c.assistant()
		a.ToolCalls = append(a.ToolCalls, engine.ToolCall{ID: it.CallID, Name: name, Arguments: args})
	case "function_call_output", "custom_tool_call_output":
		if it.CallID == "" {
			return badRequest(param+".call_id", "%s: a %s item needs call_id", param, it.Type)
		}
		content, ae := textContent(it.Output, param+".output", "input_text", "output_text", "text")
		if ae != nil {
			return ae
		}
		c.out = append(c.out, engine.Message{Role: "tool", ToolCallID: it.CallID, Content: content})
	case "reasoning":
		for _, s := range it.Summary {
			c.reasoning += s.Text
		}
		var parts []struct{ Text string }
		if json.Unmarshal(it.Content, &parts) == nil {
			for _, p := range parts {
				c.reasoning += p.Text
			}
		}
	case "additional_tools":
		c.extra.tools = append(c.extra.tools, struct {
			raw   json.RawMessage
			param string
		}{it.Tools, param})
	default:
		// Items of OpenAI's hosted tools (web_search_call, file_search_call,
		// image_generation_call, mcp_list_tools, ...) and others this
		// server does not know are left out, and listed in ignored_items,
		// when they carry no conversation content; one that does is
		// refused, rather than its content silently dropped.
		if it.Content != nil || it.Output != nil || it.Arguments != "" || it.Input != "" || it.Text != nil || len(it.Summary) > 0 {
			return badRequest(param+".type", "%s: item type %q is not supported (use message, function_call, function_call_output, custom_tool_call, reasoning, additional_tools or item_reference)", param, it.Type)
		}
		if !slices.Contains(c.extra.ignored, it.Type) {
			c.extra.ignored = append(c.extra.ignored, it.Type)
		}
	}
	return nil
}

// handleResponses serves POST /v1/responses.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if !s.readRequest(w, r, &req, nil) {
		return
	}
	job, ae := req.validate(s)
	if ae != nil {
		writeError(w, ae)
		return
	}
	summary := req.Reasoning != nil && req.Reasoning.Summary != ""
	s.runJob(w, r, jobRun{endpoint: "responses", idPrefix: "resp_", sessionID: req.SessionID, affinity: req.affinityKey(), stream: req.Stream, job: job},
		func(ctx context.Context, g *reply) {
			rs := &responseStream{g: g, req: &req, summary: summary}
			if req.Stream {
				rs.out = newSSE(g.w)
			}
			resp := rs.run(ctx)
			if resp == nil || req.Store != nil && !*req.Store {
				return
			}
			conv := job.conversation // without the instructions
			s.stored.put(resp.ID, storedResponse{conversation: append(conv[:len(conv):len(conv)], rs.answer()...), response: resp})
		})
}

// OpenAI's bounds on metadata: at most 16 pairs, keys of at most 64
// characters, string values of at most 512.
const (
	maxMetadataPairs = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

// checkMetadata checks a request's metadata as OpenAI does: null, or an
// object of at most maxMetadataPairs strings with bounded keys and values.
// It is echoed in the response and kept with stored responses, so an
// unbounded one would cost memory for nothing.
func checkMetadata(raw json.RawMessage) *apiError {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return badRequest("metadata", "metadata must be an object of string values")
	}
	if len(m) > maxMetadataPairs {
		return badRequest("metadata", "metadata has %d pairs; at most %d are allowed", len(m), maxMetadataPairs)
	}
	for k, v := range m {
		var str string
		switch {
		case utf8.RuneCountInString(k) > maxMetadataKey:
			return badRequest("metadata", "metadata key %.20q... is %d characters; at most %d are allowed", k, utf8.RuneCountInString(k), maxMetadataKey)
		case json.Unmarshal(v, &str) != nil:
			return badRequest("metadata", "metadata[%q] must be a string", k)
		case utf8.RuneCountInString(str) > maxMetadataValue:
			return badRequest("metadata", "metadata[%q] is %d characters; at most %d are allowed", k, utf8.RuneCountInString(str), maxMetadataValue)
		}
	}
	return nil
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
	// IgnoredTools lists the types of the tools the request offered that
	// this server cannot run (web_search, file_search, ...): a smolgo
	// extension, so that a client can see they were left out.
	IgnoredTools []string `json:"ignored_tools,omitempty"`
	// IgnoredItems lists the types of the input items left out because
	// they carry no conversation content (hosted tools' calls, ...): a
	// smolgo extension, like IgnoredTools.
	IgnoredItems []string `json:"ignored_items,omitempty"`
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
	Namespace string  `json:"namespace,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
}

// MarshalJSON writes the item with the fields its type requires in the
// API's schema: a message has its content list even when it is empty (the
// openai npm stream helper and the Go SDK's accumulator read it from
// response.output_item.added).
func (it *outputItem) MarshalJSON() ([]byte, error) {
	type plain outputItem
	if it.Type != "message" {
		return json.Marshal((*plain)(it))
	}
	content := it.Content
	if content == nil {
		content = []contentPart{}
	}
	return json.Marshal(struct {
		*plain
		Content []contentPart `json:"content"`
	}{(*plain)(it), content})
}

// asInput is the item as a client would send it back in input.
func (it *outputItem) asInput() respItem {
	in := respItem{Type: it.Type, ID: it.ID, Role: it.Role, CallID: it.CallID, Name: it.Name, Namespace: it.Namespace}
	if it.Arguments != nil {
		in.Arguments = *it.Arguments
	}
	switch it.Type {
	case "message":
		in.Content, _ = json.Marshal(it.Content)
	case "reasoning":
		in.Content, _ = json.Marshal(it.Content)
		if it.Summary != nil {
			for _, p := range *it.Summary {
				in.Summary = append(in.Summary, struct {
					Text string `json:"text"`
				}{p.Text})
			}
		}
	}
	return in
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
	g       *reply
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
		rs.resp.IgnoredTools, rs.resp.IgnoredItems = rs.g.job.ignored, rs.g.job.ignoredItems
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
			// The part is announced, as for a message: the openai npm
			// stream helper adds reasoning text only to a part it was told
			// of.
			rs.emit("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": rs.index(), "content_index": 0, "part": part})
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
func (rs *responseStream) closeOpen() { rs.close("completed") }

// close finishes the open reasoning or message item with status (an item
// cut by the budget is "incomplete").
func (rs *responseStream) close(status string) {
	it := rs.open
	if it == nil {
		return
	}
	rs.open = nil
	it.Status = status
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
		p := it.Content[0]
		rs.emit("response.reasoning_text.done", map[string]any{"item_id": it.ID, "output_index": idx, "content_index": 0, "text": p.Text})
		rs.emit("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": idx, "content_index": 0, "part": p})
	}
	rs.emit("response.output_item.done", map[string]any{"output_index": idx, "item": it})
}

// call adds a complete function call.
func (rs *responseStream) call(c wireToolCall) {
	rs.closeOpen()
	empty := ""
	it := &outputItem{Type: "function_call", ID: newID("fc_"), CallID: c.ID, Name: c.Function.Name, Arguments: &empty}
	if ns, ok := rs.g.job.namespaces[c.Function.Name]; ok {
		it.Namespace, it.Name = ns[0], ns[1]
	}
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
	cut := g.stats.StopReason == engine.StopLength && len(g.calls) == 0
	if cut {
		rs.close("incomplete")
	} else {
		rs.closeOpen()
	}
	resp := rs.object("completed")
	final := "response.completed"
	if cut {
		resp.Status, final = "incomplete", "response.incomplete"
		resp.IncompleteDetails = &incomplete{Reason: "max_output_tokens"}
	}
	u := &responseUsage{InputTokens: g.stats.PromptTokens, OutputTokens: g.stats.GeneratedTokens,
		TotalTokens: g.stats.PromptTokens + g.stats.GeneratedTokens}
	u.InputTokensDetails.CachedTokens = g.stats.CachedTokens
	u.OutputTokensDetails.ReasoningTokens = g.reasoning
	resp.Usage = u
	if rs.out != nil {
		// llama-server's extension: the stream's last event carries the
		// timings (drafted and accepted tokens among them).
		rs.emit(final, map[string]any{"response": resp, "timings": g.timings()})
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
// bounded by count and by their size: the conversation's text and the
// response object as it is sent (output, instructions, tools, metadata),
// plus an allowance per message for Go's own bookkeeping.
type responseStore struct {
	max      int
	maxBytes int64

	mu    sync.Mutex
	lru   *list.List // of *storedEntry, most recent at the front
	ids   map[string]*list.Element
	items map[string]*list.Element // output item id → its response, for item_reference
	bytes int64
}

type storedEntry struct {
	id string
	storedResponse
}

func newResponseStore(max int, maxBytes int64) *responseStore {
	return &responseStore{max: max, maxBytes: maxBytes, lru: list.New(), ids: make(map[string]*list.Element),
		items: make(map[string]*list.Element)}
}

// storedSize is what a stored response holds in memory, about.
func storedSize(r storedResponse) int64 {
	n := int64(messagesBytes(r.conversation)) + 512
	for _, m := range r.conversation {
		n += 128 + int64(len(m.ToolCalls))*64 + int64(len(m.ToolCallID))
	}
	if b, err := json.Marshal(r.response); err == nil {
		n += int64(len(b))
	}
	return n
}

func (st *responseStore) put(id string, r storedResponse) {
	if st.max <= 0 {
		return
	}
	r.bytes = storedSize(r)
	st.mu.Lock()
	defer st.mu.Unlock()
	el := st.lru.PushFront(&storedEntry{id: id, storedResponse: r})
	st.ids[id] = el
	for _, it := range r.response.Output {
		st.items[it.ID] = el
	}
	st.bytes += r.bytes
	for st.lru.Len() > st.max || st.bytes > st.maxBytes && st.lru.Len() > 1 {
		st.dropLocked(st.lru.Back())
	}
}

// item returns a stored output item as an input item (item_reference).
func (st *responseStore) item(id string) (respItem, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	el, ok := st.items[id]
	if !ok {
		return respItem{}, false
	}
	for _, it := range el.Value.(*storedEntry).response.Output {
		if it.ID == id {
			return it.asInput(), true
		}
	}
	return respItem{}, false
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
	for _, it := range e.response.Output {
		delete(st.items, it.ID)
	}
	st.bytes -= e.bytes
}

// usage reports the responses stored and the bytes they are counted for.
func (st *responseStore) usage() (int, int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.lru.Len(), st.bytes
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
