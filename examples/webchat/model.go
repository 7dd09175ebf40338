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
	"github.com/smolgo/smolgo/server"
)

// defaultContext bounds each conversation's KV cache unless -ctx says
// otherwise: SmolLM3's full 64K context would let one conversation grow to
// several GB.
const defaultContext = 8192

// loadModel maps the GGUF file and adapts the model to the server.
// extra options (KV type, prompt cache, batching) are passed on to
// family.New. A model whose tokenizer cannot be read is refused here, not
// at the first chat.
//
// A -ctx above the context the model was trained for is allowed, as
// llama.cpp allows it (positions past it are extrapolated; answers there
// may degrade), and said at start, on notes and in the log.
func loadModel(ctx context.Context, log *slog.Logger, notes io.Writer, path, name string, ctxLen, threads int, extra ...engine.Option) (server.Engine, func(), error) {
	start := time.Now()
	log.Info("loading model", "file", path)
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if arch, _ := f.Architecture(); arch == "bert" {
		return loadEncoder(ctx, log, f, path, name, threads, extra...)
	}
	trained, err := llama.ConfigFromGGUF(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case ctxLen <= 0:
		ctxLen = min(trained.Context, defaultContext)
	case ctxLen > trained.Context:
		log.Warn("context above the model's trained context: positions past it are extrapolated",
			"context", ctxLen, "trained", trained.Context)
		fmt.Fprintf(notes, "Note: -ctx %d is above the %d tokens %s was trained for; positions past %d are extrapolated (as llama.cpp does) and answers there may degrade.\n",
			ctxLen, trained.Context, name, trained.Context)
	}
	opts := append([]engine.Option{engine.WithThreads(threads), engine.WithContext(ctxLen), engine.WithLogger(log)}, extra...)
	m, err := family.New(f, opts...)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := ctx.Err(); err != nil {
		m.Close()
		return nil, nil, err
	}
	if _, err := m.Tokenizer(); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("%s: cannot chat without a tokenizer: %w", path, err)
	}
	cfg := m.Weights().Config
	log.Info("model loaded", "name", name, "arch", cfg.Arch, "layers", cfg.Layers, "embd", cfg.Embd,
		"vocab", cfg.Vocab, "context", ctxLen, "threads", threads, "sequences", m.Config().MaxSequences,
		"device", m.Config().Device, "took", time.Since(start).Round(time.Millisecond))
	e, err := server.FromModel(m.Model, server.ModelOptions{Name: name})
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, func() { m.Close() }, nil
}
