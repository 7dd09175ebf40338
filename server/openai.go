package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/sample"
)

// This file holds the OpenAI chat-completions wire format: the request as
// clients send it, its validation into engine options, and the response
// shapes.

// chatRequest is the body of POST /v1/chat/completions. Fields not listed
// (metadata, ...) are accepted and ignored.
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	sampling
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	N                   *int               `json:"n"`
	Tools               json.RawMessage    `json:"tools"`
	ToolChoice          json.RawMessage    `json:"tool_choice"`
	ResponseFormat      json.RawMessage    `json:"response_format"`
	Grammar             string             `json:"grammar"` // llama.cpp extension: GBNF text
	ParallelToolCalls   *bool              `json:"parallel_tool_calls"`
	Logprobs            bool               `json:"logprobs"`
	TopLogprobs         *int               `json:"top_logprobs"`
	LogitBias           map[string]float64 `json:"logit_bias"`
	ReasoningEffort     string             `json:"reasoning_effort"`
	ChatTemplateKwargs  templateKwargs     `json:"chat_template_kwargs"`
	// SessionID is a smolgo extension: generate in a server-side session
	// made with POST /api/sessions, so its KV cache is kept for this
	// conversation alone.
	SessionID string `json:"session_id"`
	affinityFields
}

// affinityFields are the fields OpenAI's APIs take as hints of prefix
// affinity: requests with the same prompt_cache_key (or, without one, the
// same user) share a prefix, a conversation or an agent's instructions.
// The server gives such a request the slot that last served the key when
// it is free, so the slot's KV cache already holds the prefix; a balancer
// in front pins the key to a replica (X-Smolgo-Replica names the one that
// answered).
type affinityFields struct {
	PromptCacheKey string `json:"prompt_cache_key"`
	User           string `json:"user"`
}

// affinityKey is the request's hint, "" for none.
func (a affinityFields) affinityKey() string {
	if a.PromptCacheKey != "" {
		return a.PromptCacheKey
	}
	return a.User
}

// sampling holds the sampling fields that the OpenAI endpoints
// (chat and plain completions) share.
type sampling struct {
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	TopK             *int            `json:"top_k"` // llama.cpp extension
	MinP             *float64        `json:"min_p"` // llama.cpp extension
	MaxTokens        *int            `json:"max_tokens"`
	Seed             *int64          `json:"seed"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	RepeatPenalty    *float64        `json:"repeat_penalty"` // llama.cpp extension
	Stop             json.RawMessage `json:"stop"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []wireToolCall  `json:"tool_calls"`   // assistant
	ToolCallID       string          `json:"tool_call_id"` // tool
}

// apiError is an error with everything needed for OpenAI's error body.
type apiError struct {
	Status  int
	Type    string // invalid_request_error, server_error, ...
	Code    string
	Param   string
	Message string
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param,
		Message: fmt.Sprintf(format, args...)}
}

// errorBody is OpenAI's error shape: {"error":{"message","type","param","code"}}.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func (e *apiError) body() errorBody {
	var b errorBody
	b.Error.Message = e.Message
	b.Error.Type = e.Type
	if e.Param != "" {
		b.Error.Param = &e.Param
	}
	if e.Code != "" {
		b.Error.Code = &e.Code
	}
	return b
}

// textContent reads content that is a string, null, or an array of parts
// ({"type": …, "text": …}) whose types are among types.
func textContent(raw json.RawMessage, param string, types ...string) (string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param, "%s must be a string or an array of text parts", param)
	}
	var b strings.Builder
	for j, p := range parts {
		if !slices.Contains(types, p.Type) {
			return "", badRequest(fmt.Sprintf("%s[%d].type", param, j), "%s[%d]: content part type %q is not supported (only %q)", param, j, p.Type, types)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// stopStrings reads "stop": a string, an array of strings, or null.
func stopStrings(raw json.RawMessage) ([]string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("stop", "stop must be a string or an array of strings")
	}
	if len(many) > maxStopStrings {
		return nil, badRequest("stop", "stop has %d strings; at most %d are allowed", len(many), maxStopStrings)
	}
	out := many[:0]
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

const maxStopStrings = 16

// validate checks the request and converts it to engine messages and
// options, with cfg's limits and default sampler.
func (req *chatRequest) validate(cfg *Config, syntax toolSyntax) (*chatJob, *apiError) {
	if len(req.Messages) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty array")
	}
	job := &chatJob{msgs: make([]engine.Message, 0, len(req.Messages))}
	for i, m := range req.Messages {
		msg, err := m.toEngine(i)
		if err != nil {
			return nil, err
		}
		job.msgs = append(job.msgs, msg)
	}
	job.msgs = foldSystem(job.msgs)
	if ae := job.checkSize(cfg, "messages"); ae != nil {
		return nil, ae
	}
	if req.N != nil {
		if *req.N < 1 || *req.N > maxChoices {
			return nil, badRequest("n", "n=%d is out of range [1, %d]", *req.N, maxChoices)
		}
		job.n = *req.N
	}
	tools, choice, err := chatTools(req.Tools, req.ToolChoice)
	if err != nil {
		return nil, err
	}
	answer, err := responseFormat(req.ResponseFormat, req.Grammar)
	if err != nil {
		return nil, err
	}
	job.useTools(tools, choice, req.ParallelToolCalls == nil || *req.ParallelToolCalls, answer, syntax, "tools")
	opts := &job.opts
	if opts.Sampler, err = req.sampler(cfg); err != nil {
		return nil, err
	}
	n, param := req.MaxCompletionTokens, "max_completion_tokens"
	if n == nil {
		n, param = req.MaxTokens, "max_tokens"
	}
	if opts.MaxTokens, err = limitTokens(n, param); err != nil {
		return nil, err
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = cfg.DefaultMaxTokens
	}
	if opts.Stop, err = stopStrings(req.Stop); err != nil {
		return nil, err
	}
	if req.StreamOptions != nil && !req.Stream {
		return nil, badRequest("stream_options", "stream_options is only allowed with stream: true")
	}
	if opts.Thinking, err = thinking(req.ChatTemplateKwargs.EnableThinking, req.ReasoningEffort, "reasoning_effort"); err != nil {
		return nil, err
	}
	opts.ReasoningEffort = req.ReasoningEffort // for templates with levels (gpt-oss's)
	opts.TemplateKwargs = req.ChatTemplateKwargs.All
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > 20 {
			return nil, badRequest("top_logprobs", "top_logprobs %d is out of range [0, 20]", *req.TopLogprobs)
		}
		if !req.Logprobs {
			return nil, badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
		opts.TopLogprobs = *req.TopLogprobs
	}
	opts.Logprobs = req.Logprobs
	if opts.LogitBias, err = logitBias(req.LogitBias); err != nil {
		return nil, err
	}
	opts.ParseSpecial = cfg.ParseSpecialTokens
	opts.DropOldest = req.SessionID != "" // web-chat conversations never dead-end on a full context
	return job, nil
}

// maxChoices bounds chat's n.
const maxChoices = 8

// logitBias reads logit_bias: token ids (as strings, JSON object keys) to
// biases in [-100, 100]. That the ids are in the vocabulary is checked
// against the model (checkLogitBias).
func logitBias(raw map[string]float64) (map[int32]float32, *apiError) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > 1024 {
		return nil, badRequest("logit_bias", "logit_bias has %d tokens; at most 1024 are allowed", len(raw))
	}
	out := make(map[int32]float32, len(raw))
	for k, v := range raw {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil || id < 0 {
			return nil, badRequest("logit_bias", "logit_bias: key %q is not a token id", k)
		}
		if v < -100 || v > 100 {
			return nil, badRequest("logit_bias", "logit_bias: the bias of token %d, %g, is out of range [-100, 100]", id, v)
		}
		out[int32(id)] = float32(v)
	}
	return out, nil
}

// toEngine checks message i and converts it. System and developer
// messages may come anywhere (foldSystem places them).
func (m *chatMessage) toEngine(i int) (engine.Message, *apiError) {
	role := m.Role
	switch role {
	case "system", "developer":
		role = "system"
	case "user", "assistant", "tool":
	case "":
		return engine.Message{}, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is missing", i)
	default:
		return engine.Message{}, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not supported (use system, developer, user, assistant or tool)", i, m.Role)
	}
	text, imgs, err := mediaContent(m.Content, fmt.Sprintf("messages[%d].content", i), []string{"text"}, []string{"image_url"})
	if err != nil {
		return engine.Message{}, err
	}
	msg := engine.Message{Role: role, Content: text, ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID, Images: imgs}
	if len(m.ToolCalls) > 0 {
		if role != "assistant" {
			return engine.Message{}, badRequest(fmt.Sprintf("messages[%d].tool_calls", i), "messages[%d]: only assistant messages have tool_calls", i)
		}
		if msg.ToolCalls, err = fromWire(m.ToolCalls, i); err != nil {
			return engine.Message{}, err
		}
	}
	return msg, nil
}

// sampler applies the request's sampling settings over cfg's defaults.
func (req *sampling) sampler(cfg *Config) (c sample.Config, err *apiError) {
	if t := req.Temperature; t != nil && (*t < 0 || *t > 2) {
		return c, badRequest("temperature", "temperature %g is out of range [0, 2]", *t)
	}
	if p := req.TopP; p != nil && (*p <= 0 || *p > 1) {
		return c, badRequest("top_p", "top_p %g is out of range (0, 1]", *p)
	}
	if k := req.TopK; k != nil && *k < 0 {
		return c, badRequest("top_k", "top_k %d must not be negative", *k)
	}
	if p := req.MinP; p != nil && (*p < 0 || *p > 1) {
		return c, badRequest("min_p", "min_p %g is out of range [0, 1]", *p)
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"presence_penalty", req.PresencePenalty}, {"frequency_penalty", req.FrequencyPenalty}} {
		if p.v != nil && (*p.v < -2 || *p.v > 2) {
			return c, badRequest(p.name, "%s %g is out of range [-2, 2]", p.name, *p.v)
		}
	}
	if p := req.RepeatPenalty; p != nil && (*p < 0 || *p > 10) {
		return c, badRequest("repeat_penalty", "repeat_penalty %g is out of range [0, 10]", *p)
	}
	c = cfg.Sampler
	set := func(dst *float32, src *float64) {
		if src != nil {
			*dst = float32(*src)
		}
	}
	set(&c.Temperature, req.Temperature)
	set(&c.TopP, req.TopP)
	set(&c.MinP, req.MinP)
	set(&c.PresencePenalty, req.PresencePenalty)
	set(&c.FrequencyPenalty, req.FrequencyPenalty)
	set(&c.RepeatPenalty, req.RepeatPenalty)
	if req.TopK != nil {
		c.TopK = *req.TopK
	}
	if req.Seed != nil {
		// sample treats seed 0 as "random"; a client asking for seed 0
		// wants a fixed seed, so map it to another fixed value.
		c.Seed = uint64(*req.Seed)
		if c.Seed == 0 {
			c.Seed = 0x9e3779b97f4a7c15
		}
	}
	return c, nil
}

// thinking reads chat_template_kwargs.enable_thinking and a reasoning
// effort (param names it: "none" and "minimal" turn reasoning off, "low"
// to "high" on).
func thinking(enable *bool, effort, param string) (*bool, *apiError) {
	on := func(b bool) *bool { return &b }
	switch effort {
	case "":
		return enable, nil
	case "none", "minimal":
		if enable != nil && *enable {
			return nil, badRequest(param, "%s %q contradicts chat_template_kwargs.enable_thinking: true", param, effort)
		}
		return on(false), nil
	case "low", "medium", "high", "xhigh":
		if enable != nil && !*enable {
			return nil, badRequest(param, "%s %q contradicts chat_template_kwargs.enable_thinking: false", param, effort)
		}
		return on(true), nil
	}
	return nil, badRequest(param, "%s %q is not supported (use none, minimal, low, medium or high)", param, effort)
}

// decodeError turns a JSON decoding failure into a 400 (or 413 for an
// over-long body) that says where the problem is.
func decodeError(err error, limit int64) *apiError {
	var tooBig *http.MaxBytesError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case isTimeout(err):
		return &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error",
			Code: "request_timeout", Message: "the request body was not received in time"}
	case errors.As(err, &tooBig):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Code: "request_too_large", Message: fmt.Sprintf("request body is larger than %d bytes", limit)}
	case errors.As(err, &syn):
		return badRequest("", "request body is not valid JSON: %v (at byte %d)", err, syn.Offset)
	case errors.As(err, &typ):
		field := strings.TrimPrefix(typ.Field, "sampling.") // an embedded struct's name is no part of the wire format
		return badRequest(field, "request body: field %q must be %s, not JSON %s", field, typ.Type, typ.Value)
	case errors.Is(err, errEmptyBody):
		return badRequest("", "request body is empty; send a JSON object")
	}
	return badRequest("", "request body is not valid JSON: %v", err)
}

var errEmptyBody = errors.New("empty body")

// isTimeout reports a read that hit the connection's deadline (the server's
// ReadTimeout).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// --- responses ---

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// timings mirrors llama.cpp's server extension, read by the web page for
// its tokens/s line.
type timings struct {
	PromptN             int     `json:"prompt_n"`
	CacheN              int     `json:"cache_n"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`
	PredictedMS         float64 `json:"predicted_ms"`
	QueueMS             float64 `json:"queue_ms"`
	StopReasonExtension string  `json:"stop_reason"`
	// DroppedMessages counts the oldest messages left out so that a
	// web-chat conversation fits the context (the page says so).
	DroppedMessages int `json:"dropped_messages,omitempty"`
	// DraftN and DraftAcceptedN count speculative decoding's drafted and
	// accepted tokens, by lookup or by a draft model (llama.cpp's names).
	DraftN         int `json:"draft_n,omitempty"`
	DraftAcceptedN int `json:"draft_n_accepted,omitempty"`
}

type responseMessage struct {
	Role string `json:"role"`
	// Content is null beside tool calls when the model wrote no text.
	Content          *string        `json:"content"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
}

type completionChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	Logprobs     *choiceLogprobs `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"` // "chat.completion"
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             usage              `json:"usage"`
	Timings           *timings           `json:"timings,omitempty"`
}

type delta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
}

type chunkChoice struct {
	Index        int             `json:"index"`
	Delta        delta           `json:"delta"`
	Logprobs     *choiceLogprobs `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"` // "chat.completion.chunk"
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *usage        `json:"usage"`
	Timings           *timings      `json:"timings,omitempty"`
}

// finishReason maps an engine stop reason to OpenAI's finish_reason;
// an answer that ends with tool calls is "tool_calls".
//
// Calls that completed make it "tool_calls" even when the budget then ran
// out: they are whole, and the client should run them.
func finishReason(stop string, calls int) string {
	switch {
	case calls > 0 || stop == engine.StopToolCalls:
		return "tool_calls"
	case stop == engine.StopLength:
		return "length"
	}
	return "stop"
}

// choiceLogprobs is OpenAI's logprobs object of a choice or chunk.
type choiceLogprobs struct {
	Content []tokenLogprob `json:"content"`
}

type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float32      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// wireLogprobs converts the engine's log-probabilities (nil for none).
func wireLogprobs(lps []engine.TokenLogprob) []tokenLogprob {
	out := make([]tokenLogprob, 0, len(lps))
	for _, lp := range lps {
		t := tokenLogprob{Token: lp.Text, Logprob: lp.Logprob, Bytes: byteInts(lp.Text), TopLogprobs: []topLogprob{}}
		for _, top := range lp.Top {
			t.TopLogprobs = append(t.TopLogprobs, topLogprob{Token: top.Text, Logprob: top.Logprob, Bytes: byteInts(top.Text)})
		}
		out = append(out, t)
	}
	return out
}

// byteInts is a token's bytes as OpenAI sends them (a token may be part
// of a UTF-8 character).
func byteInts(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

// templateKwargs is chat_template_kwargs, as llama-server takes it: every
// key reaches the model's Jinja chat template as a variable (All), and
// enable_thinking also turns the reasoning mode on or off.
type templateKwargs struct {
	EnableThinking *bool
	All            map[string]json.RawMessage
}

func (k *templateKwargs) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if err := json.Unmarshal(b, &k.All); err != nil {
		return fmt.Errorf("chat_template_kwargs must be an object: %w", err)
	}
	if raw, ok := k.All["enable_thinking"]; ok {
		if err := json.Unmarshal(raw, &k.EnableThinking); err != nil {
			return fmt.Errorf("chat_template_kwargs.enable_thinking must be a boolean: %w", err)
		}
	}
	return nil
}
