package gguf_test

import (
	"bytes"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// seedFiles returns a few tiny valid GGUF files written with Write.
func seedFiles(t testing.TB) [][]byte {
	var out [][]byte
	add := func(kv []gguf.KV, tensors []gguf.WriterTensor) {
		var buf bytes.Buffer
		if err := gguf.Write(&buf, kv, tensors); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	add(nil, nil)
	add(testKV(), nil)
	add([]gguf.KV{{"general.architecture", "llama"}, {"general.alignment", uint32(64)}},
		[]gguf.WriterTensor{
			{Name: "a", Dims: []uint64{4, 2}, Type: gguf.TypeF32, Data: make([]byte, 32)},
			{Name: "b", Dims: []uint64{32}, Type: gguf.TypeQ8_0, Data: make([]byte, 34)},
		})
	add([]gguf.KV{{"tokenizer.ggml.tokens", []string{"a", "b"}}},
		[]gguf.WriterTensor{{Name: "q", Dims: []uint64{256, 1, 1, 1}, Type: gguf.TypeQ4_K, Data: make([]byte, 144)}})
	return out
}

// FuzzParse feeds arbitrary bytes to Parse. Accepted or not, Parse must not
// allocate more than a small multiple of the input. Whatever it accepts must be
// self-consistent: every tensor's data lies in the input, the accessors
// never panic, and writing the file back gives a file that reads the same.
func FuzzParse(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
		for _, cut := range []int{4, 8, 24, len(b) / 2, len(b) - 1} {
			if cut < len(b) {
				f.Add(b[:cut])
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, _, err := parseCounted(t, data)
		if err != nil {
			return
		}
		checkParsed(t, file, data)
	})
}

// FuzzParseValue fuzzes one metadata value: the input follows a fixed
// header and key, so the fuzzer spends its time in value decoding.
func FuzzParseValue(f *testing.F) {
	prefix := new(raw).header(3, 0, 1).str("k").Bytes()
	for _, kv := range testKV() {
		var buf bytes.Buffer
		if err := gguf.Write(&buf, []gguf.KV{{"k", kv.Value}}, nil); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes()[len(prefix):])
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		data := append(append([]byte{}, prefix...), value...)
		file, _, err := parseCounted(t, data)
		if err != nil {
			return
		}
		checkParsed(t, file, data)
	})
}

func checkParsed(t *testing.T, file *gguf.File, data []byte) {
	for i := range file.Tensors {
		ti := &file.Tensors[i]
		if got := uint64(len(file.TensorData(ti))); got != ti.Size() {
			t.Fatalf("tensor %q: %d bytes of data, size %d", ti.Name, got, ti.Size())
		}
		if file.DataOffset+ti.Offset+ti.Size() > uint64(len(data)) {
			t.Fatalf("tensor %q lies outside the input", ti.Name)
		}
	}
	for _, kv := range file.KV {
		file.String(kv.Key)
		file.Uint32(kv.Key)
		file.Int64(kv.Key)
		file.Float32(kv.Key)
		file.Bool(kv.Key)
		file.Strings(kv.Key)
		file.Int32s(kv.Key)
		file.Float32s(kv.Key)
	}
	tensors := make([]gguf.WriterTensor, len(file.Tensors))
	for i := range file.Tensors {
		ti := &file.Tensors[i]
		tensors[i] = gguf.WriterTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: file.TensorData(ti)}
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, file.KV, tensors); err != nil {
		return // e.g. a name longer than ggml allows: readable, not writable
	}
	again, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("rewritten file does not parse: %v", err)
	}
	// Encoding is one-to-one, so equal bytes mean bit-identical metadata
	// (DeepEqual would call a NaN different from itself).
	var twice bytes.Buffer
	if err := gguf.Write(&twice, again.KV, tensors); err != nil || !bytes.Equal(buf.Bytes(), twice.Bytes()) {
		t.Fatalf("metadata differs after writing back (%v)", err)
	}
	for i := range file.Tensors {
		if !bytes.Equal(file.TensorData(&file.Tensors[i]), again.TensorData(&again.Tensors[i])) {
			t.Fatalf("tensor %q differs after writing back", file.Tensors[i].Name)
		}
	}
}
