package smollm3

import (
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/cuda"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/llama"
)

// newBackend returns the engine backend that runs llm on cfg.Device: the
// CPU (llama's batched step, the default and the reference) or an NVIDIA GPU
// ("cuda" or "cuda:N", in a binary built with -tags cuda).
func newBackend(llm *llama.Model, kv llama.CacheOptions, cfg engine.Config) (engine.Backend, error) {
	switch d := cfg.Device; {
	case d == "" || d == "cpu":
		return llama.NewBackend(llm, llama.BackendOptions{KVType: kv.Type, MaxLen: kv.MaxLen, BatchSize: cfg.BatchSize})
	case d == "cuda" || strings.HasPrefix(d, "cuda:"):
		return cuda.NewBackend(llm, cuda.Options{Device: d, Context: kv.MaxLen, BatchSize: cfg.BatchSize, KVType: cfg.KVType, Logger: cfg.Logger})
	default:
		return nil, fmt.Errorf("device %q: use cpu, cuda or cuda:N", d)
	}
}
