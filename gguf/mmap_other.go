//go:build !unix

package gguf

import (
	"io"
	"os"
)

// mapFile reads the whole file on systems without a Unix mmap.
func mapFile(fd uintptr, size int) ([]byte, func() error, error) {
	f := os.NewFile(fd, "")
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(size)), b); err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}

// dropPages does nothing where the file was read, not mapped.
func dropPages([]byte) error { return nil }
