package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
)

// WriterTensor is one tensor for [Write]: its name, shape (ggml order),
// type, and its bytes in ggml's layout, given either as Data or produced by
// Write, a function that must write exactly the tensor's size in bytes.
// Write is called once, in tensor order, so tensors can be quantized one at
// a time while the file is written.
type WriterTensor struct {
	Name  string
	Dims  []uint64
	Type  Type
	Data  []byte                  // either Data ...
	Write func(w io.Writer) error // ... or a function that writes exactly Size bytes
}

// Size returns the tensor's size in bytes.
func (t *WriterTensor) Size() uint64 {
	ti := TensorInfo{Dims: t.Dims, Type: t.Type}
	return ti.Size()
}

// Write writes a GGUF v3 file to w: the metadata kv in order, the tensor
// infos, and each tensor's data at an offset aligned to general.alignment
// (a uint32 in kv) or 32, padded with zeros, as llama.cpp lays files out.
//
// Metadata values must have one of the Go types listed for [KV]. Everything
// is checked before the first byte is written: keys and tensor names must
// be unique and non-empty, names at most [MaxNameLen] bytes (ggml's limit),
// dims 1 to [MaxDims] positive numbers whose first is a multiple of the
// type's block size, and Data, when given, exactly the tensor's size.
func Write(w io.Writer, kv []KV, tensors []WriterTensor) error {
	align := uint64(DefaultAlignment)
	keys := make(map[string]bool, len(kv))
	for _, e := range kv {
		if e.Key == "" {
			return errors.New("gguf: write: empty metadata key")
		}
		if keys[e.Key] {
			return fmt.Errorf("gguf: write: duplicate metadata key %q", e.Key)
		}
		keys[e.Key] = true
		if err := checkValue(e.Value, 0); err != nil {
			return fmt.Errorf("gguf: write: metadata key %q: %w", e.Key, err)
		}
		if e.Key == "general.alignment" {
			a, ok := e.Value.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 || a > MaxAlignment {
				return fmt.Errorf("gguf: write: general.alignment must be a uint32 power of two up to %d, is %T %v", MaxAlignment, e.Value, e.Value)
			}
			align = uint64(a)
		}
	}
	names := make(map[string]bool, len(tensors))
	offsets := make([]uint64, len(tensors))
	var off uint64
	for i := range tensors {
		t := &tensors[i]
		if err := checkWriterTensor(t); err != nil {
			return fmt.Errorf("gguf: write: tensor %d %q: %w", i, t.Name, err)
		}
		if names[t.Name] {
			return fmt.Errorf("gguf: write: duplicate tensor name %q", t.Name)
		}
		names[t.Name] = true
		offsets[i] = off
		off = alignUp(off+t.Size(), align)
	}

	e := &encoder{w: bufio.NewWriterSize(w, 1<<16)}
	e.bytes([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kv)))
	for _, kv := range kv {
		e.str(kv.Key)
		typ, _, _ := ValueTypeOf(kv.Value)
		e.u32(uint32(typ))
		e.value(kv.Value)
	}
	for i, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(offsets[i])
	}
	e.pad(align)
	for i := range tensors {
		t := &tensors[i]
		if e.err != nil {
			return e.err
		}
		if t.Write == nil {
			e.bytes(t.Data)
		} else {
			cw := &countWriter{w: e.w}
			if err := t.Write(cw); err != nil {
				return fmt.Errorf("gguf: write: tensor %q: %w", t.Name, err)
			}
			e.n += cw.n
			if cw.n != t.Size() {
				return fmt.Errorf("gguf: write: tensor %q: its Write wrote %d bytes, want %d", t.Name, cw.n, t.Size())
			}
		}
		e.pad(align)
	}
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

func checkWriterTensor(t *WriterTensor) error {
	if t.Name == "" {
		return errors.New("empty name")
	}
	if len(t.Name) > MaxNameLen {
		return fmt.Errorf("name is %d bytes, ggml allows at most %d", len(t.Name), MaxNameLen)
	}
	if !t.Type.Known() {
		return fmt.Errorf("unknown type %d", uint32(t.Type))
	}
	if len(t.Dims) < 1 || len(t.Dims) > MaxDims {
		return fmt.Errorf("%d dimensions, want 1 to %d", len(t.Dims), MaxDims)
	}
	n := uint64(1)
	for _, d := range t.Dims {
		if d == 0 || d > math.MaxInt64 {
			return fmt.Errorf("dims %v: each must be 1 to 2^63-1", t.Dims)
		}
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > math.MaxInt64 {
			return fmt.Errorf("dims %v: element count overflows", t.Dims)
		}
		n = lo
	}
	if bs := uint64(t.Type.BlockSize()); t.Dims[0]%bs != 0 {
		return fmt.Errorf("row length %d is not a multiple of %s's block size %d", t.Dims[0], t.Type, bs)
	}
	if hi, _ := bits.Mul64(n/uint64(t.Type.BlockSize()), uint64(t.Type.BlockBytes())); hi != 0 {
		return fmt.Errorf("byte size of %v %s overflows", t.Dims, t.Type)
	}
	if (t.Data == nil) == (t.Write == nil) {
		if t.Data == nil {
			return errors.New("neither Data nor Write is set")
		}
		return errors.New("both Data and Write are set")
	}
	if t.Data != nil && uint64(len(t.Data)) != t.Size() {
		return fmt.Errorf("Data has %d bytes, %v %s takes %d", len(t.Data), t.Dims, t.Type, t.Size())
	}
	return nil
}

// checkValue checks that v has a GGUF encoding; depth counts array nesting.
func checkValue(v any, depth int) error {
	typ, elem, err := ValueTypeOf(v)
	if err != nil {
		return err
	}
	if typ != ValueArray {
		return nil
	}
	if depth >= MaxArrayDepth {
		return fmt.Errorf("arrays nested more than %d deep", MaxArrayDepth)
	}
	if elem == ValueArray {
		for i, x := range v.([]any) {
			t, _, err := ValueTypeOf(x)
			if err == nil && t != ValueArray {
				err = fmt.Errorf("element %d is a %s; a []any must hold only arrays", i, t)
			}
			if err == nil {
				err = checkValue(x, depth+1)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// encoder writes little-endian values, remembering the first error and
// the number of bytes written.
type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
	buf [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	_, e.err = e.w.Write(b)
	e.n += uint64(len(b))
}

func (e *encoder) u8(v uint8)   { e.buf[0] = v; e.bytes(e.buf[:1]) }
func (e *encoder) u16(v uint16) { binary.LittleEndian.PutUint16(e.buf[:], v); e.bytes(e.buf[:2]) }
func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:], v); e.bytes(e.buf[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.bytes(e.buf[:8]) }

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
		e.n += uint64(len(s))
	}
}

func (e *encoder) pad(align uint64) {
	var zero [64]byte
	for k := alignUp(e.n, align) - e.n; k > 0; {
		m := min(k, uint64(len(zero)))
		e.bytes(zero[:m])
		k -= m
	}
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// value writes v's encoding without its type tag (checked by checkValue).
func (e *encoder) value(v any) {
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		e.u8(boolByte(x))
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case []uint8:
		e.arrayHeader(ValueUint8, len(x))
		e.bytes(x)
	case []int8:
		writeArray(e, ValueInt8, x, func(v int8) { e.u8(uint8(v)) })
	case []uint16:
		writeArray(e, ValueUint16, x, e.u16)
	case []int16:
		writeArray(e, ValueInt16, x, func(v int16) { e.u16(uint16(v)) })
	case []uint32:
		writeArray(e, ValueUint32, x, e.u32)
	case []int32:
		writeArray(e, ValueInt32, x, func(v int32) { e.u32(uint32(v)) })
	case []float32:
		writeArray(e, ValueFloat32, x, func(v float32) { e.u32(math.Float32bits(v)) })
	case []bool:
		writeArray(e, ValueBool, x, func(v bool) { e.u8(boolByte(v)) })
	case []string:
		writeArray(e, ValueString, x, e.str)
	case []uint64:
		writeArray(e, ValueUint64, x, e.u64)
	case []int64:
		writeArray(e, ValueInt64, x, func(v int64) { e.u64(uint64(v)) })
	case []float64:
		writeArray(e, ValueFloat64, x, func(v float64) { e.u64(math.Float64bits(v)) })
	case []any:
		writeArray(e, ValueArray, x, e.value)
	}
}

func (e *encoder) arrayHeader(t ValueType, n int) {
	e.u32(uint32(t))
	e.u64(uint64(n))
}

func writeArray[T any](e *encoder, t ValueType, xs []T, put func(T)) {
	e.arrayHeader(t, len(xs))
	for _, x := range xs {
		put(x)
	}
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n uint64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}
