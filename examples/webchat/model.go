package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	_ "github.com/smolgo/smolgo/cuda" // the cuda device, for -device cuda in a build with -tags cuda
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	_ "github.com/smolgo/smolgo/models" // every model family
	"github.com/smolgo/smolgo/models/bert"
	"github.com/smolgo/smolgo/server"
)

// defaultContext bounds each conversation's KV cache unless -ctx says
// otherwise: SmolLM3's full 64K context would let one conversation grow to
// several GB.
const defaultContext = 8192

// loadModel opens the GGUF file with engine.Open and adapts the model to
// the server. extra options (KV type, prompt cache, batching) are passed on
// to engine.Open. A chat model whose tokenizer cannot be read is refused
// here, not at the first chat; a BERT file (bge, all-MiniLM, a reranker)
// is served for POST /v1/embeddings (or /v1/rerank for a reranker), and
// chat requests get a 400 that says so.
//
// A -ctx above the context the model was trained for is allowed, as
// llama.cpp allows it (positions past it are extrapolated; answers there
// may degrade), and said at start, on notes and in the log.
func loadModel(ctx context.Context, log *slog.Logger, notes io.Writer, path, name string, ctxLen, threads int, draft draftSettings, extra ...engine.Option) (server.Engine, func(), error) {
	start := time.Now()
	log.Info("loading model", "file", path)
	opts := []engine.Option{engine.WithThreads(threads), engine.WithLogger(log)}
	encoder, trained, err := trainedContext(path)
	if err != nil {
		return nil, nil, err
	}
	if !encoder {
		switch {
		case ctxLen <= 0:
			ctxLen = min(trained, defaultContext)
		case ctxLen > trained:
			log.Warn("context above the model's trained context: positions past it are extrapolated",
				"context", ctxLen, "trained", trained)
			fmt.Fprintf(notes, "Note: -ctx %d is above the %d tokens %s was trained for; positions past %d are extrapolated (as llama.cpp does) and answers there may degrade.\n",
				ctxLen, trained, name, trained)
		}
		opts = append(opts, engine.WithContext(ctxLen))
	}
	var d *engine.Model
	if draft.path != "" {
		if encoder {
			return nil, nil, fmt.Errorf("%s: -draft-model is for a chat model, not an encoder", path)
		}
		log.Info("loading draft model", "file", draft.path)
		// The draft's cache is as long as the model's, on the same
		// device, one per conversation that generates; its prompts go in
		// the model's prompt cache.
		d, err = engine.Open(draft.path, append([]engine.Option{engine.WithThreads(threads), engine.WithLogger(log),
			engine.WithContext(ctxLen)}, draft.opts...)...)
		if err != nil {
			return nil, nil, fmt.Errorf("-draft-model: %w", err)
		}
		opts = append(opts, engine.WithDraft(d), engine.WithDraftLimits(draft.max, draft.min, float32(draft.pMin)))
	}
	if draft.mtp {
		if encoder {
			return nil, nil, fmt.Errorf("%s: -mtp is for a chat model, not an encoder", path)
		}
		opts = append(opts, engine.WithMTP(), engine.WithDraftLimits(draft.max, draft.min, float32(draft.pMin)))
	}
	closeDraft := func() {
		if d != nil {
			d.Close()
		}
	}
	m, err := engine.Open(path, append(opts, extra...)...)
	if err != nil {
		closeDraft()
		if d != nil {
			return nil, nil, fmt.Errorf("%s with draft model %s: %w", path, draft.path, err)
		}
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		m.Close()
		closeDraft()
		return nil, nil, err
	}
	if encoder {
		info := m.EmbedInfo()
		log.Info("embedding model loaded", "name", name, "embd", info.Dim, "pooling", info.Pooling,
			"max_tokens", info.MaxTokens, "threads", threads, "took", time.Since(start).Round(time.Millisecond))
	} else {
		if _, err := m.Format().Tokenizer(); err != nil {
			m.Close()
			closeDraft()
			return nil, nil, fmt.Errorf("%s: cannot chat without a tokenizer: %w", path, err)
		}
		arch, layers, embd, vocab := "", 0, 0, 0
		if p, ok := family.Of(m); ok {
			cfg := p.Weights().Config
			arch, layers, embd, vocab = cfg.Arch, cfg.Layers, cfg.Embd, cfg.Vocab
		}
		log.Info("model loaded", "name", name, "arch", arch, "layers", layers, "embd", embd,
			"vocab", vocab, "context", ctxLen, "threads", threads, "sequences", m.Config().MaxSequences,
			"device", m.Config().Device, "took", time.Since(start).Round(time.Millisecond))
	}
	if draft.mtp {
		c := m.Config()
		log.Info("drafting with the model's MTP block", "draft_max", c.DraftMax, "draft_min", c.DraftMin, "draft_p_min", c.DraftPMin)
	}
	if d != nil {
		c := m.Config()
		log.Info("draft model loaded", "file", draft.path, "draft_max", c.DraftMax, "draft_min", c.DraftMin, "draft_p_min", c.DraftPMin)
	}
	e, err := server.FromModel(m, server.ModelOptions{Name: name})
	if err != nil {
		m.Close()
		closeDraft()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, func() { m.Close(); closeDraft() }, nil
}

// draftSettings are -draft-model (or -mtp) and its limits: the draft
// model's file ("": none), whether the model's MTP block drafts, the
// engine.WithDraftLimits values (-draft-max, -draft-min,
// -draft-p-min), and the options the draft model opens with besides its
// threads, logger and context (its KV type, device, sequences).
type draftSettings struct {
	path     string
	mtp      bool // -mtp: the model's own MTP block drafts
	max, min int
	pMin     float64
	opts     []engine.Option
}

// trainedContext reads whether the file is an encoder (a BERT file, which
// engine.Open serves for embeddings) and, for a chat model, the context it
// was trained for, which bounds the default -ctx.
func trainedContext(path string) (encoder bool, trained int, err error) {
	f, err := gguf.Open(path)
	if err != nil {
		return false, 0, err
	}
	defer f.Close()
	if arch, _ := f.Architecture(); arch == bert.Arch {
		return true, 0, nil
	}
	cfg, err := llama.ConfigFromGGUF(f)
	if err != nil {
		return false, 0, fmt.Errorf("%s: %w", path, err)
	}
	return false, cfg.Context, nil
}
