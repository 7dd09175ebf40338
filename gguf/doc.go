// Package gguf reads and writes GGUF files, the single-file model format of
// llama.cpp and ggml.
//
// # The format
//
// A GGUF file is, in order:
//
//	header        magic "GGUF", version (2 or 3), tensor count, metadata count
//	metadata      key/value pairs: a string key, a value type, a value
//	tensor infos  per tensor: name, dimensions, element type, data offset
//	padding       zeros up to the alignment (general.alignment, default 32)
//	data          the tensors' bytes, each starting at an aligned offset
//
// All numbers are little endian. Metadata values are scalars (8 to 64-bit
// integers, float32, float64, bool), strings (a uint64 length and UTF-8
// bytes), or arrays of one value type, which may itself be an array.
//
// Tensor dimensions are in ggml order: Dims[0] is the number of contiguous
// elements in a row, Dims[1] the number of rows, and so on. A weight matrix
// that multiplies a vector of length n to give m outputs has Dims [n, m].
//
// # Reading
//
// [Open] memory-maps a file, so opening a multi-gigabyte model costs
// milliseconds: only the header, metadata and tensor infos are decoded, and
// [File.TensorData] returns slices of the mapping without copying. [Parse]
// does the same over bytes already in memory. Metadata is read through typed
// accessors such as [File.Uint32] and [File.Strings], whose errors name the
// key; a missing key's error wraps [ErrKeyNotFound].
//
// Every count, length, offset and dimension in a file is checked against the
// file's size and sane limits before anything is allocated, so a truncated
// or hostile file yields a [*FormatError] naming the problem and its byte
// offset, never a panic or a huge allocation.
//
// # Writing
//
// [Write] streams a GGUF v3 file: metadata and tensor infos first, then each
// tensor's bytes, taken from [WriterTensor.Data] or produced on demand by
// [WriterTensor.Write], so a large model never has to be in memory at once.
// Files written by Write are laid out the way llama.cpp writes them: a file
// that llama.cpp wrote, read with Parse and written back with Write, comes
// out byte for byte the same (the tests check this on every golden model).
package gguf
