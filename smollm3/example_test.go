package smollm3_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/synth"
	"github.com/smolgo/smolgo/smollm3"
)

// Greedy decoding: prefill a prompt, then feed back the most likely token.
// The model here is the project's tiny synthetic SmolLM3 (8 layers, Q4_K_M),
// built in memory; in real use call smollm3.Load("model.gguf").
func Example() {
	var buf bytes.Buffer
	tiny, _ := synth.Preset("tinyq")
	if err := synth.Write(context.Background(), &buf, tiny, synth.Options{Mix: synth.MixQ4_K_M}); err != nil {
		log.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	m, err := smollm3.New(f, smollm3.WithThreads(1)) // = smollm3.Load(path, ...)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	cfg := m.Config()
	fmt.Println(cfg.Arch, cfg.Layers, "layers; layer 3 uses RoPE:", m.LLM().RotatesLayer(3))

	ctx := context.Background()
	cache, err := m.NewCache()
	if err != nil {
		log.Fatal(err)
	}
	tokens := []int32{331, 296, 308, 311} // <|begin_of_text|>The quick brown
	logits, err := m.Forward(ctx, cache, tokens, 0, false)
	if err != nil {
		log.Fatal(err)
	}
	var out []int32
	for range 4 {
		next := int32(0)
		for id, v := range logits {
			if v > logits[next] {
				next = int32(id)
			}
		}
		out = append(out, next)
		if logits, err = m.Forward(ctx, cache, []int32{next}, cache.Len(), false); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("greedy:", out, "- the cache holds", cache.Len(), "positions")
	// Output:
	// smollm3 8 layers; layer 3 uses RoPE: false
	// greedy: [61 215 43 63] - the cache holds 8 positions
}
