package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// raw builds GGUF bytes by hand, so tests can write what Write refuses to.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func (r *raw) header(version uint32, nTensors, nKV uint64) *raw {
	r.WriteString("GGUF")
	return r.u32(version).u64(nTensors).u64(nKV)
}
func (r *raw) kvU32(key string, v uint32) *raw {
	return r.str(key).u32(uint32(gguf.ValueUint32)).u32(v)
}

// tensor writes a tensor info.
func (r *raw) tensor(name string, typ gguf.Type, offset uint64, dims ...uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(uint32(typ)).u64(offset)
}

// data pads to 32 and appends n zero bytes.
func (r *raw) data(n int) []byte {
	for r.Len()%32 != 0 {
		r.WriteByte(0)
	}
	r.Write(make([]byte, n))
	return r.Bytes()
}

func TestParseRejects(t *testing.T) {
	nested := func(depth int) []byte {
		r := new(raw).header(3, 0, 1)
		r.str("deep").u32(uint32(gguf.ValueArray))
		for range depth - 1 {
			r.u32(uint32(gguf.ValueArray)).u64(1)
		}
		r.u32(uint32(gguf.ValueUint8)).u64(0)
		return r.data(0)
	}
	tests := []struct {
		name string
		data []byte
		want string // in the error message
	}{
		{"empty", nil, "not a GGUF file"},
		{"magic", []byte("GGML\x03\x00\x00\x00"), "not a GGUF file"},
		{"version 1", new(raw).header(1, 0, 0).data(0), "version 1"},
		{"version 4", new(raw).header(4, 0, 0).data(0), "unsupported GGUF version 4"},
		{"big endian", new(raw).header(3<<24, 0, 0).data(0), "big-endian"},
		{"short header", []byte("GGUF\x03\x00\x00\x00\x01"), "tensor count needs 8 bytes"},
		{"huge kv count", new(raw).header(3, 0, 1<<60).data(0), "metadata count"},
		{"huge tensor count", new(raw).header(3, 1<<60, 0).data(0), "tensor count"},
		{"key length", new(raw).header(3, 0, 1).u64(1 << 40).data(64), "key length 1099511627776 exceeds"},
		{"key past end", new(raw).header(3, 0, 1).u64(100).data(12), "exceeds the"},
		{"empty key", new(raw).header(3, 0, 1).str("").u32(0).data(8), "empty key"},
		{"duplicate key", new(raw).header(3, 0, 2).kvU32("a.b", 1).kvU32("a.b", 2).data(0), `key "a.b": duplicate key`},
		{"value type", new(raw).header(3, 0, 1).str("k").u32(13).data(8), `key "k": unknown value type 13`},
		{"string past end", new(raw).header(3, 0, 1).str("k").u32(uint32(gguf.ValueString)).u64(1000).data(0), "string length 1000 exceeds"},
		{"array length", new(raw).header(3, 0, 1).str("k").u32(uint32(gguf.ValueArray)).u32(uint32(gguf.ValueUint32)).u64(1 << 61).data(64), "array of 2305843009213693952 uint32 cannot fit"},
		{"string array length", new(raw).header(3, 0, 1).str("k").u32(uint32(gguf.ValueArray)).u32(uint32(gguf.ValueString)).u64(100).data(64), "array of 100 string cannot fit"},
		{"string array element", new(raw).header(3, 0, 1).str("k").u32(uint32(gguf.ValueArray)).u32(uint32(gguf.ValueString)).u64(2).str("x").u64(1 << 50).data(0), "string 1 of 2"},
		{"array element type", new(raw).header(3, 0, 1).str("k").u32(uint32(gguf.ValueArray)).u32(99).u64(0).data(0), "unknown array element type 99"},
		{"deep arrays", nested(gguf.MaxArrayDepth + 1), "nested more than"},
		{"alignment type", new(raw).header(3, 0, 1).str("general.alignment").u32(uint32(gguf.ValueUint64)).u64(32).data(0), "must be a uint32"},
		{"alignment value", new(raw).header(3, 0, 1).kvU32("general.alignment", 48).data(0), "not a power of two"},
		{"no dims", new(raw).header(3, 1, 0).tensor("t", gguf.TypeF32, 0).data(0), `tensor "t": 0 dimensions`},
		{"5 dims", new(raw).header(3, 1, 0).tensor("t", gguf.TypeF32, 0, 1, 1, 1, 1, 1).data(4), "5 dimensions"},
		{"zero dim", new(raw).header(3, 1, 0).tensor("t", gguf.TypeF32, 0, 4, 0).data(0), "dimension 1 is 0"},
		{"overflow", new(raw).header(3, 1, 0).tensor("t", gguf.TypeF32, 0, 1<<32, 1<<32).data(0), "overflows"},
		{"byte overflow", new(raw).header(3, 1, 0).tensor("t", gguf.TypeF64, 0, 1<<62).data(0), "overflows"},
		{"tensor type", new(raw).header(3, 1, 0).tensor("t", 77, 0, 4).data(16), "unknown tensor type 77"},
		{"block size", new(raw).header(3, 1, 0).tensor("t", gguf.TypeQ4_K, 0, 128).data(144), "not a multiple of q4_K's block size 256"},
		{"unaligned offset", new(raw).header(3, 1, 0).tensor("t", gguf.TypeF32, 4, 4).data(64), "not a multiple of the alignment 32"},
		{"data past end", new(raw).header(3, 1, 0).tensor("t", gguf.TypeF32, 0, 16).data(63), "runs past the end"},
		{"offset past end", new(raw).header(3, 1, 0).tensor("t", gguf.TypeF32, 1<<40, 16).data(64), "runs past the end"},
		{"overlap", new(raw).header(3, 2, 0).tensor("a", gguf.TypeF32, 0, 16).tensor("b", gguf.TypeF32, 32, 8).data(96), `tensor "b": data at offset 32 overlaps tensor "a"`},
		{"duplicate tensor", new(raw).header(3, 2, 0).tensor("a", gguf.TypeF32, 0, 8).tensor("a", gguf.TypeF32, 32, 8).data(64), `tensor "a": duplicate tensor name`},
		{"empty name", new(raw).header(3, 1, 0).tensor("", gguf.TypeF32, 0, 8).data(32), "empty tensor name"},
		{"long name", new(raw).header(3, 1, 0).tensor(strings.Repeat("n", 2000), gguf.TypeF32, 0, 8).data(32), "name length 2000 exceeds the limit"},
	}
	if _, err := gguf.Parse(nested(gguf.MaxArrayDepth)); err != nil {
		t.Errorf("arrays nested %d deep: %v", gguf.MaxArrayDepth, err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := gguf.Parse(tc.data)
			if err == nil {
				t.Fatalf("accepted: %d tensors, %d keys", len(f.Tensors), len(f.KV))
			}
			var fe *gguf.FormatError
			if !errors.As(err, &fe) {
				t.Errorf("error %T %v is not a *FormatError", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "byte ") {
				t.Errorf("error %q does not name a byte offset", err)
			}
		})
	}
}

func TestParseBoolValues(t *testing.T) {
	mk := func(b byte) []byte {
		r := new(raw).header(3, 0, 2)
		r.str("one").u32(uint32(gguf.ValueBool)).WriteByte(b)
		r.str("arr").u32(uint32(gguf.ValueArray)).u32(uint32(gguf.ValueBool)).u64(2).Write([]byte{1, b})
		return r.data(0)
	}
	f, err := gguf.Parse(mk(0))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := f.Bool("one"); err != nil || v {
		t.Errorf("one = %v, %v", v, err)
	}
	if v, _ := f.Get("arr"); !slicesEqual(v.([]bool), []bool{true, false}) {
		t.Errorf("arr = %v", v)
	}
	if _, err := gguf.Parse(mk(2)); err == nil || !strings.Contains(err.Error(), "neither 0 nor 1") {
		t.Errorf("bool 2: %v", err)
	}
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestParseVersion2 checks that v2 files (same layout as v3) are read.
func TestParseVersion2(t *testing.T) {
	data := new(raw).header(2, 1, 1).kvU32("general.alignment", 64).tensor("t", gguf.TypeF32, 0, 4).data(0)
	for len(data)%64 != 0 {
		data = append(data, 0)
	}
	data = append(data, make([]byte, 16)...)
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || f.Alignment != 64 || f.DataOffset%64 != 0 || len(f.TensorData(&f.Tensors[0])) != 16 {
		t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
}

func testKV() []gguf.KV {
	return []gguf.KV{
		{"general.architecture", "llama"},
		{"u8", uint8(200)},
		{"i8", int8(-5)},
		{"u16", uint16(65535)},
		{"i16", int16(-300)},
		{"u32", uint32(4000000000)},
		{"i32", int32(-7)},
		{"u64", uint64(math.MaxUint64)},
		{"i64", int64(-1 << 40)},
		{"f32", float32(1e-6)},
		{"f64", 5e6},
		{"b", true},
		{"s", "héllo"},
		{"au8", []uint8{1, 2, 3}},
		{"ai8", []int8{-1, 2}},
		{"au16", []uint16{7}},
		{"ai16", []int16{-7}},
		{"au32", []uint32{1, 1 << 31}},
		{"ai32", []int32{-1, 5}},
		{"af32", []float32{0.5, -2}},
		{"ab", []bool{true, false}},
		{"as", []string{"a", "", "ccc"}},
		{"au64", []uint64{1 << 40}},
		{"ai64", []int64{-1, 3}},
		{"af64", []float64{1.5}},
		{"empty", []string{}},
		{"nested", []any{[]int32{1, 2}, []string{"x"}, []any{[]uint8{9}}, []any{}}},
	}
}

func TestAccessors(t *testing.T) {
	var buf bytes.Buffer
	if err := gguf.Write(&buf, testKV(), nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range testKV() {
		got, ok := f.Get(kv.Key)
		if !ok || !equalValue(got, kv.Value) {
			t.Errorf("%s = %#v, want %#v", kv.Key, got, kv.Value)
		}
	}
	okU32 := map[string]uint32{"u8": 200, "u16": 65535, "u32": 4000000000}
	for key, want := range okU32 {
		if got, err := f.Uint32(key); err != nil || got != want {
			t.Errorf("Uint32(%s) = %d, %v", key, got, err)
		}
	}
	for _, key := range []string{"i8", "i32", "u64", "i64"} {
		if _, err := f.Uint32(key); err == nil || !strings.Contains(err.Error(), "does not fit") {
			t.Errorf("Uint32(%s): %v, want a does-not-fit error", key, err)
		}
	}
	if got, err := f.Int64("i64"); err != nil || got != -1<<40 {
		t.Errorf("Int64(i64) = %d, %v", got, err)
	}
	if _, err := f.Int64("u64"); err == nil {
		t.Error("Int64(u64 max) accepted")
	}
	if got, err := f.Float32("f64"); err != nil || got != 5e6 {
		t.Errorf("Float32(f64) = %v, %v", got, err)
	}
	if got, err := f.Int32s("au8"); err != nil || !slicesEqual(got, []int32{1, 2, 3}) {
		t.Errorf("Int32s(au8) = %v, %v", got, err)
	}
	if _, err := f.Int32s("au32"); err == nil || !strings.Contains(err.Error(), "element 1") {
		t.Errorf("Int32s(au32): %v", err)
	}
	if got, err := f.Float32s("af64"); err != nil || !slicesEqual(got, []float32{1.5}) {
		t.Errorf("Float32s(af64) = %v, %v", got, err)
	}
	if got, err := f.Strings("as"); err != nil || !slicesEqual(got, []string{"a", "", "ccc"}) {
		t.Errorf("Strings(as) = %v, %v", got, err)
	}
	if arch, err := f.Architecture(); err != nil || arch != "llama" {
		t.Errorf("Architecture = %q, %v", arch, err)
	}
	wrong := []struct {
		call func() error
		want string
	}{
		{func() error { _, err := f.String("u8"); return err }, `"u8" holds uint8, want string`},
		{func() error { _, err := f.Float32("u8"); return err }, "want float32 or float64"},
		{func() error { _, err := f.Bool("s"); return err }, "want bool"},
		{func() error { _, err := f.Strings("ai32"); return err }, "holds array of int32, want array of string"},
		{func() error { _, err := f.Int32s("af32"); return err }, "want array of integers"},
		{func() error { _, err := f.Float32s("nested"); return err }, "holds array of array"},
		{func() error { _, err := f.Uint32("f32"); return err }, "want an integer"},
	}
	for _, w := range wrong {
		err := w.call()
		if err == nil || !strings.Contains(err.Error(), w.want) || errors.Is(err, gguf.ErrKeyNotFound) {
			t.Errorf("error %v, want one containing %q", err, w.want)
		}
	}
	_, err = f.Uint32("llama.block_count")
	if !errors.Is(err, gguf.ErrKeyNotFound) || !strings.Contains(err.Error(), "llama.block_count") {
		t.Errorf("missing key: %v", err)
	}
}

func equalValue(a, b any) bool {
	var x, y bytes.Buffer
	ea := gguf.Write(&x, []gguf.KV{{"k", a}}, nil)
	eb := gguf.Write(&y, []gguf.KV{{"k", b}}, nil)
	return ea == nil && eb == nil && bytes.Equal(x.Bytes(), y.Bytes())
}

func TestWriteRejects(t *testing.T) {
	f32 := func(name string, dims ...uint64) gguf.WriterTensor {
		n := uint64(4)
		for _, d := range dims {
			n *= d
		}
		return gguf.WriterTensor{Name: name, Dims: dims, Type: gguf.TypeF32, Data: make([]byte, n)}
	}
	tests := []struct {
		name    string
		kv      []gguf.KV
		tensors []gguf.WriterTensor
		want    string
	}{
		{"int", []gguf.KV{{"k", 5}}, nil, "Go type int has no GGUF"},
		{"duplicate key", []gguf.KV{{"k", uint8(1)}, {"k", uint8(1)}}, nil, "duplicate metadata key"},
		{"empty key", []gguf.KV{{"", uint8(1)}}, nil, "empty metadata key"},
		{"scalar in []any", []gguf.KV{{"k", []any{uint8(1)}}}, nil, "must hold only arrays"},
		{"alignment", []gguf.KV{{"general.alignment", uint64(32)}}, nil, "general.alignment must be a uint32"},
		{"duplicate tensor", nil, []gguf.WriterTensor{f32("a", 4), f32("a", 4)}, "duplicate tensor name"},
		{"long name", nil, []gguf.WriterTensor{f32(strings.Repeat("x", 64), 4)}, "at most 63"},
		{"no dims", nil, []gguf.WriterTensor{{Name: "a", Type: gguf.TypeF32, Data: []byte{}}}, "0 dimensions"},
		{"zero dim", nil, []gguf.WriterTensor{f32("a", 4, 0)}, "each must be 1"},
		{"block", nil, []gguf.WriterTensor{{Name: "a", Dims: []uint64{100}, Type: gguf.TypeQ8_0, Data: make([]byte, 34)}}, "block size 32"},
		{"data size", nil, []gguf.WriterTensor{{Name: "a", Dims: []uint64{4}, Type: gguf.TypeF32, Data: make([]byte, 15)}}, "Data has 15 bytes"},
		{"no data", nil, []gguf.WriterTensor{{Name: "a", Dims: []uint64{4}, Type: gguf.TypeF32}}, "neither Data nor Write"},
		{"type", nil, []gguf.WriterTensor{{Name: "a", Dims: []uint64{4}, Type: 99, Data: make([]byte, 4)}}, "unknown type 99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := gguf.Write(&buf, tc.kv, tc.tensors)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before failing", buf.Len())
			}
		})
	}
}

func TestWriteShortWriter(t *testing.T) {
	tensors := []gguf.WriterTensor{{Name: "a", Dims: []uint64{8}, Type: gguf.TypeF32,
		Write: func(w io.Writer) error { _, err := w.Write(make([]byte, 16)); return err }}}
	err := gguf.Write(io.Discard, nil, tensors)
	if err == nil || !strings.Contains(err.Error(), "wrote 16 bytes, want 32") {
		t.Errorf("error %v", err)
	}
}

func TestWriteAlignment(t *testing.T) {
	kv := []gguf.KV{{"general.alignment", uint32(256)}}
	tensors := []gguf.WriterTensor{
		{Name: "a", Dims: []uint64{3}, Type: gguf.TypeF32, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{Name: "b", Dims: []uint64{32, 2}, Type: gguf.TypeQ8_0, Data: bytes.Repeat([]byte{7}, 68)},
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, tensors); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 256 || f.DataOffset%256 != 0 || f.Tensors[1].Offset != 256 {
		t.Errorf("alignment %d, data offset %d, offset of b %d", f.Alignment, f.DataOffset, f.Tensors[1].Offset)
	}
	if got := f.TensorData(&f.Tensors[0]); !bytes.Equal(got, tensors[0].Data) {
		t.Errorf("a = %v", got)
	}
	if n := uint64(buf.Len()); n != f.DataOffset+512 {
		t.Errorf("file is %d bytes, want data offset %d + 512 (padded)", n, f.DataOffset)
	}
}

func TestWriteNestingLimit(t *testing.T) {
	nest := func(depth int) any {
		var v any = []uint8{1}
		for range depth - 1 {
			v = []any{v}
		}
		return v
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, []gguf.KV{{"k", nest(gguf.MaxArrayDepth)}}, nil); err != nil {
		t.Fatalf("depth %d: %v", gguf.MaxArrayDepth, err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Get("k"); !equalValue(v, nest(gguf.MaxArrayDepth)) {
		t.Errorf("read back %#v", v)
	}
	if err := gguf.Write(io.Discard, []gguf.KV{{"k", nest(gguf.MaxArrayDepth + 1)}}, nil); err == nil {
		t.Errorf("depth %d accepted", gguf.MaxArrayDepth+1)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.gguf")
	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(short, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, new(raw).header(3, 1, 0).tensor("t", gguf.TypeF32, 0, 16).data(8), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing.gguf"): "no such file",
		short:                              "too short for a GGUF header",
		bad:                                `bad.gguf: gguf: byte`,
	} {
		f, err := gguf.Open(path)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened", path)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q, want %q", path, err, want)
		}
	}
}

// TestParseMemoryBounded parses files that are valid but as dense as the
// format allows in what costs the reader memory: many keys, many tensors,
// long arrays of empty strings and of empty arrays. What Parse allocates must
// stay within a small multiple of the file's size, so that no count in a
// header can make the reader allocate more than the file could justify.
func TestParseMemoryBounded(t *testing.T) {
	const n = 1 << 14
	arrayOf := func(elem gguf.ValueType, body func(r *raw)) []byte {
		r := new(raw).header(3, 0, 1)
		r.str("k").u32(uint32(gguf.ValueArray)).u32(uint32(elem)).u64(n)
		body(r)
		return r.data(0)
	}
	keys := new(raw).header(3, 0, n)
	for i := range n {
		keys.str(fmt.Sprintf("%x", i)).u32(uint32(gguf.ValueUint8)).WriteByte(0)
	}
	tensors := new(raw).header(3, n, 0)
	for i := range n {
		tensors.tensor(fmt.Sprintf("%x", i), gguf.TypeI8, uint64(32*i), 1)
	}
	tensorFile := tensors.data(32 * n)
	files := map[string][]byte{
		"keys":    keys.data(0),
		"tensors": tensorFile,
		"strings": arrayOf(gguf.ValueString, func(r *raw) {
			for range n {
				r.u64(0)
			}
		}),
		"arrays": arrayOf(gguf.ValueArray, func(r *raw) {
			for range n {
				r.u32(uint32(gguf.ValueUint8)).u64(0)
			}
		}),
		"u64s": arrayOf(gguf.ValueUint64, func(r *raw) { r.Write(make([]byte, 8*n)) }),
	}
	for name, data := range files {
		_, got, err := parseCounted(t, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %d-byte file, %d bytes allocated (%.1f×)", name, len(data), got, float64(got)/float64(len(data)))
	}
}

// parseCounted parses data and fails the test if Parse allocated more than
// a small multiple of len(data); it returns the file, the bytes Parse
// allocated and the error.
func parseCounted(t testing.TB, data []byte) (*gguf.File, uint64, error) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := gguf.Parse(data)
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	if limit := 16*uint64(len(data)) + 64<<10; got > limit {
		t.Errorf("parsing %d bytes allocated %d bytes, more than %d (err %v)", len(data), got, limit, err)
	}
	return f, got, err
}
