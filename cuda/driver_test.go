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
