package cuda

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/smolgo/smolgo/backend"
)

// DefaultLibrary is the driver library NewBackend opens when
// Options.Library is empty.
const DefaultLibrary = "libcuda.so.1"

// Options say how NewBackend places a model on a GPU: backend.Options'
// fields a GPU has a use for, under the same names (the device registered
// with package llama copies them over), and the driver library.
type Options struct {
	// Device is "cuda" (device 0) or "cuda:N".
	Device string
	// Context bounds each sequence's cache to this many positions (default
	// and maximum: the model's trained context).
	Context int
	// BatchSize is the most tokens one Step takes (default 512); it sizes
	// the device work buffers.
	BatchSize int
	// KVType is the cache element type; only f16 (the zero value) runs on
	// the GPU so far.
	KVType backend.KVType
	// Library is the driver library to open (default DefaultLibrary).
	Library string
	// Logger receives load messages (default slog.Default()).
	Logger *slog.Logger
}

// ErrNotBuilt is returned by NewBackend in binaries built without -tags cuda.
var ErrNotBuilt = errors.New("cuda: this binary was built without CUDA support (rebuild with -tags cuda)")

// ParseDevice reads a device name, "cuda" or "cuda:N", and returns N.
func ParseDevice(s string) (int, error) {
	if s == "cuda" {
		return 0, nil
	}
	num, ok := strings.CutPrefix(s, "cuda:")
	if !ok {
		return 0, fmt.Errorf("cuda: device %q is not \"cuda\" or \"cuda:N\"", s)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || num != strconv.Itoa(n) {
		return 0, fmt.Errorf("cuda: device %q: %q is not a device number (0, 1, ...)", s, num)
	}
	return n, nil
}

// checkDevice reports a device number outside the count the driver sees.
func checkDevice(n, count int) error {
	switch {
	case count == 0:
		return fmt.Errorf("cuda: the CUDA driver sees no device")
	case n >= count:
		return fmt.Errorf("cuda: no device cuda:%d: the CUDA driver sees %d (cuda:0 to cuda:%d)", n, count, count-1)
	}
	return nil
}
