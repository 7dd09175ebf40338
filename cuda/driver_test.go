//go:build cuda

package cuda

import (
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
)

// Opening a library that is not there is the "no driver" error, whatever
// the machine has; the device name and the model are checked before the
// driver is looked for.
func TestNewBackendNoDriver(t *testing.T) {
	const lib = "/nonexistent/libcuda.so.1"
	if _, err := openDriver(lib); err == nil || !strings.HasPrefix(err.Error(), "cuda: no CUDA driver: "+lib) {
		t.Errorf("openDriver: %v", err)
	}
	m := demoModel(t)
	if b, err := NewBackend(m, Options{Device: "cuda:0", Library: lib}); b != nil || err == nil || !strings.HasPrefix(err.Error(), "cuda: no CUDA driver: "+lib) {
		t.Errorf("NewBackend = %v, %v", b, err)
	}
	if _, err := NewBackend(m, Options{Device: "cuda:x", Library: lib}); err == nil || !strings.HasPrefix(err.Error(), `cuda: device "cuda:x"`) {
		t.Errorf("bad device: %v", err)
	}
	if _, err := NewBackend(m, Options{Device: "cuda", KVType: backend.KVQ8_0, Library: lib}); err == nil || !strings.HasPrefix(err.Error(), `cuda: KV cache type "q8_0"`) {
		t.Errorf("q8_0 cache: %v", err)
	}
}

// On a machine without the NVIDIA driver (CI) the default library is
// missing and the error says so, naming it; with a driver but no GPU the
// driver's own complaint comes back.
func TestNewBackendDefaultLibrary(t *testing.T) {
	b, err := NewBackend(demoModel(t), Options{Device: "cuda:0"})
	if err == nil {
		b.(*Backend).Close()
		t.Skip("a CUDA driver and device are present: the GPU tests (gputest.sh) cover this machine")
	}
	t.Logf("error: %v", err)
	for _, ok := range []string{"cuda: no CUDA driver: libcuda.so.1: ", "cuda: cuInit: ", "cuda: the CUDA driver sees no device"} {
		if strings.HasPrefix(err.Error(), ok) {
			return
		}
	}
	t.Fatalf("error %q", err)
}
