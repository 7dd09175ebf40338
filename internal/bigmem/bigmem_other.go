//go:build !unix

package bigmem

// alloc falls back to the Go heap where there is no Unix mmap.
func alloc(n int) ([]byte, error) { return make([]byte, n), nil }

func free([]byte) error { return nil }
