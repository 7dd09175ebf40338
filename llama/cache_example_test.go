package llama_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/synth"
	"github.com/smolgo/smolgo/llama"
)

// A q8_0 cache takes 17/32 of an f16 one; Shift drops old positions
// (keeping the first ones, say a system prompt) so that a long sequence
// goes on in a bounded cache; Clone and CopyFrom hand a prefix to another
// cache. The model is the tiny synthetic SmolLM3 (8 layers, 2 KV heads of
// 64), built in memory.
func ExampleCache_Shift() {
	var buf bytes.Buffer
	tiny, _ := synth.Preset("tinyq")
	if err := synth.Write(context.Background(), &buf, tiny, synth.Options{}); err != nil {
		log.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	m, err := llama.New(f, llama.Options{Threads: 1}) // the plain block: RoPE in every layer
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	cfg := &m.Config
	fmt.Println("bytes per token: f16", cfg.KVBytes(llama.KVF16, 1), "q8_0", cfg.KVBytes(llama.KVQ8_0, 1))

	ctx := context.Background()
	cache, err := m.NewCache(llama.CacheOptions{KVType: llama.KVQ8_0, Context: 64})
	if err != nil {
		log.Fatal(err)
	}
	seq := make([]int32, 60)
	for i := range seq {
		seq[i] = int32(i*7) % 331
	}
	if _, err := m.Forward(ctx, cache, seq, 0, false); err != nil {
		log.Fatal(err)
	}
	// Keep the first 8 positions, drop the next 32, move the rest down.
	if err := cache.Shift(8, 32); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after the shift:", cache.Len(), "positions")
	if _, err := m.Forward(ctx, cache, []int32{42}, cache.Len(), false); err != nil {
		log.Fatal(err)
	}

	// Another cache starts from the first 8 positions without computing them.
	snap, _ := cache.Clone(8)
	other, _ := m.NewCache(llama.CacheOptions{KVType: llama.KVQ8_0})
	if err := other.CopyFrom(snap, 0, snap.Len()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("copied:", other.Len(), "positions,", snap.Bytes(), "bytes")
	// Output:
	// bytes per token: f16 4096 q8_0 2176
	// after the shift: 28 positions
	// copied: 8 positions, 17408 bytes
}
