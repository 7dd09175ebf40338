package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/smolgo/smolgo/engine"
)

// rerankRequest is the body of POST /v1/rerank: the shape llama-server,
// Jina and Cohere share.
type rerankRequest struct {
	Model string  `json:"model"`
	Query *string `json:"query"`
	// Documents are strings, or objects with a "text" (Jina's and
	// Cohere's other form).
	Documents       []json.RawMessage `json:"documents"`
	TopN            *int              `json:"top_n"`
	ReturnDocuments bool              `json:"return_documents"`
	// Truncate cuts a query–document input longer than the model takes
	// instead of failing.
	Truncate bool `json:"truncate"`
}

// rerankResult is one document's entry in the answer.
type rerankResult struct {
	Index          int          `json:"index"`
	RelevanceScore float32      `json:"relevance_score"`
	Document       *rerankedDoc `json:"document,omitempty"`
}

type rerankedDoc struct {
	Text string `json:"text"`
}

// handleRerank scores every document against the query with the model's
// classification head and answers them best first: {"model", "object":
// "list", "usage": {"prompt_tokens", "total_tokens"}, "results": [{"index",
// "relevance_score", "document": {"text"}}], "id", "meta"}, the first top_n
// (all by default), with the documents when return_documents is true: each
// published shape complete, llama-server's and Jina's (model, object,
// usage, results) and Cohere's (id, results, meta with api_version,
// billed_units and tokens). A score is
// the head's first output, as llama-server reports it: a logit for a BERT
// cross-encoder (higher is more relevant; it is not a probability).
func (s *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req rerankRequest
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
	if !info.Ranks || info.Pooling != engine.PoolRank {
		writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model", Code: "model_not_supported",
			Message: fmt.Sprintf("model %s is not a reranker (it has no classification head with pooling rank); use POST /v1/embeddings", s.engine.ModelName())})
		return
	}
	lim := s.cfg.Embed.withDefaults()
	switch {
	case req.Query == nil:
		writeError(w, badRequest("query", "query is missing"))
		return
	case *req.Query == "":
		writeError(w, badRequest("query", "query is empty"))
		return
	case len(req.Documents) == 0:
		writeError(w, badRequest("documents", "documents is missing or empty"))
		return
	case len(req.Documents) > lim.MaxInputs:
		writeError(w, badRequest("documents", "%d documents; this server takes at most %d per request", len(req.Documents), lim.MaxInputs))
		return
	case req.TopN != nil && *req.TopN < 1:
		writeError(w, badRequest("top_n", "top_n must be at least 1, not %d", *req.TopN))
		return
	}
	docs := make([]string, len(req.Documents))
	for i, raw := range req.Documents {
		var obj struct {
			Text *string `json:"text"`
		}
		switch {
		case json.Unmarshal(raw, &docs[i]) == nil:
		case json.Unmarshal(raw, &obj) == nil && obj.Text != nil:
			docs[i] = *obj.Text
		default:
			writeError(w, badRequest("documents", "document %d is neither a string nor an object with a text", i))
			return
		}
		if docs[i] == "" {
			writeError(w, badRequest("documents", "document %d is empty", i))
			return
		}
	}
	// The query goes into every input: bound what that makes in bytes
	// before anything is tokenized, then in tokens as the inputs are built.
	size := len(docs) * len(*req.Query)
	for _, d := range docs {
		size += len(d)
	}
	if size > lim.MaxBytes {
		writeError(w, tooLong("documents", "the query once per document and the documents make %d bytes; this server takes at most %d per request", size, lim.MaxBytes))
		return
	}
	release, ok := s.embedSlot(w, r, "rerank")
	if !ok {
		return
	}
	defer release()
	inputs, err := em.RerankInputs(*req.Query, docs, lim.MaxTokens)
	switch {
	case errors.Is(err, engine.ErrTooManyTokens):
		writeError(w, tooLong("documents", "the query and documents make more than %d tokens together, the most this server takes per request", lim.MaxTokens))
		return
	case err != nil:
		writeError(w, &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "not_supported",
			Message: "tokenizing the documents: " + err.Error()})
		return
	}
	res, err := em.EmbedTokens(r.Context(), inputs, engine.EmbedOptions{Pooling: engine.PoolRank, Truncate: req.Truncate})
	if err != nil {
		s.embedFailed(w, r, "rerank", err)
		return
	}
	results := make([]rerankResult, len(docs))
	for i, v := range res.Vectors {
		results[i] = rerankResult{Index: i, RelevanceScore: v[0]}
		if req.ReturnDocuments {
			results[i].Document = &rerankedDoc{Text: docs[i]}
		}
	}
	sort.SliceStable(results, func(a, b int) bool { return results[a].RelevanceScore > results[b].RelevanceScore })
	if req.TopN != nil && *req.TopN < len(results) {
		results = results[:*req.TopN]
	}
	model := req.Model
	if model == "" {
		model = s.engine.ModelName()
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": model, "object": "list", "results": results,
		"usage": map[string]int{"prompt_tokens": res.Tokens, "total_tokens": res.Tokens},
		// Cohere's own fields (@ai-sdk/cohere's rerank() requires id and
		// meta): a search unit is a query with up to 100 documents.
		"id": newID("rerank-"),
		"meta": map[string]any{"api_version": map[string]string{"version": "2"},
			"billed_units": map[string]int{"search_units": (len(docs) + 99) / 100},
			"tokens":       map[string]int{"input_tokens": res.Tokens, "output_tokens": 0}}})
	s.log.Info("rerank", "request_id", requestID(r.Context()), "documents", len(docs), "tokens", res.Tokens,
		"truncated", res.Truncated, "duration", time.Since(start).Round(time.Microsecond))
}
