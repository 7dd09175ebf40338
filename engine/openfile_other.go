//go:build !unix

package engine

import "os"

// openNoWait opens path for reading (see openfile_unix.go; other systems
// have no FIFOs that block an open).
func openNoWait(path string) (*os.File, error) { return os.Open(path) }
