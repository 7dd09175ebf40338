package llama

import (
	"fmt"
	"log/slog"
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
// which picks the device named in DeviceOptions.Device.
type Device struct {
	// Name is the device's name: it serves "name" and "name:N" (N a
	// device number the device itself parses).
	Name string
	// New makes a backend running w. The backend may implement io.Closer
	// to free what it holds (device memory); w and its file stay the
	// caller's.
	New func(w *Weights, opts DeviceOptions) (backend.Backend, error)
}

// DeviceOptions say how NewBackend runs Weights.
type DeviceOptions struct {
	// Device names the device: "" or "cpu" for the CPU, "cuda" or
	// "cuda:N" for a registered GPU device.
	Device string
	// Threads is the number of CPU threads (CPU device; 0: one per CPU).
	Threads int
	// BatchSize is the most tokens one step takes (0: DefaultBatchSize).
	BatchSize int
	// KVType is the element type of the KV caches.
	KVType KVType
	// MaxLen bounds each cache (0: the model's context length).
	MaxLen int
	// KeepLayout keeps the CPU's weights in the file's layout (see
	// Options.KeepLayout).
	KeepLayout bool
	// Logger receives load messages (nil: slog.Default()).
	Logger *slog.Logger
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

// NewBackend runs w on the device opts.Device and returns its backend. On
// the CPU that is a new CPU runner (NewCPU) as a backend whose Close stops
// the runner; its CPU method returns the runner (for Forward without the
// engine). A device that is not registered is an error naming the
// registered ones and the import that adds a GPU.
func NewBackend(w *Weights, opts DeviceOptions) (backend.Backend, error) {
	name, _, _ := strings.Cut(opts.Device, ":")
	if name == "" || name == "cpu" {
		if opts.Device != "" && opts.Device != "cpu" {
			return nil, fmt.Errorf("llama: device %q: the CPU takes no number", opts.Device)
		}
		m, err := NewCPU(w, Options{Threads: opts.Threads, BatchSize: opts.BatchSize, KeepLayout: opts.KeepLayout})
		if err != nil {
			return nil, err
		}
		b, err := newCPUBackend(m, BackendOptions{KVType: opts.KVType, MaxLen: opts.MaxLen, BatchSize: opts.BatchSize})
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
