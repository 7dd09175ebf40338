package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/smolgo/smolgo/engine"
)

// This file serves the requests that render or tokenize text without
// generating: POST /apply-template (llama-server's), Anthropic's
// POST /v1/messages/count_tokens (in messages.go) and POST /tokenize,
// /detokenize (completions.go). Tokenizing a large text costs real CPU
// (about 1.5 s for 1 MB), so each of them holds a generation slot while it
// works and waits in the same line as generations: a flood of them cannot
// take the machine from the generations, nor the other way round.

// withSlot runs fn holding a slot of the slot queue, after waiting in line
// for one; it writes the queue's errors in errBody's shape (nil: OpenAI's).
func (s *Server) withSlot(w http.ResponseWriter, r *http.Request, errBody func(*apiError) any, fn func(ctx context.Context)) {
	ctx := r.Context()
	slot, err := s.sched.acquire(ctx)
	if err != nil {
		if errors.Is(err, errQueueFull) {
			writeErrorAs(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "queue_full",
				Message: "model busy: all slots are in use and the queue is full; retry shortly"}, errBody)
		}
		return // otherwise the client left while waiting
	}
	defer s.sched.release(slot)
	fn(ctx)
}

// promptOf renders a job's prompt with the model's template, as its
// generation would, and tokenizes it.
func (s *Server) promptOf(job *chatJob) ([]int32, *apiError) {
	t, ok := s.engine.(Templating)
	if !ok {
		return nil, &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "not_supported",
			Message: "this engine does not expose its chat template"}
	}
	ids, err := t.PromptTokens(job.msgs, job.promptOptions())
	if err != nil {
		return nil, badRequest("messages", "the model's chat template cannot render these messages: %v", err)
	}
	return ids, nil
}

// handleApplyTemplate serves POST /apply-template: a chat-completions body
// (messages, tools, chat_template_kwargs) in, {"prompt": "..."} out, the
// text the loaded model's template makes of it, special tokens written
// out. It is how to check what a model is given.
func (s *Server) handleApplyTemplate(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	tok, ok := s.tokenizerRequest(w, r, &req)
	if !ok {
		return
	}
	job, ae := req.validate(&s.cfg, s.syntax)
	if ae != nil {
		writeError(w, ae)
		return
	}
	s.withSlot(w, r, nil, func(context.Context) {
		if pt, ok := s.engine.(PromptTexting); ok {
			// the rendered text itself, as llama-server returns it
			text, err := pt.PromptText(job.msgs, job.promptOptions())
			switch {
			case err == nil:
				writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
				return
			case !errors.Is(err, errNoPromptText):
				writeError(w, badRequest("messages", "the model's chat template cannot render these messages: %v", err))
				return
			}
		}
		ids, ae := s.promptOf(job)
		if ae != nil {
			writeError(w, ae)
			return
		}
		text, err := tok.Detokenize(ids)
		if err != nil {
			writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "detokenizing the prompt: " + err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
	})
}

// promptOptions are the prompt's options of a job, as its generation
// renders them.
func (job *chatJob) promptOptions() engine.PromptOptions {
	return engine.PromptOptions{Thinking: job.opts.Thinking, ReasoningEffort: job.opts.ReasoningEffort, Tools: job.opts.Tools,
		ParseSpecial: job.opts.ParseSpecial, TemplateKwargs: job.opts.TemplateKwargs}
}

// PromptTexting is implemented by engines whose model's format returns the
// rendered prompt as text (engine.PromptTexter): /apply-template returns
// it as it is, where otherwise it decodes the prompt's tokens (which on
// SentencePiece vocabularies adds an <s> and spaces).
type PromptTexting interface {
	PromptText(msgs []engine.Message, opts engine.PromptOptions) (string, error)
}
