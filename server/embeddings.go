package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/smolgo/smolgo/engine"
)

// This file holds POST /v1/embeddings (OpenAI's shape) and the checks that
// keep embedding models and chat models to their own endpoints; rerank.go
// holds POST /v1/rerank.
//
// An embedding or rerank request takes a place in the queue like a
// generation (a slot while its inputs are tokenized and computed; 503
// queue_full when the line is full), so that a flood of them cannot run
// unbounded at once; the engine still batches the inputs of the requests
// holding slots (an encoder packs whole sequences into passes; a decoder
// prefills them beside the running generations, see
// engine.Model.EmbedTokens). The limits of EmbedLimits bound a request, in
// bytes before anything is tokenized, then in tokens while the inputs are
// built; each input must also fit the model (engine.EmbedInfo.MaxTokens)
// unless the request says "truncate": true.

// Embedder is implemented by engines that compute embeddings and rerank
// scores: POST /v1/embeddings and /v1/rerank need it. FromModel's engine
// implements it (a model that cannot pool says so in EmbedInfo).
type Embedder interface {
	// EmbedInfo says what the model offers (engine.Model.EmbedInfo).
	EmbedInfo() engine.EmbedInfo
	// EmbedInputs tokenizes texts as embedding inputs, with the special
	// tokens the model adds around them ([CLS] text [SEP] for BERT).
	EmbedInputs(texts []string) ([][]int32, error)
	// RerankInputs builds one input per document from a query and the
	// documents, stopping with an error wrapping engine.ErrTooManyTokens
	// once they have more than maxTokens together
	// (engine.Model.RerankInputs).
	RerankInputs(query string, docs []string, maxTokens int) ([][]int32, error)
	// EmbedTokens computes one vector (or, with PoolRank, the scores) per
	// input (engine.Model.EmbedTokens).
	EmbedTokens(ctx context.Context, inputs [][]int32, opts engine.EmbedOptions) (engine.Embeddings, error)
}

// EmbedLimits bound the embedding and rerank requests. Zero values mean
// the defaults in brackets.
type EmbedLimits struct {
	// MaxInputs bounds the inputs of an embedding request and the
	// documents of a rerank request [2048, OpenAI's limit].
	MaxInputs int
	// MaxTokens bounds the tokens of a request, all inputs together
	// [65536].
	MaxTokens int
	// MaxBytes bounds the text a request has tokenized, checked before
	// any is: the inputs' bytes, and for a rerank the query's once per
	// document plus the documents' [16 × MaxTokens].
	MaxBytes int
}

// Defaults of EmbedLimits.
const (
	DefaultMaxEmbedInputs = 2048
	DefaultMaxEmbedTokens = 65536
)

func (l EmbedLimits) withDefaults() EmbedLimits {
	if l.MaxInputs <= 0 {
		l.MaxInputs = DefaultMaxEmbedInputs
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = DefaultMaxEmbedTokens
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 16 * l.MaxTokens
	}
	return l
}

// tooLong is the answer to inputs over a limit of EmbedLimits.
func tooLong(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: "context_length_exceeded",
		Message: fmt.Sprintf(format, args...)}
}

// embedSlot takes a place in the queue for an embedding or rerank request,
// as a generation does; ok is false when the answer was written (503 when
// the line is full) or the client left while waiting. Call release once
// done.
func (s *Server) embedSlot(w http.ResponseWriter, r *http.Request, endpoint string) (release func(), ok bool) {
	slot, err := s.sched.acquire(r.Context())
	if err != nil {
		if errors.Is(err, errQueueFull) {
			busy, waiting := s.sched.load(s.cfg.Slots)
			s.log.Warn("queue full", "endpoint", endpoint, "request_id", requestID(r.Context()), "busy", busy, "queued", waiting)
			writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "queue_full",
				Message: "model busy: every slot is in use and the queue is full; retry shortly"})
		}
		return nil, false
	}
	s.inflight.Add(1)
	return func() { s.sched.release(slot); s.inflight.Done() }, true
}

// Embedding methods of FromModel's engine.
func (e *modelEngine) EmbedInfo() engine.EmbedInfo { return e.m.EmbedInfo() }
func (e *modelEngine) EmbedInputs(texts []string) ([][]int32, error) {
	return e.m.EmbedInputs(texts)
}
func (e *modelEngine) RerankInputs(query string, docs []string, maxTokens int) ([][]int32, error) {
	return e.m.RerankInputs(query, docs, maxTokens)
}
func (e *modelEngine) EmbedTokens(ctx context.Context, inputs [][]int32, opts engine.EmbedOptions) (engine.Embeddings, error) {
	return e.m.EmbedTokens(ctx, inputs, opts)
}

// refuseEncoder answers a generation request to a model that only embeds.
func (s *Server) refuseEncoder() *apiError {
	em, ok := s.engine.(Embedder)
	if !ok || em.EmbedInfo().Generates {
		return nil
	}
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model", Code: "model_not_supported",
		Message: fmt.Sprintf("model %s is an embedding model: it does not generate text; use POST /v1/embeddings (or /v1/rerank for a reranker)", s.engine.ModelName())}
}

// embedder returns the engine's Embedder and what it offers, or the error
// for an engine that does not embed.
func (s *Server) embedder() (Embedder, engine.EmbedInfo, *apiError) {
	em, ok := s.engine.(Embedder)
	if !ok {
		return nil, engine.EmbedInfo{}, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model",
			Code: "model_not_supported", Message: "this engine does not compute embeddings"}
	}
	info := em.EmbedInfo()
	if !info.Embeds {
		return nil, info, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model", Code: "model_not_supported",
			Message: fmt.Sprintf("model %s cannot compute embeddings (its backend returns no hidden states)", s.engine.ModelName())}
	}
	return em, info, nil
}

// embeddingRequest is the body of POST /v1/embeddings.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
	// Truncate cuts inputs longer than the model takes instead of failing
	// (an extension, as Jina's and Cohere's APIs have).
	Truncate bool `json:"truncate"`
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req embeddingRequest
	if !s.readRequest(w, r, &req, nil) {
		return
	}
	if ae := s.checkModel(req.Model); ae != nil {
		writeError(w, ae)
		return
	}
	em, info, ae := s.embedder()
	if ae != nil {
		writeError(w, ae)
		return
	}
	switch info.Pooling {
	case engine.PoolDefault:
		writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model", Code: "model_not_supported",
			Message: fmt.Sprintf("model %s has no pooling (its file's pooling_type is none): it is a chat model; load it with a pooling (mean, cls or last) to serve embeddings", s.engine.ModelName())})
		return
	case engine.PoolRank:
		writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model", Code: "model_not_supported",
			Message: fmt.Sprintf("model %s is a reranker (pooling rank): it gives scores, not embeddings; use POST /v1/rerank", s.engine.ModelName())})
		return
	}
	base64Out := false
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		base64Out = true
	default:
		writeError(w, badRequest("encoding_format", "encoding_format %q is not one of float and base64", req.EncodingFormat))
		return
	}
	opts := engine.EmbedOptions{Normalize: true, Truncate: req.Truncate}
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > info.Dim {
			writeError(w, badRequest("dimensions", "dimensions must be between 1 and the model's width %d, not %d", info.Dim, *req.Dimensions))
			return
		}
		opts.Dimensions = *req.Dimensions
	}
	lim := s.cfg.Embed.withDefaults()
	texts, idLists, ae := readEmbeddingInput(req.Input, lim)
	if ae != nil {
		writeError(w, ae)
		return
	}
	release, ok := s.embedSlot(w, r, "embeddings")
	if !ok {
		return
	}
	defer release()
	inputs, ae := embeddingInputs(texts, idLists, em, lim)
	if ae != nil {
		writeError(w, ae)
		return
	}
	res, err := em.EmbedTokens(r.Context(), inputs, opts)
	if err != nil {
		s.embedFailed(w, r, "embeddings", err)
		return
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(res.Vectors))
	for i, v := range res.Vectors {
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
		if base64Out {
			data[i].Embedding = floatsBase64(v)
		}
	}
	model := req.Model
	if model == "" {
		model = s.engine.ModelName()
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": model,
		"usage": map[string]int{"prompt_tokens": res.Tokens, "total_tokens": res.Tokens}})
	s.log.Info("embeddings", "request_id", requestID(r.Context()), "inputs", len(inputs), "tokens", res.Tokens,
		"truncated", res.Truncated, "dimensions", opts.Dimensions, "base64", base64Out, "duration", time.Since(start).Round(time.Microsecond))
}

// readEmbeddingInput reads input: a string, an array of strings, an array
// of token ids, or an array of arrays of token ids, and checks its size.
func readEmbeddingInput(raw json.RawMessage, lim EmbedLimits) (texts []string, idLists [][]int64, ae *apiError) {
	// Each shape is tried on fresh variables: a failed attempt leaves
	// what it had decoded so far behind.
	var (
		one    string
		many   []string
		ids    []int64
		idsets [][]int64
	)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, nil, badRequest("input", "input is missing")
	case json.Unmarshal(raw, &one) == nil:
		texts = []string{one}
	case json.Unmarshal(raw, &many) == nil:
		texts = many
	case json.Unmarshal(raw, &ids) == nil:
		idLists = [][]int64{ids}
	case json.Unmarshal(raw, &idsets) == nil:
		idLists = idsets
	default:
		return nil, nil, badRequest("input", "input must be a string, an array of strings, an array of token ids or an array of arrays of token ids")
	}
	n := len(texts) + len(idLists)
	switch {
	case n == 0:
		return nil, nil, badRequest("input", "input is empty: give at least one string or token array")
	case n > lim.MaxInputs:
		return nil, nil, badRequest("input", "input has %d items; this server takes at most %d per request", n, lim.MaxInputs)
	}
	size := 0
	for i, t := range texts {
		if t == "" {
			return nil, nil, badRequest("input", "input %d is an empty string", i)
		}
		size += len(t)
	}
	if size > lim.MaxBytes {
		return nil, nil, tooLong("input", "the inputs are %d bytes together; this server takes at most %d per request", size, lim.MaxBytes)
	}
	return texts, idLists, nil
}

// embeddingInputs tokenizes the texts, or checks the token ids, of an
// embedding request (readEmbeddingInput).
func embeddingInputs(texts []string, idLists [][]int64, em Embedder, lim EmbedLimits) ([][]int32, *apiError) {
	var inputs [][]int32
	if idLists == nil {
		var err error
		if inputs, err = em.EmbedInputs(texts); err != nil {
			return nil, &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "not_supported",
				Message: "tokenizing the input: " + err.Error() + " (send token ids instead)"}
		}
	} else {
		inputs = make([][]int32, len(idLists))
		for i, l := range idLists {
			if len(l) == 0 {
				return nil, badRequest("input", "input %d is an empty token array", i)
			}
			inputs[i] = make([]int32, len(l))
			for k, id := range l {
				if id < 0 || id > math.MaxInt32 {
					return nil, badRequest("input", "input %d: token %d at index %d is not a token id", i, id, k)
				}
				inputs[i][k] = int32(id)
			}
		}
	}
	total := 0
	for _, in := range inputs {
		total += len(in)
	}
	if total > lim.MaxTokens {
		return nil, tooLong("input", "the inputs have %d tokens together; this server takes at most %d per request", total, lim.MaxTokens)
	}
	return inputs, nil
}

// embedFailed answers an error of EmbedTokens.
func (s *Server) embedFailed(w http.ResponseWriter, r *http.Request, endpoint string, err error) {
	var ae *apiError
	switch {
	case r.Context().Err() != nil:
		return // the client went away
	case errors.Is(err, engine.ErrContextFull):
		ae = &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "input", Code: "context_length_exceeded",
			Message: err.Error() + ` (send "truncate": true to cut inputs to the model's limit)`}
	case errors.Is(err, engine.ErrBadInput):
		ae = badRequest("input", "%s", err.Error())
	case errors.Is(err, engine.ErrNoEmbeddings):
		ae = &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model", Code: "model_not_supported", Message: err.Error()}
	case errors.Is(err, engine.ErrClosed):
		ae = &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down", Message: "the model is closing"}
	default:
		ae = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: endpoint + ": " + err.Error()}
	}
	s.log.Warn(endpoint+" failed", "request_id", requestID(r.Context()), "status", ae.Status, "err", err)
	writeError(w, ae)
}

// floatsBase64 is OpenAI's base64 encoding of an embedding: the float32
// values little endian, base64 with padding.
func floatsBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
