package engine

import (
	"encoding/json"
	"fmt"

	"github.com/smolgo/smolgo/sample"
)

// GenerateOptions controls one call of Session.Generate. The zero value
// generates greedily until the model ends its turn or the context is full,
// with thinking at the template's default.
type GenerateOptions struct {
	// MaxTokens caps the number of generated tokens (reasoning included).
	// 0 means until the end of the turn or of the context.
	MaxTokens int
	// Sampler picks each token; its zero value is greedy decoding. The
	// penalties' window starts with the last tokens of the prompt, so a
	// repetition penalty also discourages echoing the question.
	Sampler sample.Config
	// Stop ends the answer at the first occurrence of any of these strings.
	// The stop string itself is not returned. Stop strings are matched in
	// the answer (content), not in the reasoning or in tool calls.
	Stop []string
	// Thinking turns the model's reasoning mode on or off for this request;
	// nil leaves it to the template.
	Thinking *bool
	// ReasoningEffort asks a model whose template sets how hard it
	// reasons for a level: OpenAI's reasoning_effort, "low", "medium" or
	// "high" (gpt-oss's "Reasoning:" line). "" leaves it to the template;
	// formats without levels ignore it, and a format with levels may
	// reject a value it has no level for.
	ReasoningEffort string
	// Tools are function definitions in the OpenAI form ({"type":
	// "function", "function": {...}}) that the chat template shows the
	// model. With Tools set, Generate reads the calls the model writes out
	// of its answer and streams each as an EventToolCall (or an
	// EventToolError when a call cannot be read) instead of content.
	Tools []json.RawMessage
	// EndAfterToolCall ends the generation as soon as a tool call is
	// complete, with StopReason StopToolCalls (for a forced call, where the
	// caller runs the tool next; OpenAI's parallel_tool_calls false).
	EndAfterToolCall bool
	// HideReasoning drops the reasoning events; the model still thinks.
	HideReasoning bool
	// PrefillProgress, if set, is called after each chunk of the prompt is
	// computed, with the prompt tokens done so far (cached ones included)
	// and the prompt's length, so that a program can show progress on a
	// long prompt. It runs on the generating goroutine; keep it quick.
	PrefillProgress func(done, total int)
	// DropOldest lets Generate drop the oldest messages (after a leading
	// system message) until the prompt fits the context, instead of failing
	// with ErrContextFull. The last message is never dropped; Stats tells
	// how many were.
	DropOldest bool
	// ShiftContext, with DropOldest, drops the oldest messages from the KV
	// cache by shifting it (llama.cpp's context shift) instead of
	// recomputing everything after the system prompt: the kept messages'
	// keys are moved to their new positions, so only the new message is
	// computed. It is an approximation: the kept messages keep what they
	// computed while the dropped ones were in view, which is why it is off
	// by default. It needs a backend whose caches implement Shifter.
	ShiftContext bool
	// Constraint, if set, restricts the answer to a format (structured
	// output; see Constraint and Model.NewConstraint). It is for one
	// generation: make a new one each time. Thinking is turned off, since
	// the reasoning would have to follow the format too. A constraint that
	// can bound its length (Limiter) is told the tokens left under
	// MaxTokens and the context, so a JSON answer closes in time instead of
	// being cut off; StopReason is then StopLength when the budget forced
	// the end.
	Constraint Constraint
	// ParseSpecial tokenizes special tokens written in message contents
	// (such as "<|im_end|>") as the tokens themselves. Leave it off for
	// text from users: with it, a message can forge turns of the
	// conversation. The template's own markers are always special.
	ParseSpecial bool
	// TemplateKwargs are extra variables for the model's Jinja chat
	// template (llama-server's chat_template_kwargs), JSON values by name;
	// enable_thinking among them is Thinking's business.
	TemplateKwargs map[string]json.RawMessage
	// Logprobs asks for the log-probability of every generated token, and
	// TopLogprobs (0 to 20) for that many most likely alternatives at each
	// position, on the events (Event.Logprobs).
	Logprobs    bool
	TopLogprobs int
	// Speculation turns lookup speculative decoding on or off for this
	// request; nil leaves it to the model's default (Config.Speculation, set
	// by WithSpeculation).
	Speculation *bool
	// Drafter picks who drafts the tokens this generation checks ahead
	// (speculative decoding): DrafterDefault leaves it to the model (its
	// draft model, Config.Draft, when it has one; else its MTP block when
	// Config.MTP; else lookup when Config.Speculation is on; none of them
	// when Speculation is false).
	Drafter Drafter
	// RawPrompt, if not nil, is the prompt itself, as tokens (a plain
	// completion: OpenAI's /v1/completions): Generate then takes no
	// messages, renders no template, and streams everything the model
	// writes as content (no reasoning or tool-call parsing). The model's
	// end-of-generation tokens still end it.
	RawPrompt []int32
	// LogitBias adds a bias to the logits of some tokens before every
	// sampling step (OpenAI's logit_bias: -100 bans a token, 100 all but
	// forces it). Ids outside the vocabulary are an error.
	LogitBias map[int32]float32
	// PromptReady, if set, is called once the prompt is in the cache,
	// before the first token is sampled, with its length in tokens and how
	// many of them were already cached. An API that announces the prompt's
	// size before the answer (Anthropic's message_start) waits for it; with
	// the prompt cache on, other sessions that start with the same prompt
	// after this call reuse it instead of computing it again. It runs on the
	// generating goroutine; keep it quick.
	PromptReady func(promptTokens, cachedTokens int)
	// RequireComplete, with a Constraint that can say how many tokens it
	// needs at least (a package grammar constraint: MinBudget), ends the
	// generation before its first token, with StopLength and no output,
	// when the constrained answer cannot be completed within the tokens
	// left under MaxTokens and the context. Without it such an answer
	// starts and is cut off. A server sets it for a forced tool call, which
	// is of no use unless it is whole.
	RequireComplete bool
}

// A Drafter names who drafts a generation's tokens ahead (speculative
// decoding). Every drafter gives the answer decoding without one gives; they
// differ in what it costs and how often the draft is right.
type Drafter string

// Drafters.
const (
	// DrafterDefault is the model's choice (see GenerateOptions.Drafter).
	DrafterDefault Drafter = ""
	// DrafterNone drafts nothing.
	DrafterNone Drafter = "none"
	// DrafterLookup copies what followed the last tokens earlier in the
	// conversation: free, right where the answer repeats its input.
	DrafterLookup Drafter = "lookup"
	// DrafterModel asks the model's draft model (Config.Draft): a forward
	// step of the draft per drafted token, right where the two models
	// agree. It is an error for a model without one.
	DrafterModel Drafter = "draft"
	// DrafterMTP asks the model's own multi-token-prediction block
	// (Config.MTP: Qwen3.5's MTP layer): a step of one block per drafted
	// token, no second file. It is an error for a model without one.
	DrafterMTP Drafter = "mtp"
)

// MaxTopLogprobs is the most alternatives GenerateOptions.TopLogprobs may ask
// for.
const MaxTopLogprobs = 20

func (o *GenerateOptions) validate() error {
	switch {
	case o.MaxTokens < 0:
		return fmt.Errorf("engine: GenerateOptions.MaxTokens is %d; use 0 for no limit", o.MaxTokens)
	case o.TopLogprobs < 0 || o.TopLogprobs > MaxTopLogprobs:
		return fmt.Errorf("engine: GenerateOptions.TopLogprobs is %d; it must be between 0 and %d", o.TopLogprobs, MaxTopLogprobs)
	}
	for id, b := range o.LogitBias {
		if id < 0 || b != b {
			return fmt.Errorf("engine: GenerateOptions.LogitBias: token %d, bias %g", id, b)
		}
	}
	switch o.Drafter {
	case DrafterDefault, DrafterNone, DrafterLookup, DrafterModel, DrafterMTP:
	default:
		return fmt.Errorf("engine: GenerateOptions.Drafter %q; use %q, %q, %q or %q", o.Drafter, DrafterNone, DrafterLookup, DrafterModel, DrafterMTP)
	}
	if err := o.Sampler.Validate(); err != nil {
		return fmt.Errorf("engine: GenerateOptions.Sampler: %w", err)
	}
	return nil
}
