package engine

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/smolgo/smolgo/gguf"
)

// An Architecture loads models of one general.architecture for Open. A
// model package registers its architectures from an init function, the way
// image formats and database/sql drivers register: package family
// registers every llama family it is told of (family.Register), package
// models/bert its encoder:
//
//	func init() {
//		engine.Register(engine.Architecture{Name: "bert", Load: load})
//	}
//
// A program imports the model packages it wants to open, for their side
// effect: `import _ "github.com/smolgo/smolgo/models"` registers them all.
type Architecture struct {
	// Name is the general.architecture value of the files it loads.
	Name string
	// Load builds the model's backend and format over an open file with
	// cfg.Options (the device, threads, KV cache and so on, for the
	// backend as they are). On success it owns f: the returned Close
	// releases it (and the backend), after the engine has stopped using
	// them. On error Open closes f.
	Load func(f *gguf.File, cfg Config) (Loaded, error)
}

// Loaded is what an Architecture's Load returns.
type Loaded struct {
	// Backend computes a decoder's steps; Encoder instead computes an
	// encoder-only model's embeddings (one of the two is set).
	Backend Backend
	Encoder Encoder
	Format  Format
	// Pooling is the file's pooling_type (PoolDefault: none) and
	// Matryoshka its MatryoshkaKey: Open puts them in the model's Config
	// unless options set them.
	Pooling    Pooling
	Matryoshka []int
	// Parts, if not nil, is what the model is made of as the
	// architecture's package describes it, for callers that need more than
	// sessions (Model.Parts returns it; package family's Of reads it).
	Parts any
	// Close releases what Load opened (the file, the backend's threads or
	// device memory).
	Close func() error
}

var registry struct {
	sync.RWMutex
	archs map[string]Architecture
}

// Register makes an architecture available to Open. It panics if the name
// is empty, Load is nil, or the name is registered twice: these are
// programming errors of the registering package.
func Register(a Architecture) {
	registry.Lock()
	defer registry.Unlock()
	if a.Name == "" || a.Load == nil {
		panic("engine: Register needs a name and a Load function")
	}
	if _, dup := registry.archs[a.Name]; dup {
		panic("engine: architecture " + a.Name + " registered twice")
	}
	if registry.archs == nil {
		registry.archs = make(map[string]Architecture)
	}
	registry.archs[a.Name] = a
}

// Architectures lists the registered architecture names, sorted.
func Architectures() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.archs))
	for n := range registry.archs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookup(name string) (Architecture, bool) {
	registry.RLock()
	defer registry.RUnlock()
	a, ok := registry.archs[name]
	return a, ok
}

// Open loads a GGUF model file with the architecture registered for its
// general.architecture and returns it ready for sessions: the one way a
// program opens a model file. The options set both what the architecture's
// loader builds (device, threads, KV cache type and length, batch size:
// Config.Options, handed to the device unchanged) and the engine's
// settings. The file's own defaults fill in what the options leave unset:
// its pooling_type (Config.Pooling), its Matryoshka widths
// (Config.Matryoshka), and, with a prompt cache on disk, the weights'
// fingerprint as Config.ModelID. Close the model when done; it closes the
// file. An architecture nobody registered is an error naming it and the
// registered ones.
func Open(path string, opts ...Option) (*Model, error) {
	cfg, err := NewConfig(opts...)
	if err != nil {
		return nil, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	arch, err := f.Architecture()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("engine: %s: %w", path, err)
	}
	a, ok := lookup(arch)
	if !ok {
		f.Close()
		known := Architectures()
		if len(known) == 0 {
			return nil, fmt.Errorf("engine: %s: architecture %q: no architectures are registered (import github.com/smolgo/smolgo/models, or a model package)", path, arch)
		}
		return nil, fmt.Errorf("engine: %s: unsupported architecture %q (registered: %v)", path, arch, slices.Clip(known))
	}
	l, err := a.Load(f, cfg)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("engine: %s: %w", path, err)
	}
	if cfg.Pooling == PoolDefault {
		cfg.Pooling = l.Pooling
	}
	if cfg.Matryoshka == nil {
		cfg.Matryoshka = l.Matryoshka
	}
	if cfg.PromptCacheDir != "" && cfg.ModelID == "" {
		cfg.ModelID = f.Fingerprint() // prompt-cache files are for these weights only
	}
	var m *Model
	if l.Encoder != nil {
		m, err = NewEncoder(l.Encoder, l.Format, cfg)
	} else {
		m, err = New(l.Backend, l.Format, cfg)
	}
	if err != nil {
		if l.Close != nil {
			l.Close()
		}
		return nil, err
	}
	m.release, m.parts = l.Close, l.Parts
	if cfg.Projector != "" {
		if err := m.attachProjector(arch); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}
