package gguf_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log"
	"math"

	"github.com/smolgo/smolgo/gguf"
)

// Write a tiny model file, read it back, and look at its metadata and a tensor.
func Example() {
	// A 2×3 float32 matrix: rows of length 3 (Dims[0]), 2 rows.
	w := []float32{1, 2, 3, 4, 5, 6}
	data := make([]byte, 4*len(w))
	for i, x := range w {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	kv := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "llama.block_count", Value: uint32(1)},
		{Key: "tokenizer.ggml.tokens", Value: []string{"a", "b", "c"}},
	}
	tensors := []gguf.WriterTensor{{Name: "w", Dims: []uint64{3, 2}, Type: gguf.TypeF32, Data: data}}

	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, tensors); err != nil {
		log.Fatal(err)
	}

	// gguf.Open(path) memory-maps a file; Parse reads bytes already in memory.
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	arch, _ := f.Architecture()
	layers, _ := f.Uint32(arch + ".block_count")
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	fmt.Println(arch, layers, tokens)

	t, _ := f.Tensor("w")
	raw := f.TensorData(t)
	second := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*3:])) // row 1, column 0
	fmt.Println(t.Name, t.Type, t.Dims, t.Size(), "bytes, w[1][0] =", second)

	_, err = f.Uint32("llama.context_length")
	fmt.Println(err)
	// Output:
	// llama 1 [a b c]
	// w f32 [3 2] 24 bytes, w[1][0] = 4
	// gguf: metadata key "llama.context_length": key not found
}
