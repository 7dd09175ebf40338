// Package engine runs conversations with any model that can take a forward
// step: it turns a Backend (a model's forward pass over per-sequence KV
// caches) and a Format (the model's chat template, tokenizer and markers)
// into sessions that stream text, reasoning and tool calls, and it batches
// the steps of every session that is generating at the same time.
//
// It knows no model. A model package registers its architecture (package
// family registers the llama families, their CPU backend package llama's
// forward pass; package models/bert its encoder), and Open loads its files;
// a GPU backend plugs in the same way.
//
// # Opening a model
//
// Open is the one way a program opens a model file: the file's
// general.architecture picks the registered Architecture, whose loader
// builds the backend with the Options of Config (device, threads, batch
// size, KV cache type and length, layout) as they are, and the file's own
// defaults (pooling, Matryoshka widths, the weights' fingerprint for the
// prompt cache on disk) fill in what the options leave unset:
//
//	import _ "github.com/smolgo/smolgo/models" // every family
//
//	m, err := engine.Open("Qwen3-1.7B-Q4_K_M.gguf", engine.WithThreads(4), engine.WithKVType("q8_0"))
//	if err != nil { ... }
//	defer m.Close()
//
// Model.Parts hands what the architecture's loader made the model of to
// code that knows the architecture (family.Of returns a llama family's
// runner, weights and file), as database/sql's Conn.Raw hands a driver's
// connection. New makes a Model of a Backend and a Format built by hand
// (tests, a backend of your own), NewEncoder one of an Encoder.
//
// # Sessions
//
// A Model is a loaded model. NewSession starts a conversation.
// Session.Generate takes the whole conversation each turn, as chat APIs do,
// and streams Events:
//
//	s := m.NewSession()
//	for ev, err := range s.Generate(ctx, msgs, engine.GenerateOptions{MaxTokens: 512}) {
//		if err != nil { ... }
//		switch ev.Kind {
//		case engine.EventReasoning: // the model's thinking
//		case engine.EventContent:   // the answer
//		case engine.EventToolCall:  // ev.ToolCall, with GenerateOptions.Tools
//		case engine.EventDone:      // ev.Stats: tokens, speed, stop reason
//		}
//	}
//
// A session keeps its KV cache between turns: when the new conversation
// starts with the tokens of the last one (the usual case: the old turns
// plus the answer plus a new question), only the new tokens are computed.
// A session runs one generation at a time (ErrSessionBusy otherwise); a
// Model runs many sessions at once and is safe for concurrent use.
//
// Cancelling Generate's context ends the generation at the next step (a
// Done event with StopReason StopCancelled); breaking out of the loop does
// the same. Model.Close ends running generations with ErrClosed and then
// lets its backend go; a closed model never crashes its callers.
//
// # Steps and batching
//
// Every forward step of a Model computes the next tokens of all the
// generations that are running (continuous batching), so the weights are
// read once per step for all of them. Config.MaxSequences bounds how many
// take part (more wait in order of arrival; Model.Occupancy reports the
// occupancy). A new prompt is cut into chunks of Config.PrefillChunk tokens;
// while others decode, a step takes one chunk of one prompt beside their
// tokens, so a long paste delays everyone else's next token by about one
// chunk's compute instead of the whole prompt's. Callers of Generate get
// all this without changing their code.
//
// The partition of a prompt into chunks does not depend on what else runs,
// so with a backend whose products are batch-invariant (the CPU backend
// groups them so), a sequence's tokens do not depend on its neighbours.
//
// # How a model plugs in
//
// A Backend owns the weights and makes Caches (one per sequence). Its Step
// runs one forward pass over a batch of Seqs: each Seq appends Tokens to its
// own Cache and asks for the logits of its last rows. Caches that implement
// Snapshotter let the prompt cache share prompts between sessions; those
// that implement Shifter allow context shifting.
//
// A Format renders messages into prompt tokens (Prompt), detokenizes
// (NewDecoder), says which token ends a turn (EndOfTurn), and splits an
// answer into reasoning, content and tool calls (NewParser). The engine
// itself knows no marker.
//
// An architecture package registers a loader for its general.architecture
// name (Register), after which Open loads its GGUF files. A new
// llama-family architecture is a package with a Format (or SmolLM3's) and a
// registration; see the Example.
//
// # Embeddings and reranking
//
// Model.Embed turns texts into vectors (EmbedTokens takes token ids), one
// per input, pooled as the model's file says (pooling_type: mean, CLS, last)
// or as EmbedOptions.Pooling overrides, optionally L2-normalized or cut to
// fewer dimensions (Matryoshka models, which say so with MatryoshkaKey or
// WithMatryoshka). Model.Rerank scores documents against a query with a
// reranker's classification head. EmbedInfo says what a model offers.
//
// An embedding model is one of two things, and each shares the machine in
// its own way:
//
//   - An Encoder (BERT, package bert): whole sequences in one pass, each
//     attending in both directions to itself only, no cache. Such a model
//     has no Backend and does not generate (Generate fails with
//     ErrNotGenerative). Its own queue packs whole sequences of every
//     caller into passes of Encoder.BatchSize tokens, one sequence of each
//     waiting call in turn, so a call of thousands of inputs does not hold
//     a call of one back for more than a pass.
//   - A Backend that also returns hidden states (HiddenStates: the llama
//     families' CPU backend; Qwen3-Embedding is a qwen3 file with last
//     pooling). Its embedding inputs are prompts: each takes one of the
//     MaxSequences places and is prefilled by the same continuous-batching
//     scheduler as the chat sessions, in chunks beside their decode steps,
//     with the hidden states of its rows asked for instead of logits. A
//     model serves chat and embeddings at once, with the fairness rules of
//     generation (a long input delays others' tokens by a chunk at most).
//
// Inputs longer than the model takes fail with ErrContextFull unless
// Truncate; bad inputs (empty, ids outside the vocabulary, widths the model
// does not offer) wrap ErrBadInput, and a model that cannot pool or rank
// wraps ErrNoEmbeddings, so that an API can answer 400.
//
// # Around the loop
//
//   - Stop strings (GenerateOptions.Stop) are matched in the content as it
//     streams; text that could be the start of one is held back.
//   - DropOldest drops the oldest messages of a conversation that outgrew
//     the context (Stats.DroppedMessages says how many); ShiftContext does
//     it by shifting the cache (llama.cpp's context shift) instead of
//     recomputing.
//   - A Constraint (Model.NewConstraint over a package grammar Grammar)
//     masks the logits so the answer follows a JSON schema or a grammar; a
//     constraint that implements Limiter is told the remaining token
//     budget, so the value closes before MaxTokens or the context run out.
//   - The PromptCache (Config.PromptCacheBytes) keeps snapshots of computed
//     prompts under a memory bound and copies the longest shared prefix
//     into a new session's cache.
//   - Lookup speculation (Config.Speculation, GenerateOptions.Speculation)
//     drafts the next tokens by copying what followed the last few tokens
//     earlier in the conversation and checks the draft in the next step; the
//     output is the same as without it.
//   - Logprobs and TopLogprobs put the log-probabilities of the sampled
//     tokens on the events. RawPrompt generates a plain completion of
//     tokens, without the template. LogitBias biases tokens before
//     sampling.
//   - PromptReady tells the prompt's length before the first token (an API
//     that announces it, such as Anthropic's message_start, waits for it).
//     RequireComplete, with a grammar constraint, does not start an answer
//     that cannot be whole within the budget (a forced tool call).
//   - A fault in a forward step (the weights' file truncated while mapped)
//     fails that step's generations with ErrFault; the model goes on.
//
// Package enginetest is a fake model (backend, format and tokenizer) for
// tests of code built on the engine: engine.New over it runs this loop.
package engine
