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

// Prefill, decode, and resume from a shared prefix with Truncate. The model
// is the project's tiny synthetic llama, built in memory; in real use open a
// file with gguf.Open.
func Example() {
	var buf bytes.Buffer
	tiny, _ := synth.Preset("llama-tiny")
	if err := synth.Write(context.Background(), &buf, tiny, synth.Options{}); err != nil {
		log.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	m, err := llama.New(f, llama.Options{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Printf("%s: %d layers, %d heads / %d KV heads, vocab %d\n",
		m.Config.Arch, m.Config.Layers, m.Config.Heads, m.Config.KVHeads, m.Config.Vocab)

	ctx := context.Background()
	cache, err := m.NewCache(llama.CacheOptions{}) // f16 KV, up to the context length
	if err != nil {
		log.Fatal(err)
	}
	prompt := []int32{331, 296, 308, 311}
	all, err := m.Forward(ctx, cache, prompt, 0, true) // logits of every position
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("prefill rows:", len(all)/m.Config.Vocab, "cache:", cache.Len())

	last, _ := m.Forward(ctx, cache, []int32{42}, cache.Len(), false) // decode one token
	first := last[0]

	// Go back to the prompt and take the same step again: same logits.
	if err := cache.Truncate(len(prompt)); err != nil {
		log.Fatal(err)
	}
	again, _ := m.Forward(ctx, cache, []int32{42}, cache.Len(), false)
	fmt.Println("resumed step identical:", again[0] == first, "cache:", cache.Len())
	// Output:
	// llama: 3 layers, 4 heads / 2 KV heads, vocab 337
	// prefill rows: 4 cache: 4
	// resumed step identical: true cache: 5
}
