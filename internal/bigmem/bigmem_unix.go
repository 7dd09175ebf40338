//go:build unix

package bigmem

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// alloc maps n bytes of private anonymous memory: pages are zero and cost
// nothing until written.
func alloc(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("bigmem: mapping %d bytes: %w", n, err)
	}
	return b, nil
}

func free(b []byte) error { return unix.Munmap(b) }
