//go:build cuda

package cuda

import (
	"strings"
	"testing"
)

// Opening a library that is not there is the "no driver" error, whatever
// the machine has.
func TestOpenDriverMissing(t *testing.T) {
	_, err := openDriver("/nonexistent/libcuda.so.1")
	if err == nil || !strings.HasPrefix(err.Error(), "cuda: no CUDA driver: ") || !strings.Contains(err.Error(), "/nonexistent/libcuda.so.1") {
		t.Fatalf("error %v", err)
	}
}

// NewBackend fails with one clear error when there is no driver, and
// checks the device name before it looks for one.
func TestNewBackendNoDriver(t *testing.T) {
	m := demoModel(t)
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Device: "cuda:0", Library: "/nonexistent/libcuda.so.1"}, "cuda: no CUDA driver: /nonexistent/libcuda.so.1"},
		{Options{Device: "cuda:x", Library: "/nonexistent/libcuda.so.1"}, `cuda: device "cuda:x"`},
		{Options{Device: "cuda", KVType: "q8_0", Library: "/nonexistent/libcuda.so.1"}, `cuda: KV cache type "q8_0"`},
	} {
		b, err := NewBackend(m, c.opts)
		if b != nil || err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: NewBackend = %v, %v; want error %q", c.opts, b, err, c.want)
		}
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
