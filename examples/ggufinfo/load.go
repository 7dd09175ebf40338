package main

import (
	"github.com/smolgo/smolgo/cuda"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	_ "github.com/smolgo/smolgo/models" // every family smolgo runs
	"github.com/smolgo/smolgo/tokenizer"
)

// loadCheck says whether smolgo runs the file, and why not: the family of
// its architecture, the block's description (what it uses beyond the plain
// llama block), every tensor the description needs, and the tokenizer
// (without which the model runs Forward but cannot chat).
type loadCheck struct {
	Loads     bool        `json:"loads"`
	Error     string      `json:"error,omitempty"` // why it does not load
	Family    string      `json:"family,omitempty"`
	Features  []string    `json:"features,omitempty"`
	Chat      bool        `json:"chat"`                         // the tokenizer reads
	ChatError string      `json:"chat_error,omitempty"`         // why it cannot chat
	Warnings  []string    `json:"tokenizer_warnings,omitempty"` // quirks the tokenizer passed over, as llama.cpp does
	CUDAError string      `json:"cuda_error,omitempty"`         // a feature the CUDA backend lacks
	Memory    []memoryRow `json:"memory_per_sequence,omitempty"`
	Families  []string    `json:"supported_families,omitempty"`
}

// checkLoad runs the loader's checks without building a runner: no thread
// starts and no weight is copied.
func checkLoad(f *gguf.File) *loadCheck {
	c := &loadCheck{}
	cfg, arch, err := family.Describe(f)
	if err == nil {
		_, err = llama.LoadWeights(f, cfg, arch)
	}
	if err != nil {
		c.Error = err.Error()
		c.Families = family.Families()
		return c
	}
	c.Loads, c.Family, c.Features = true, arch.Name, arch.Features()
	if tok, err := tokenizer.FromGGUF(f); err != nil {
		c.ChatError = err.Error()
	} else {
		c.Chat, c.Warnings = true, tok.Warnings()
	}
	// A backend gets the description for the cache length engine.Open uses by
	// default (the training context): LongRoPE resolved.
	resolved := arch.ForContext(cfg.Context)
	if err := resolved.Unsupported("cuda", cuda.Features()...); err != nil {
		c.CUDAError = err.Error()
	}
	c.Memory = memoryRows(cfg, &arch)
	return c
}

// memoryRow is one sequence's cache at a context length (llama.Arch's
// SequenceMemory): the attention layers' keys and values in either cache
// type, and a hybrid's recurrent state and the most its checkpoints take.
type memoryRow struct {
	Context     int   `json:"context"`
	KVF16       int64 `json:"kv_f16_bytes"`
	KVQ8        int64 `json:"kv_q8_0_bytes"`
	State       int64 `json:"state_bytes"`
	Checkpoints int64 `json:"checkpoints_bytes"`
}

// memoryRows gives the rows at 4,096 and 32,768 positions and at the
// model's context, those no longer than it.
func memoryRows(cfg llama.Config, arch *llama.Arch) []memoryRow {
	var rows []memoryRow
	for _, n := range []int{4096, 32768, cfg.Context} {
		if n > cfg.Context || (len(rows) > 0 && rows[len(rows)-1].Context >= n) {
			continue
		}
		opts := llama.CacheOptions{Context: n}
		f16 := arch.SequenceMemory(cfg, opts, n)
		opts.KVType = llama.KVQ8_0
		q8 := arch.SequenceMemory(cfg, opts, n)
		rows = append(rows, memoryRow{Context: n, KVF16: f16.KV, KVQ8: q8.KV, State: f16.State, Checkpoints: f16.Checkpoints})
	}
	return rows
}
