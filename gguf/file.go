package gguf

import (
	"errors"
	"fmt"
	"math"
	"os"
	"unsafe"
)

// KV is one metadata entry. Value holds one of uint8, int8, uint16, int16,
// uint32, int32, uint64, int64, float32, float64, bool, string; a typed
// slice of those ([]uint32, []string, []float32, ...) for an array; or
// []any, whose elements are again arrays, for an array of arrays.
type KV struct {
	Key   string
	Value any
}

// TensorInfo describes one tensor: its name, shape, element type and where
// its bytes start in the data section.
type TensorInfo struct {
	Name   string
	Dims   []uint64 // ggml order: Dims[0] is the row length (contiguous elements)
	Type   Type
	Offset uint64 // from the start of the data section, as stored
}

// NumElements returns the number of elements (the product of Dims).
func (t *TensorInfo) NumElements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Size returns the tensor's size in bytes. For a tensor read from a file,
// or accepted by Write, it cannot overflow.
func (t *TensorInfo) Size() uint64 {
	bs := uint64(t.Type.BlockSize())
	if bs == 0 {
		return 0
	}
	return t.NumElements() / bs * uint64(t.Type.BlockBytes())
}

// File is a decoded GGUF file: its metadata and tensor directory, plus the
// bytes (usually a memory mapping) the tensor data is read from.
//
// A File is safe for concurrent reads. Slices returned by TensorData are
// valid until Close.
type File struct {
	Version    uint32       // 2 or 3
	KV         []KV         // metadata, in file order
	Tensors    []TensorInfo // tensor infos, in file order
	Alignment  uint64       // data alignment: general.alignment or 32
	DataOffset uint64       // byte offset of the data section in the file

	data        []byte       // the whole file
	unmap       func() error // releases data (Open); nil for Parse
	kvIndex     map[string]int
	tensorIndex map[string]int
}

// Close releases the memory mapping of a file opened with [Open]. Slices
// returned by [File.TensorData] must not be used afterwards. Close is a
// no-op for a File made by [Parse], and calling it twice is harmless.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap, f.data = nil, nil
	return err
}

// DropPages tells the system that the process will not read b, bytes of
// this file's mapping (a tensor's data from TensorData), again soon: their
// memory pages leave the process's resident set but stay in the page cache,
// and reading them later brings them back, so b stays valid. A model that
// keeps its own copy of a tensor (an interleaved one) calls it so that the
// file's copy does not count twice. It does nothing for a File made by
// Parse or for bytes outside the mapping.
func (f *File) DropPages(b []byte) error {
	if f.unmap == nil || len(b) == 0 || len(f.data) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p+uintptr(len(b)) > base+uintptr(len(f.data)) {
		return nil
	}
	// The mapping starts on a page; round b out to whole pages of it.
	page := os.Getpagesize()
	lo := int(p-base) &^ (page - 1)
	hi := min(len(f.data), (int(p-base)+len(b)+page-1)&^(page-1))
	return dropPages(f.data[lo:hi])
}

// Tensor returns the info of the tensor with the given name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of tensor t (one of f.Tensors) in ggml's
// layout, without copying: for an opened file they are read-only memory of
// the mapping and writing to them faults. It returns nil after Close.
func (f *File) TensorData(t *TensorInfo) []byte {
	start := f.DataOffset + t.Offset
	end := start + t.Size()
	if f.data == nil || end > uint64(len(f.data)) || start > end {
		return nil
	}
	return f.data[start:end:end]
}

// ErrKeyNotFound is wrapped by the accessors' error for a missing key.
var ErrKeyNotFound = errors.New("key not found")

// Get returns the value stored under key (see [KV] for its Go types).
func (f *File) Get(key string) (any, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return nil, false
	}
	return f.KV[i].Value, true
}

func (f *File) lookup(key string) (any, error) {
	v, ok := f.Get(key)
	if !ok {
		return nil, fmt.Errorf("gguf: metadata key %q: %w", key, ErrKeyNotFound)
	}
	return v, nil
}

func typeError(key string, v any, want string) error {
	return fmt.Errorf("gguf: metadata key %q holds %s, want %s", key, describe(v), want)
}

// describe names a value's GGUF type, e.g. "uint32" or "array of string".
func describe(v any) string {
	t, e, err := ValueTypeOf(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	if t == ValueArray {
		return "array of " + e.String()
	}
	return t.String()
}

// typed returns the value under key if it has Go type T.
func typed[T any](f *File, key, want string) (T, error) {
	var zero T
	v, err := f.lookup(key)
	if err != nil {
		return zero, err
	}
	x, ok := v.(T)
	if !ok {
		return zero, typeError(key, v, want)
	}
	return x, nil
}

// String returns the string stored under key.
func (f *File) String(key string) (string, error) { return typed[string](f, key, "string") }

// asInt64 widens any integer value; ok is false for other types, and big
// is true for a uint64 above MaxInt64.
func asInt64(v any) (n int64, big, ok bool) {
	switch x := v.(type) {
	case uint8:
		return int64(x), false, true
	case int8:
		return int64(x), false, true
	case uint16:
		return int64(x), false, true
	case int16:
		return int64(x), false, true
	case uint32:
		return int64(x), false, true
	case int32:
		return int64(x), false, true
	case int64:
		return x, false, true
	case uint64:
		if x > math.MaxInt64 {
			return 0, true, true
		}
		return int64(x), false, true
	}
	return 0, false, false
}

// Uint32 returns the integer stored under key. Any integer value type is
// accepted if its value fits in a uint32.
func (f *File) Uint32(key string) (uint32, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	n, big, ok := asInt64(v)
	if !ok {
		return 0, typeError(key, v, "an integer")
	}
	if big || n < 0 || n > math.MaxUint32 {
		return 0, fmt.Errorf("gguf: metadata key %q: %v does not fit in a uint32", key, v)
	}
	return uint32(n), nil
}

// Int64 returns the integer stored under key. Any integer value type is
// accepted if its value fits in an int64.
func (f *File) Int64(key string) (int64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	n, big, ok := asInt64(v)
	if !ok {
		return 0, typeError(key, v, "an integer")
	}
	if big {
		return 0, fmt.Errorf("gguf: metadata key %q: %v does not fit in an int64", key, v)
	}
	return n, nil
}

// Float32 returns the float stored under key, as float32 or float64 (which
// is rounded to float32).
func (f *File) Float32(key string) (float32, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case float32:
		return x, nil
	case float64:
		return float32(x), nil
	}
	return 0, typeError(key, v, "float32 or float64")
}

// Bool returns the bool stored under key.
func (f *File) Bool(key string) (bool, error) { return typed[bool](f, key, "bool") }

// Strings returns the array of strings stored under key. The slice is the
// File's own; do not modify it.
func (f *File) Strings(key string) ([]string, error) {
	return typed[[]string](f, key, "array of string")
}

// Int32s returns the integer array stored under key as int32s. Arrays of
// any integer type are accepted if every element fits in an int32. The
// result is a fresh slice, except for an int32 array, which is the File's
// own and must not be modified.
func (f *File) Int32s(key string) ([]int32, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case []int32:
		return x, nil
	case []uint8:
		return convertInts(key, x)
	case []int8:
		return convertInts(key, x)
	case []uint16:
		return convertInts(key, x)
	case []int16:
		return convertInts(key, x)
	case []uint32:
		return convertInts(key, x)
	case []uint64:
		return convertInts(key, x)
	case []int64:
		return convertInts(key, x)
	}
	return nil, typeError(key, v, "array of integers")
}

type integer interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~uint64 | ~int64
}

func convertInts[T integer](key string, in []T) ([]int32, error) {
	out := make([]int32, len(in))
	for i, x := range in {
		if x < 0 && int64(x) < math.MinInt32 || x > 0 && uint64(x) > math.MaxInt32 {
			return nil, fmt.Errorf("gguf: metadata key %q: element %d (%v) does not fit in an int32", key, i, x)
		}
		out[i] = int32(x)
	}
	return out, nil
}

// Float32s returns the float array stored under key. A float64 array is
// rounded to a fresh []float32; a float32 array is the File's own and must
// not be modified.
func (f *File) Float32s(key string) ([]float32, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case []float32:
		return x, nil
	case []float64:
		out := make([]float32, len(x))
		for i, y := range x {
			out[i] = float32(y)
		}
		return out, nil
	}
	return nil, typeError(key, v, "array of float32 or float64")
}

// Architecture returns general.architecture ("llama", "smollm3", ...), the
// prefix of the model's hyper-parameter keys.
func (f *File) Architecture() (string, error) {
	return f.String("general.architecture")
}
