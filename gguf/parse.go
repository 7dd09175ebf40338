package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// Limits on what a file may declare. They are far above what real models
// use (SmolLM3's vocabulary is 128,256 tokens and 280,147 merges) and keep
// a hostile file from making the reader allocate much more than its size:
// every count in a header is checked against the bytes left before anything
// is allocated for it, and the worst case (a file of nothing but one-byte
// keys) costs about 12 bytes of memory per byte of file
// (TestParseMemoryBounded). Counts inside the metadata (a model's block
// count, its widths) are the model package's to check against the tensors
// the file holds.
const (
	// MaxDims is the most dimensions a tensor may have (ggml's GGML_MAX_DIMS).
	MaxDims = 4
	// MaxNameLen is the longest tensor name ggml accepts (GGML_MAX_NAME-1).
	MaxNameLen = 63
	// MaxKeyLen is the longest metadata key this package reads.
	MaxKeyLen = 1 << 16
	// MaxArrayDepth is the deepest nesting of arrays this package reads.
	MaxArrayDepth = 8
	// MaxArrayElements bounds the elements of all arrays of strings and
	// arrays of arrays in a file's metadata together. (Numeric arrays cost no
	// more memory than their bytes in the file and are bounded by its size.)
	MaxArrayElements = 1 << 24
	// MaxAlignment is the largest general.alignment this package accepts.
	MaxAlignment = 1 << 20
)

// maxReadNameLen is what the reader accepts for tensor names: more than
// ggml's limit, so that a file with long names can still be inspected.
const maxReadNameLen = 1024

// FormatError describes a malformed GGUF file: what is wrong, where it was
// found (a byte offset from the start of the file) and in which item.
type FormatError struct {
	Offset uint64 // byte offset in the file where the problem was found
	Item   string // the header field, metadata key or tensor concerned
	Msg    string
}

func (e *FormatError) Error() string {
	if e.Item == "" {
		return fmt.Sprintf("gguf: byte %d: %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("gguf: byte %d: %s: %s", e.Offset, e.Item, e.Msg)
}

// decoder walks the header and metadata of a GGUF image, checking every
// read against the bytes that are left.
type decoder struct {
	b        []byte
	off      uint64
	item     string // what is being decoded, for errors
	elements uint64 // array elements read so far (MaxArrayElements)
}

func (d *decoder) errorf(at uint64, format string, args ...any) error {
	return &FormatError{Offset: at, Item: d.item, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) left() uint64 { return uint64(len(d.b)) - d.off }

func (d *decoder) need(n uint64, what string) error {
	if n > d.left() {
		return d.errorf(d.off, "%s needs %d bytes, only %d left in the %d-byte file", what, n, d.left(), len(d.b))
	}
	return nil
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v, nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.need(8, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v, nil
}

// str reads a length-prefixed string of at most max bytes.
func (d *decoder) str(what string, max uint64) (string, error) {
	at := d.off
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > max {
		return "", d.errorf(at, "%s length %d exceeds the limit of %d", what, n, max)
	}
	if n > d.left() {
		return "", d.errorf(at, "%s length %d exceeds the %d bytes left in the file", what, n, d.left())
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s, nil
}

// Parse decodes a GGUF image held in memory. The returned File refers to
// data (tensor bytes are not copied), so data must not change while the
// File is in use. Parse checks everything [Open] checks.
func Parse(data []byte) (*File, error) {
	d := &decoder{b: data}
	f := &File{data: data}
	if err := d.header(f); err != nil {
		return nil, err
	}
	return f, nil
}

func (d *decoder) header(f *File) error {
	d.item = "header"
	if len(d.b) < 4 || string(d.b[:4]) != Magic {
		n := min(len(d.b), 4)
		return d.errorf(0, "not a GGUF file: starts with %q, want %q", d.b[:n], Magic)
	}
	d.off = 4
	version, err := d.u32("version")
	if err != nil {
		return err
	}
	switch {
	case version == 2 || version == 3:
	case version == 1:
		return d.errorf(4, "GGUF version 1 (32-bit counts) is not supported; convert the file with a current llama.cpp")
	case version&0xffff == 0 && bits.ReverseBytes32(version) <= 3:
		return d.errorf(4, "big-endian GGUF (version %d byte-swapped) is not supported", bits.ReverseBytes32(version))
	default:
		return d.errorf(4, "unsupported GGUF version %d (want 2 or 3)", version)
	}
	f.Version = version
	nTensors, err := d.u64("tensor count")
	if err != nil {
		return err
	}
	nKV, err := d.u64("metadata count")
	if err != nil {
		return err
	}
	// Each key/value takes at least 8+1+4+1 bytes, each tensor info 8+1+4+8+4+8.
	const minKV, minTensor = 14, 33
	if nKV > d.left()/minKV {
		return d.errorf(16, "metadata count %d cannot fit in the %d bytes left (each entry takes at least %d)", nKV, d.left(), minKV)
	}
	if nTensors > d.left()/minTensor {
		return d.errorf(8, "tensor count %d cannot fit in the %d bytes left (each tensor info takes at least %d)", nTensors, d.left(), minTensor)
	}

	f.KV = make([]KV, 0, nKV)
	f.kvIndex = make(map[string]int, nKV)
	for i := range nKV {
		d.item = fmt.Sprintf("metadata entry %d", i)
		at := d.off
		key, err := d.str("key", MaxKeyLen)
		if err != nil {
			return err
		}
		if key == "" {
			return d.errorf(at, "empty key")
		}
		if !utf8.ValidString(key) {
			return d.errorf(at, "key %q is not valid UTF-8", key)
		}
		d.item = fmt.Sprintf("key %q", key)
		if _, dup := f.kvIndex[key]; dup {
			return d.errorf(at, "duplicate key")
		}
		typAt := d.off
		t, err := d.u32("value type")
		if err != nil {
			return err
		}
		v, err := d.value(ValueType(t), typAt, 0)
		if err != nil {
			return err
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}

	f.Alignment = DefaultAlignment
	if v, ok := f.Get("general.alignment"); ok {
		d.item = `key "general.alignment"`
		a, ok := v.(uint32)
		if !ok {
			return d.errorf(d.off, "must be a uint32, is %T", v)
		}
		if a == 0 || a&(a-1) != 0 || a > MaxAlignment {
			return d.errorf(d.off, "alignment %d is not a power of two between 1 and %d", a, MaxAlignment)
		}
		f.Alignment = uint64(a)
	}

	f.Tensors = make([]TensorInfo, nTensors)
	f.tensorIndex = make(map[string]int, nTensors)
	for i := range nTensors {
		if err := d.tensorInfo(f, int(i)); err != nil {
			return err
		}
	}
	d.item = ""
	f.DataOffset = alignUp(d.off, f.Alignment)
	return d.checkData(f)
}

func (d *decoder) tensorInfo(f *File, i int) error {
	d.item = fmt.Sprintf("tensor info %d", i)
	at := d.off
	name, err := d.str("name", maxReadNameLen)
	if err != nil {
		return err
	}
	if name == "" {
		return d.errorf(at, "empty tensor name")
	}
	d.item = fmt.Sprintf("tensor %q", name)
	if _, dup := f.tensorIndex[name]; dup {
		return d.errorf(at, "duplicate tensor name")
	}
	ndAt := d.off
	nd, err := d.u32("dimension count")
	if err != nil {
		return err
	}
	if nd < 1 || nd > MaxDims {
		return d.errorf(ndAt, "%d dimensions, want 1 to %d", nd, MaxDims)
	}
	t := &f.Tensors[i]
	t.Name = name
	t.Dims = make([]uint64, nd)
	count := uint64(1)
	for j := range t.Dims {
		dimAt := d.off
		v, err := d.u64("dimension")
		if err != nil {
			return err
		}
		if v == 0 || v > math.MaxInt64 {
			return d.errorf(dimAt, "dimension %d is %d, want 1 to 2^63-1", j, v)
		}
		hi, lo := bits.Mul64(count, v)
		if hi != 0 || lo > math.MaxInt64 {
			return d.errorf(dimAt, "element count of %v overflows", t.Dims[:j+1])
		}
		count = lo
		t.Dims[j] = v
	}
	typAt := d.off
	typ, err := d.u32("type")
	if err != nil {
		return err
	}
	t.Type = Type(typ)
	if !t.Type.Known() {
		return d.errorf(typAt, "unknown tensor type %d", typ)
	}
	if bs := uint64(t.Type.BlockSize()); t.Dims[0]%bs != 0 {
		return d.errorf(typAt, "row length %d is not a multiple of %s's block size %d", t.Dims[0], t.Type, bs)
	}
	if hi, _ := bits.Mul64(count/uint64(t.Type.BlockSize()), uint64(t.Type.BlockBytes())); hi != 0 {
		return d.errorf(typAt, "byte size of %v %s overflows", t.Dims, t.Type)
	}
	offAt := d.off
	if t.Offset, err = d.u64("data offset"); err != nil {
		return err
	}
	if t.Offset%f.Alignment != 0 {
		return d.errorf(offAt, "data offset %d is not a multiple of the alignment %d", t.Offset, f.Alignment)
	}
	f.tensorIndex[name] = i
	return nil
}

// checkData checks that every tensor lies inside the data section and that
// no two tensors overlap.
func (d *decoder) checkData(f *File) error {
	if len(f.Tensors) == 0 {
		return nil
	}
	size := uint64(len(d.b))
	if f.DataOffset > size {
		return d.errorf(size, "file ends before the data section at byte %d", f.DataOffset)
	}
	dataSize := size - f.DataOffset
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	for _, t := range f.Tensors {
		n := t.Size()
		if t.Offset > dataSize || n > dataSize-t.Offset {
			return &FormatError{Offset: f.DataOffset + min(t.Offset, dataSize), Item: fmt.Sprintf("tensor %q", t.Name),
				Msg: fmt.Sprintf("data [%d, +%d bytes) runs past the end of the %d-byte data section (file truncated?)", t.Offset, n, dataSize)}
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		oa, ob := f.Tensors[a].Offset, f.Tensors[b].Offset
		switch {
		case oa < ob:
			return -1
		case oa > ob:
			return 1
		}
		return 0
	})
	for k := 1; k < len(order); k++ {
		p, q := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if p.Offset+p.Size() > q.Offset {
			return &FormatError{Offset: f.DataOffset + q.Offset, Item: fmt.Sprintf("tensor %q", q.Name),
				Msg: fmt.Sprintf("data at offset %d overlaps tensor %q [%d, +%d bytes)", q.Offset, p.Name, p.Offset, p.Size())}
		}
	}
	return nil
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

// value decodes one metadata value of type t; typAt is where its type tag was.
func (d *decoder) value(t ValueType, typAt uint64, depth int) (any, error) {
	if t == ValueArray {
		return d.array(depth + 1)
	}
	if t == ValueString {
		return d.str("string", math.MaxUint64)
	}
	n := uint64(t.fixedSize())
	if n == 0 {
		return nil, d.errorf(typAt, "unknown value type %d", uint32(t))
	}
	if err := d.need(n, t.String()+" value"); err != nil {
		return nil, err
	}
	b := d.b[d.off : d.off+n]
	at := d.off
	d.off += n
	switch t {
	case ValueUint8:
		return b[0], nil
	case ValueInt8:
		return int8(b[0]), nil
	case ValueUint16:
		return binary.LittleEndian.Uint16(b), nil
	case ValueInt16:
		return int16(binary.LittleEndian.Uint16(b)), nil
	case ValueUint32:
		return binary.LittleEndian.Uint32(b), nil
	case ValueInt32:
		return int32(binary.LittleEndian.Uint32(b)), nil
	case ValueFloat32:
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case ValueBool:
		if b[0] > 1 {
			return nil, d.errorf(at, "bool value %d is neither 0 nor 1", b[0])
		}
		return b[0] == 1, nil
	case ValueUint64:
		return binary.LittleEndian.Uint64(b), nil
	case ValueInt64:
		return int64(binary.LittleEndian.Uint64(b)), nil
	default: // ValueFloat64
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	}
}

// array decodes an array value: element type, count, elements. Arrays of a
// scalar or string type become typed slices; arrays of arrays become []any.
func (d *decoder) array(depth int) (any, error) {
	at := d.off
	if depth > MaxArrayDepth {
		return nil, d.errorf(at, "arrays nested more than %d deep", MaxArrayDepth)
	}
	et, err := d.u32("array element type")
	if err != nil {
		return nil, err
	}
	t := ValueType(et)
	min := uint64(t.minSize())
	if min == 0 {
		return nil, d.errorf(at, "unknown array element type %d", et)
	}
	cntAt := d.off
	n, err := d.u64("array length")
	if err != nil {
		return nil, err
	}
	if n > d.left()/min {
		return nil, d.errorf(cntAt, "array of %d %s cannot fit in the %d bytes left", n, t, d.left())
	}
	if t == ValueArray || t == ValueString {
		// Each element costs a Go header bigger than its encoding, so
		// these count against a budget for the whole file.
		if d.elements += n; d.elements > MaxArrayElements {
			return nil, d.errorf(cntAt, "metadata string and nested arrays hold more than %d elements in all", MaxArrayElements)
		}
		if t == ValueString {
			return d.strings(n)
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = d.array(depth + 1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	size := n * uint64(t.fixedSize()) // fits: n <= left/size
	b := d.b[d.off : d.off+size]
	elAt := d.off
	d.off += size
	le := binary.LittleEndian
	switch t {
	case ValueUint8:
		return slices.Clone(b), nil
	case ValueInt8:
		return decodeSlice(b, 1, func(b []byte) int8 { return int8(b[0]) }), nil
	case ValueUint16:
		return decodeSlice(b, 2, le.Uint16), nil
	case ValueInt16:
		return decodeSlice(b, 2, func(b []byte) int16 { return int16(le.Uint16(b)) }), nil
	case ValueUint32:
		return decodeSlice(b, 4, le.Uint32), nil
	case ValueInt32:
		return decodeSlice(b, 4, func(b []byte) int32 { return int32(le.Uint32(b)) }), nil
	case ValueFloat32:
		return decodeSlice(b, 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) }), nil
	case ValueBool:
		for i, c := range b {
			if c > 1 {
				return nil, d.errorf(elAt+uint64(i), "bool array element %d is %d, neither 0 nor 1", i, c)
			}
		}
		return decodeSlice(b, 1, func(b []byte) bool { return b[0] == 1 }), nil
	case ValueUint64:
		return decodeSlice(b, 8, le.Uint64), nil
	case ValueInt64:
		return decodeSlice(b, 8, func(b []byte) int64 { return int64(le.Uint64(b)) }), nil
	default: // ValueFloat64
		return decodeSlice(b, 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }), nil
	}
}

// strings decodes an array of n strings. A first pass checks the lengths
// and sums them, then all the strings are copied into one allocation: a
// 128k-token vocabulary costs two allocations, not 128k.
func (d *decoder) strings(n uint64) ([]string, error) {
	start := d.off
	var total uint64
	for i := range n {
		at := d.off
		k, err := d.u64("string length")
		if err != nil {
			return nil, err
		}
		if k > d.left() {
			return nil, d.errorf(at, "length %d of string %d of %d exceeds the %d bytes left in the file", k, i, n, d.left())
		}
		d.off += k
		total += k
	}
	var sb strings.Builder
	sb.Grow(int(total))
	d.off = start
	for range n {
		k := binary.LittleEndian.Uint64(d.b[d.off:])
		sb.Write(d.b[d.off+8 : d.off+8+k])
		d.off += 8 + k
	}
	all := sb.String() // no copy
	out := make([]string, n)
	var pos uint64
	d.off = start
	for i := range out {
		k := binary.LittleEndian.Uint64(d.b[d.off:])
		out[i] = all[pos : pos+k]
		pos += k
		d.off += 8 + k
	}
	return out, nil
}

func decodeSlice[T any](b []byte, size int, get func([]byte) T) []T {
	out := make([]T, len(b)/size)
	for i := range out {
		out[i] = get(b[i*size:])
	}
	return out
}
