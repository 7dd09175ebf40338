//go:build unix

package engine

import (
	"os"
	"syscall"
)

// openNoWait opens path for reading without waiting for a writer: a FIFO
// (or another special file) put where a snapshot was expected would block
// a plain open until someone writes to it.
func openNoWait(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
