package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/models/bert"
	"github.com/smolgo/smolgo/server"
)

// loadEncoder serves a BERT file (bge, all-MiniLM, a reranker): the API
// answers POST /v1/embeddings (or /v1/rerank for a reranker), and chat
// requests get a 400 that says so.
func loadEncoder(ctx context.Context, log *slog.Logger, f *gguf.File, path, name string, threads int, extra ...engine.Option) (server.Engine, func(), error) {
	start := time.Now()
	f.Close()
	m, err := bert.Load(path, append([]engine.Option{engine.WithThreads(threads), engine.WithLogger(log)}, extra...)...)
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		m.Close()
		return nil, nil, err
	}
	info := m.EmbedInfo()
	log.Info("embedding model loaded", "name", name, "arch", bert.Arch, "layers", m.Config().Layers, "embd", info.Dim,
		"pooling", info.Pooling, "max_tokens", info.MaxTokens, "threads", threads, "took", time.Since(start).Round(time.Millisecond))
	e, err := server.FromModel(m.Model, server.ModelOptions{Name: name})
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, func() { m.Close() }, nil
}
