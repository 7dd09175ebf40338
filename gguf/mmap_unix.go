//go:build unix

package gguf

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of the open file fd read-only and shared: pages
// are loaded on first touch and shared with the page cache, so opening a
// large model costs no reading or copying.
func mapFile(fd uintptr, size int) ([]byte, func() error, error) {
	b, err := unix.Mmap(int(fd), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return b, func() error { return unix.Munmap(b) }, nil
}

// dropPages tells the kernel the process will not read b, whole pages of a
// mapping made by mapFile, soon: they leave the process's resident set but
// stay in the page cache, and a later read faults them back in with the
// file's bytes, so nothing is lost.
func dropPages(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }
