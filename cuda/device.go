package cuda

import (
	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/llama"
)

// Importing this package registers the device "cuda" ("cuda" for device 0,
// "cuda:N" for device N) with package llama, so that every family's models
// run on an NVIDIA GPU when a program asks for it (engine.WithDevice).
// Built without -tags cuda, the device is registered but answers
// ErrNotBuilt.
func init() {
	llama.RegisterDevice(llama.Device{Name: "cuda", New: func(w *llama.Weights, o llama.Options) (backend.Backend, error) {
		return NewBackend(w, Options{Device: o.Device, Context: o.Context, BatchSize: o.BatchSize, KVType: o.KVType, Logger: o.Logger})
	}})
}
