package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/smollm3"
)

// defaultContext bounds each conversation's KV cache unless -ctx says
// otherwise: SmolLM3's full 64K context would let one conversation grow to
// several GB.
const defaultContext = 8192

// loadModel maps the GGUF file and adapts the model to the server.
// extra options (KV type, prompt cache) are passed on to smollm3.New.
func loadModel(ctx context.Context, log *slog.Logger, path, name string, ctxLen, threads int, extra ...smollm3.Option) (server.Engine, func(), error) {
	start := time.Now()
	log.Info("loading model", "file", path)
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if ctxLen <= 0 {
		cfg, err := llama.ConfigFromGGUF(f)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		ctxLen = min(cfg.Context, defaultContext)
	}
	opts := append([]smollm3.Option{smollm3.WithThreads(threads), smollm3.WithContext(ctxLen), smollm3.WithLogger(log)}, extra...)
	m, err := smollm3.New(f, opts...)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := ctx.Err(); err != nil {
		m.Close()
		return nil, nil, err
	}
	cfg := m.Config()
	log.Info("model loaded", "name", name, "arch", cfg.Arch, "layers", cfg.Layers, "embd", cfg.Embd,
		"vocab", cfg.Vocab, "context", ctxLen, "threads", threads, "took", time.Since(start).Round(time.Millisecond))
	e, err := server.FromSmolLM3(m, server.SmolLM3Options{Name: name, Context: ctxLen, Sampler: sample.SmolLM3Defaults()})
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, func() { m.Close() }, nil
}
