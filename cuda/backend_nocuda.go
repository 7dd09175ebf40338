//go:build !cuda

package cuda

import (
	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/llama"
)

// NewBackend would place w on the GPU opts.Device; this binary was built
// without -tags cuda, so it returns ErrNotBuilt.
func NewBackend(w *llama.Weights, opts Options) (backend.Backend, error) {
	return nil, ErrNotBuilt
}
