package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/smolgo/smolgo/engine"
)

// This file holds the plain-text endpoints that need the model's
// vocabulary (Tokenizing): POST /v1/completions (OpenAI's legacy
// completions: a raw prompt, no chat template) and llama-server's
// POST /tokenize and /detokenize.

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	sampling
	N        *int `json:"n"`
	BestOf   *int `json:"best_of"`
	Echo     bool `json:"echo"`
	Logprobs *int `json:"logprobs"` // 0 to 5: the sampled token's and that many alternatives
	// Suffix is accepted only empty: the models served here do no infilling.
	Suffix         string             `json:"suffix"`
	ResponseFormat json.RawMessage    `json:"response_format"` // llama.cpp extension
	Grammar        string             `json:"grammar"`         // llama.cpp extension
	LogitBias      map[string]float64 `json:"logit_bias"`
	affinityFields
}

// tokenizing returns the engine's vocabulary, or the error for an engine
// without one.
func (s *Server) tokenizing() (Tokenizing, *apiError) {
	t, ok := s.engine.(Tokenizing)
	if !ok {
		return nil, &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "not_supported",
			Message: "this engine does not expose its tokenizer"}
	}
	return t, nil
}

// tokenizerRequest reads the body of a request that needs the engine's
// vocabulary into v; it writes the error and returns false when it fails.
func (s *Server) tokenizerRequest(w http.ResponseWriter, r *http.Request, v any) (Tokenizing, bool) {
	if !s.readRequest(w, r, v, nil) {
		return nil, false
	}
	tok, ae := s.tokenizing()
	if ae != nil {
		writeError(w, ae)
		return nil, false
	}
	return tok, true
}

// promptTokens reads prompt: a string, an array of one string, an array of
// token ids, or an array of one such array. A text is tokenized with the
// special tokens the vocabulary puts around a prompt (PromptTokenizing), as
// llama-server does; token ids are taken as they are.
func (s *Server) promptTokens(raw json.RawMessage, tok Tokenizing) ([]int32, *apiError) {
	var text string
	var texts []string
	var ids []int32
	var idLists [][]int32
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, badRequest("prompt", "prompt is missing")
	case json.Unmarshal(raw, &text) == nil:
	case json.Unmarshal(raw, &texts) == nil:
		if len(texts) != 1 {
			return nil, badRequest("prompt", "prompt has %d strings; only one prompt per request is supported", len(texts))
		}
		text = texts[0]
	case json.Unmarshal(raw, &ids) == nil:
	case json.Unmarshal(raw, &idLists) == nil:
		if len(idLists) != 1 {
			return nil, badRequest("prompt", "prompt has %d token arrays; only one prompt per request is supported", len(idLists))
		}
		ids = idLists[0]
	default:
		return nil, badRequest("prompt", "prompt must be a string, an array of one string, or an array of token ids")
	}
	if ids == nil {
		if len(text) > s.cfg.MaxPromptBytes {
			return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "prompt",
				Code: "context_length_exceeded", Message: fmt.Sprintf("the prompt is %d bytes; this server accepts at most %d", len(text), s.cfg.MaxPromptBytes)}
		}
		var err error
		if pt, ok := tok.(PromptTokenizing); ok {
			ids, err = pt.TokenizePrompt(text, s.cfg.ParseSpecialTokens) // BOS as the vocabulary asks
		} else {
			ids, err = tok.Tokenize(text, s.cfg.ParseSpecialTokens)
		}
		if err != nil {
			return nil, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "tokenizing the prompt: " + err.Error()}
		}
	} else if _, err := tok.Detokenize(ids); err != nil {
		return nil, badRequest("prompt", "prompt: %v", err)
	}
	if len(ids) == 0 {
		return nil, badRequest("prompt", "prompt is empty")
	}
	if n := s.engine.ContextLength(); len(ids) >= n {
		return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "prompt",
			Code: "context_length_exceeded", Message: fmt.Sprintf("the prompt is %d tokens; the model's context is %d", len(ids), n)}
	}
	return ids, nil
}

// validate checks the request and converts it to a job with a raw prompt.
func (req *completionRequest) validate(s *Server, tok Tokenizing) (*chatJob, *apiError) {
	switch {
	case req.N != nil && *req.N != 1:
		return nil, badRequest("n", "n=%d is not supported; only one choice per request", *req.N)
	case req.BestOf != nil && *req.BestOf != 1:
		return nil, badRequest("best_of", "best_of=%d is not supported", *req.BestOf)
	case req.Echo:
		return nil, badRequest("echo", "echo is not supported")
	case req.Suffix != "":
		return nil, badRequest("suffix", "suffix (infilling) is not supported")
	case req.Logprobs != nil && (*req.Logprobs < 0 || *req.Logprobs > 5):
		return nil, badRequest("logprobs", "logprobs %d is out of range [0, 5]", *req.Logprobs)
	case req.StreamOptions != nil && !req.Stream:
		return nil, badRequest("stream_options", "stream_options is only allowed with stream: true")
	}
	ids, ae := s.promptTokens(req.Prompt, tok)
	if ae != nil {
		return nil, ae
	}
	job := &chatJob{}
	opts := &job.opts
	opts.RawPrompt = ids
	var err *apiError
	if opts.Sampler, err = req.sampler(&s.cfg); err != nil {
		return nil, err
	}
	if opts.MaxTokens, err = limitTokens(req.MaxTokens, "max_tokens"); err != nil {
		return nil, err
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = s.cfg.DefaultMaxTokens
	}
	if opts.Stop, err = stopStrings(req.Stop); err != nil {
		return nil, err
	}
	if req.Logprobs != nil {
		opts.Logprobs, opts.TopLogprobs = true, *req.Logprobs
	}
	if opts.LogitBias, err = logitBias(req.LogitBias); err != nil {
		return nil, err
	}
	if err := s.checkLogitBias(opts.LogitBias); err != nil {
		return nil, err
	}
	if job.format, err = responseFormat(req.ResponseFormat, req.Grammar); err != nil {
		return nil, err
	}
	return job, nil
}

// handleCompletions serves POST /v1/completions.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	tok, ok := s.tokenizerRequest(w, r, &req)
	if !ok {
		return
	}
	job, ae := req.validate(s, tok)
	if ae == nil {
		ae = s.checkModel(req.Model)
	}
	if ae != nil {
		writeError(w, ae)
		return
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	s.runJob(w, r, jobRun{endpoint: "completions", idPrefix: "cmpl-", affinity: req.affinityKey(), stream: req.Stream, job: job},
		func(ctx context.Context, g *reply) {
			if req.Stream {
				g.streamText(ctx, includeUsage)
			} else {
				g.completeText(ctx)
			}
		})
}

// textChoice is a choice of a text_completion (or of one of its chunks).
type textChoice struct {
	Text         string        `json:"text"`
	Index        int           `json:"index"`
	Logprobs     *textLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// textLogprobs is the legacy completions' logprobs object.
type textLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// add appends lps, whose text starts at offset bytes into the answer.
func (l *textLogprobs) add(lps []engine.TokenLogprob, offset int) {
	for _, lp := range lps {
		l.Tokens = append(l.Tokens, lp.Text)
		l.TokenLogprobs = append(l.TokenLogprobs, lp.Logprob)
		// Alternatives are keyed by their text as JSON writes it, as
		// OpenAI's are: tokens that are parts of a character (one byte
		// each) all read "\ufffd" there, so they would repeat a key;
		// they are one key, with the likeliest one's logprob.
		top := make(map[string]float32, len(lp.Top))
		for _, t := range lp.Top {
			k := jsonText(t.Text)
			if v, ok := top[k]; !ok || t.Logprob > v {
				top[k] = t.Logprob
			}
		}
		l.TopLogprobs = append(l.TopLogprobs, top)
		l.TextOffset = append(l.TextOffset, offset)
		offset += len(lp.Text)
	}
}

// jsonText is s as encoding/json writes it: each byte that is not part of
// a valid UTF-8 character becomes U+FFFD.
func jsonText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

type textCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"` // "text_completion"
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []textChoice `json:"choices"`
	Usage             *usage       `json:"usage"`
	Timings           *timings     `json:"timings,omitempty"`
}

func (g *reply) textCompletion(choices ...textChoice) textCompletion {
	return textCompletion{ID: g.id, Object: "text_completion", Created: g.created, Model: g.s.engine.ModelName(),
		SystemFingerprint: fingerprint, Choices: choices}
}

// completeText produces a non-streaming text completion.
func (g *reply) completeText(ctx context.Context) {
	var text strings.Builder
	var lp *textLogprobs
	if g.job.opts.Logprobs {
		lp = &textLogprobs{}
	}
	for ev, err := range g.events(ctx) {
		if err != nil {
			if g.tell(ctx) {
				g.fail(g.engineError(ctx, err))
			}
			return
		}
		if lp != nil {
			lp.add(ev.Logprobs, text.Len())
		}
		if ev.Kind == engine.EventContent {
			text.WriteString(ev.Text)
		}
	}
	g.release()
	if g.cancelled(ctx) {
		return
	}
	fr := finishReason(g.stats.StopReason, 0)
	out := g.textCompletion(textChoice{Text: text.String(), Logprobs: lp, FinishReason: &fr})
	u := g.usage()
	out.Usage, out.Timings = &u, g.timings()
	writeJSON(g.w, http.StatusOK, out)
}

// streamText produces a streaming text completion: text_completion chunks,
// the last with finish_reason, an optional usage chunk, then [DONE].
func (g *reply) streamText(ctx context.Context, includeUsage bool) {
	out := newSSE(g.w)
	started := false
	offset := 0
	for ev, err := range g.events(ctx) {
		if err != nil {
			if !started {
				if g.tell(ctx) {
					g.fail(g.engineError(ctx, err))
				}
				return
			}
			if g.tell(ctx) {
				out.data(g.engineError(ctx, err).body())
				out.data("[DONE]")
			}
			return
		}
		if !started {
			out.begin()
			started = true
		}
		if ev.Kind != engine.EventContent {
			continue
		}
		c := textChoice{Text: ev.Text}
		if g.job.opts.Logprobs {
			c.Logprobs = &textLogprobs{}
			c.Logprobs.add(ev.Logprobs, offset)
		}
		offset += len(ev.Text)
		out.data(g.textCompletion(c))
		if out.err != nil {
			g.errText = "write: " + out.err.Error()
			return
		}
	}
	g.release()
	if !started {
		out.begin()
	}
	if g.stats.StopReason == engine.StopCancelled {
		if g.s.stopGen.Err() != nil {
			out.data(g.engineError(ctx, context.Canceled).body())
			out.data("[DONE]")
		}
		return
	}
	fr := finishReason(g.stats.StopReason, 0)
	last := g.textCompletion(textChoice{FinishReason: &fr})
	last.Timings = g.timings()
	out.data(last)
	if includeUsage {
		u := g.usage()
		c := g.textCompletion()
		c.Choices = []textChoice{}
		c.Usage = &u
		out.data(c)
	}
	out.data("[DONE]")
}

// --- /tokenize and /detokenize (llama-server's shapes) ---

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content      *string `json:"content"`
		AddSpecial   bool    `json:"add_special"`
		ParseSpecial *bool   `json:"parse_special"`
		WithPieces   bool    `json:"with_pieces"`
	}
	tok, ok := s.tokenizerRequest(w, r, &req)
	if !ok {
		return
	}
	if req.Content == nil {
		writeError(w, badRequest("content", "content is missing"))
		return
	}
	if len(*req.Content) > s.cfg.MaxPromptBytes {
		writeError(w, badRequest("content", "content is %d bytes; this server tokenizes at most %d", len(*req.Content), s.cfg.MaxPromptBytes))
		return
	}
	s.withSlot(w, r, nil, func(context.Context) {
		s.tokenize(w, tok, *req.Content, req.ParseSpecial == nil || *req.ParseSpecial, req.WithPieces)
	})
}

// tokenize writes the answer of /tokenize.
func (s *Server) tokenize(w http.ResponseWriter, tok Tokenizing, content string, special, withPieces bool) {
	// As in llama-server, special tokens written in the text are parsed
	// unless parse_special is false. add_special is accepted: the
	// tokenizers here add no BOS or EOS of their own.
	ids, err := tok.Tokenize(content, special)
	if err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "tokenizing: " + err.Error()})
		return
	}
	if !withPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	type piece struct {
		ID    int32 `json:"id"`
		Piece any   `json:"piece"` // a string, or its bytes when it is not valid UTF-8
	}
	out := make([]piece, len(ids))
	for i, id := range ids {
		p, err := tok.TokenPiece(id)
		if err != nil {
			writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "tokenizing: " + err.Error()})
			return
		}
		out[i] = piece{ID: id, Piece: p}
		if !utf8.ValidString(p) {
			out[i].Piece = byteInts(p)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int32 `json:"tokens"`
	}
	tok, ok := s.tokenizerRequest(w, r, &req)
	if !ok {
		return
	}
	if len(req.Tokens) > s.cfg.MaxPromptBytes/4 {
		writeError(w, badRequest("tokens", "tokens has %d ids; this server detokenizes at most %d", len(req.Tokens), s.cfg.MaxPromptBytes/4))
		return
	}
	s.withSlot(w, r, nil, func(context.Context) {
		text, err := tok.Detokenize(req.Tokens)
		if err != nil {
			writeError(w, badRequest("tokens", "tokens: %v", err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"content": text})
	})
}
