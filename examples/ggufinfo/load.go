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
	Loads     bool     `json:"loads"`
	Error     string   `json:"error,omitempty"` // why it does not load
	Family    string   `json:"family,omitempty"`
	Features  []string `json:"features,omitempty"`
	Chat      bool     `json:"chat"`                         // the tokenizer reads
	ChatError string   `json:"chat_error,omitempty"`         // why it cannot chat
	Warnings  []string `json:"tokenizer_warnings,omitempty"` // quirks the tokenizer passed over, as llama.cpp does
	CUDAError string   `json:"cuda_error,omitempty"`         // a feature the CUDA backend lacks
	Families  []string `json:"supported_families,omitempty"`
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
	return c
}
