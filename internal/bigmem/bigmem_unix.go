//go:build unix

package bigmem

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// alloc maps n bytes of private anonymous memory: pages are zero and cost
// nothing until written. (Transparent huge pages were tried: on a 2-vCPU
// Zen 3 VM with the kernel's "madvise" defrag mode, asking for them made
// loading the 3B model's copies 1.6-2.2 s → 2.3-3.6 s, the kernel
// compacting memory at each fault, with no measurable gain in decode.)
func alloc(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("bigmem: mapping %d bytes: %w", n, err)
	}
	return b, nil
}

func free(b []byte) error { return unix.Munmap(b) }
