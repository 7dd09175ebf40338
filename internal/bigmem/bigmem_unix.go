//go:build unix

package bigmem

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// alloc maps n bytes of private anonymous memory: pages are zero and cost
// nothing until written. It asks for transparent huge pages (where the
// system gives them on request, as with Linux's default "madvise" mode):
// 2 MB pages make filling the buffer 512 times fewer page faults, and
// streaming through it fewer TLB misses. The advice is only advice; its
// failure is not an error.
func alloc(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("bigmem: mapping %d bytes: %w", n, err)
	}
	adviseHuge(b)
	return b, nil
}

func free(b []byte) error { return unix.Munmap(b) }
