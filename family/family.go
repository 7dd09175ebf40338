// Package family is where a llama-family architecture becomes a model the
// engine opens. A family package (smollm3, and models/qwen3, models/qwen2,
// models/llamaarch, models/gemma3, models/granite, models/phi3) registers a
// Family: its general.architecture name, a function that describes its
// block as data (llama.Arch) from a file's hyper-parameters, and a function
// that builds its Format (chat template, tokenizer, reasoning and tool-call
// syntax). Register makes engine.Open take the family's files; everything
// else is shared: package llama loads the weights as the description says
// (and checks them against it), llama.NewBackend runs them on the device
// the program asks for (the CPU, or a GPU registered by importing package
// cuda) with the engine's options as they are, and package engine batches
// the sessions.
//
// # Opening a model
//
// engine.Open is the one opener; package models imports every family:
//
//	import _ "github.com/smolgo/smolgo/models"
//
//	m, err := engine.Open("model.gguf", engine.WithThreads(4))
//	if err != nil { ... }
//	defer m.Close()
//	s := m.NewSession()
//
// A tool or test that needs what the model is made of (the logits without
// sessions, the weights, the description, the file, the tokenizer) gets
// its Parts with Of:
//
//	p, ok := family.Of(m) // false for a model that is not a family's
//	fmt.Println(p.Arch().Features())
//	cache, err := p.NewCache()
//	logits, err := p.Forward(ctx, cache, tokens, 0, false)
//
// # Adding a family
//
// A new family is one package with two files:
//
//   - the description (see llama.Arch for what the block offers: RoPE layout,
//     base, rotated dimensions and frequency factors per layer, LongRoPE's
//     short and long factors, NoPE layers, per-head QK norm, QKV biases,
//     post-attention and post-FFN norms, SiLU or GELU gating, sliding-window
//     layers, embedding, query, attention-score, residual and logit scales,
//     logit soft-cap; llama.LoadWeights reads q, k, v and gate, up as
//     separate or fused tensors);
//   - the format (FormatSpec: a template renderer, the end-of-turn markers,
//     the reasoning tags and a ToolSyntax).
//
// and an init function calling Register, and its import in package models.
// A hand-written format is for the templates it was verified on: the family
// recognises them (by their SHA-256, KnownTemplate) and gives any other file
// its own template through the Jinja engine (FileFormat, TemplateSpec),
// whose markers are read from the template; engine.WithChatTemplate
// replaces a file's template. Granite (package models/granite) is an
// example of a family that is only data: its four multipliers are Arch
// fields. Only a feature the block lacks (a new kind of layer) touches
// package llama: see its documentation for how a kind joins the block, and
// the devices' lists of what they implement.
package family

import (
	"fmt"
	"slices"
	"sync"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
)

// A Family is a llama-family architecture as its package registers it.
type Family struct {
	// Arch is the general.architecture value of its files.
	Arch string
	// Describe returns the block's description for a file whose
	// hyper-parameters are cfg (llama.ConfigFromGGUF); it reads the
	// family's own keys and tensors (windows, RoPE factors) from f.
	Describe func(f *gguf.File, cfg llama.Config) (llama.Arch, error)
	// Format returns the file's format. It should not fail for a file
	// without a tokenizer (such a model still runs Forward): read the
	// tokenizer lazily, as NewFormat does.
	Format func(f *gguf.File) (engine.Format, error)
}

var registry struct {
	sync.RWMutex
	m map[string]Family
}

// Register makes a family available to engine.Open (and to Lookup and
// Describe). It panics if the architecture is empty or registered twice, or
// a function is missing: programming errors of the registering package.
func Register(fam Family) {
	if fam.Arch == "" || fam.Describe == nil || fam.Format == nil {
		panic("family: Register needs an architecture name, Describe and Format")
	}
	registry.Lock()
	if _, dup := registry.m[fam.Arch]; dup {
		registry.Unlock()
		panic("family: architecture " + fam.Arch + " registered twice")
	}
	if registry.m == nil {
		registry.m = make(map[string]Family)
	}
	registry.m[fam.Arch] = fam
	registry.Unlock()
	engine.Register(engine.Architecture{Name: fam.Arch, Load: func(f *gguf.File, cfg engine.Config) (engine.Loaded, error) {
		return load(fam, f, cfg)
	}})
}

// Families lists the registered architectures, sorted.
func Families() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.m))
	for n := range registry.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the family registered for an architecture.
func Lookup(arch string) (Family, bool) {
	registry.RLock()
	defer registry.RUnlock()
	f, ok := registry.m[arch]
	return f, ok
}

// Describe reads f's hyper-parameters and the description its family gives
// them: what a backend needs besides the tensors, for a tool that looks at
// a file without running it (examples/ggufinfo). llama.LoadWeights checks
// the description against the file (llama.Arch.Validate), once, as a load
// does. The error names the architecture and the registered ones when no
// family has it.
func Describe(f *gguf.File) (llama.Config, llama.Arch, error) {
	arch, err := f.Architecture()
	if err != nil {
		return llama.Config{}, llama.Arch{}, fmt.Errorf("family: %w", err)
	}
	fam, ok := Lookup(arch)
	if !ok {
		return llama.Config{}, llama.Arch{}, unsupported(arch)
	}
	return describe(fam, f)
}

// describe is fam's description of f, named after the family when the
// family leaves the name empty.
func describe(fam Family, f *gguf.File) (llama.Config, llama.Arch, error) {
	cfg, err := llama.ConfigFromGGUF(f)
	if err != nil {
		return llama.Config{}, llama.Arch{}, err
	}
	a, err := fam.Describe(f, cfg)
	if err != nil {
		return llama.Config{}, llama.Arch{}, fmt.Errorf("%s: %w", fam.Arch, err)
	}
	if a.Name == "" {
		a.Name = fam.Arch
	}
	return cfg, a, nil
}

func unsupported(arch string) error {
	known := Families()
	if len(known) == 0 {
		return fmt.Errorf("family: architecture %q: no family is registered (import github.com/smolgo/smolgo/models, or a family package)", arch)
	}
	if arch == "bert" {
		return fmt.Errorf("family: architecture %q is an encoder, not a llama family: engine.Open opens it (package models/bert)", arch)
	}
	return fmt.Errorf("family: unsupported architecture %q (supported: %v)", arch, known)
}
