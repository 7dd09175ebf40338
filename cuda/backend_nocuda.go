//go:build !cuda

package cuda

import (
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/llama"
)

// NewBackend would place llm on the GPU opts.Device; this binary was built
// without -tags cuda, so it returns ErrNotBuilt.
func NewBackend(llm *llama.Model, opts Options) (engine.Backend, error) {
	return nil, ErrNotBuilt
}
