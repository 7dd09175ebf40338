package gguf

import (
	"fmt"
	"math"
	"os"
)

// Open memory-maps the GGUF file at path (read-only) and decodes its header,
// metadata and tensor infos. Tensor data is not read until used. Call Close
// when done with the File and every slice from TensorData.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close() // the mapping outlives the descriptor
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < 24 {
		return nil, fmt.Errorf("%s: %w", path, &FormatError{Offset: uint64(size), Item: "header", Msg: fmt.Sprintf("file of %d bytes is too short for a GGUF header (24 bytes)", size)})
	}
	if uint64(size) > math.MaxInt {
		return nil, fmt.Errorf("gguf: %s: %d bytes is too large to map on this platform", path, size)
	}
	data, unmap, err := mapFile(fh.Fd(), int(size))
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = unmap
	return f, nil
}
