//go:build !cuda

package cuda

import (
	"errors"
	"testing"
)

func TestNewBackendWithoutTag(t *testing.T) {
	b, err := NewBackend(demoModel(t), Options{Device: "cuda:0"})
	if b != nil || !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("NewBackend = %v, %v; want ErrNotBuilt", b, err)
	}
}
