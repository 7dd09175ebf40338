package llama

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/smolgo/smolgo/backend"
)

// A Device runs a model's Weights somewhere and makes the backend that
// steps it. The CPU is built in (device "cpu", CPU's batched step); other
// devices register themselves from an init function of their package, so a
// program opts into a GPU with an import (package cuda registers "cuda"):
//
//	import _ "github.com/smolgo/smolgo/cuda"
//
// Families never name a device: they hand their Weights to NewBackend,
// which picks the device named in Options.Device.
type Device struct {
	// Name is the device's name: it serves "name" and "name:N" (N a
	// device number the device itself parses).
	Name string
	// New makes a backend running w with opts as the program set them
	// (opts.Device is the full name, "name" or "name:N"). The backend may
	// implement io.Closer to free what it holds (device memory); w and its
	// file stay the caller's.
	New func(w *Weights, opts Options) (backend.Backend, error)
}

var devices struct {
	sync.RWMutex
	m map[string]Device
}

// RegisterDevice makes a device available to NewBackend. It panics if the
// name is empty, "cpu", contains ':', is registered twice, or New is nil:
// these are programming errors of the registering package.
func RegisterDevice(d Device) {
	devices.Lock()
	defer devices.Unlock()
	switch {
	case d.Name == "" || d.Name == "cpu" || strings.Contains(d.Name, ":") || d.New == nil:
		panic("llama: RegisterDevice needs a name other than cpu, without ':', and a New function")
	case devices.m[d.Name].New != nil:
		panic("llama: device " + d.Name + " registered twice")
	}
	if devices.m == nil {
		devices.m = make(map[string]Device)
	}
	devices.m[d.Name] = d
}

// Devices lists the devices NewBackend knows: "cpu" and the registered ones,
// sorted.
func Devices() []string {
	devices.RLock()
	defer devices.RUnlock()
	names := []string{"cpu"}
	for n := range devices.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// NewBackend runs w on the device opts.Device and returns its backend:
// the one way a family's model gets one (package family calls it with the
// engine's options, unchanged). On the CPU that is a new CPU runner
// (NewCPU with opts) as a backend (see (*CPU).AsBackend) whose caches take
// opts.KVType and opts.Context and whose Close stops the runner; its CPU
// method returns the runner (for Forward without the engine). A device
// that is not registered is an error naming the registered ones and the
// import that adds a GPU.
func NewBackend(w *Weights, opts Options) (backend.Backend, error) {
	name, _, _ := strings.Cut(opts.Device, ":")
	if name == "" || name == "cpu" {
		if opts.Device != "" && opts.Device != "cpu" {
			return nil, fmt.Errorf("llama: device %q: the CPU takes no number", opts.Device)
		}
		m, err := NewCPU(w, opts)
		if err != nil {
			return nil, err
		}
		b, err := newCPUBackend(m, CacheOptions{KVType: opts.KVType, Context: opts.Context, BatchSize: opts.BatchSize})
		if err != nil {
			m.Close()
			return nil, err
		}
		b.owns = true
		return b, nil
	}
	devices.RLock()
	d, ok := devices.m[name]
	devices.RUnlock()
	if !ok {
		return nil, fmt.Errorf("llama: device %q is not registered (have %v; a program opts into NVIDIA GPUs by importing github.com/smolgo/smolgo/cuda and building with -tags cuda)", opts.Device, Devices())
	}
	return d.New(w, opts)
}
