// Package bigmem allocates large byte buffers outside the Go heap, for
// copies of model weights that live as long as a model: the garbage
// collector neither counts them (a heap of a gigabyte of weights would let
// a gigabyte of garbage pile up before each collection) nor has to wait to
// return them: Free gives the memory back to the system at once.
package bigmem

import "fmt"

// Alloc returns n zero bytes. Free them exactly once, and not use them
// afterwards.
func Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("bigmem: allocation of %d bytes", n)
	}
	return alloc(n)
}

// Free returns b (from Alloc) to the system.
func Free(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return free(b)
}
