package smollm3_test

import (
	"context"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/smollm3"
)

// tinyModel is the project's small random-weight SmolLM3 (8 layers,
// Q4_K_M, 2 MB) that the examples run on; in real use, load
// SmolLM3-3B-Q4_K_M.gguf.
const tinyModel = "../testdata/smollm3-tinyq-Q4_K_M.gguf"

// Logits without sessions: prefill a prompt with Forward, then feed back the
// most likely token (greedy decoding by hand).
func Example() {
	m, err := smollm3.Load(tinyModel, engine.WithThreads(1))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	cfg := m.LLM().Config
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
