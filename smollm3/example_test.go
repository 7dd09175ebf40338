package smollm3_test

import (
	"context"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	_ "github.com/smolgo/smolgo/smollm3" // registers SmolLM3 with engine.Open
)

// tinyModel is the project's small random-weight SmolLM3 (8 layers,
// Q4_K_M, 2 MB) that the examples run on; in real use, load
// SmolLM3-3B-Q4_K_M.gguf.
const tinyModel = "../testdata/smollm3-tinyq-Q4_K_M.gguf"

// Logits without sessions: open the file (importing package smollm3
// registers its architecture), take the model's parts, prefill a prompt
// with Forward, then feed back the most likely token (greedy decoding by
// hand).
func Example() {
	m, err := engine.Open(tinyModel, engine.WithThreads(1))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	p, _ := family.Of(m) // what the model is made of: its runner, weights, file
	cfg := p.CPU().Config
	fmt.Println(cfg.Arch, cfg.Layers, "layers; layer 3 uses RoPE:", p.CPU().RotatesLayer(3))

	ctx := context.Background()
	cache, err := p.NewCache()
	if err != nil {
		log.Fatal(err)
	}
	tokens := []int32{331, 296, 308, 311} // <|begin_of_text|>The quick brown
	logits, err := p.Forward(ctx, cache, tokens, 0, false)
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
		if logits, err = p.Forward(ctx, cache, []int32{next}, cache.Len(), false); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("greedy:", out, "- the cache holds", cache.Len(), "positions")
	// Output:
	// smollm3 8 layers; layer 3 uses RoPE: false
	// greedy: [61 215 43 63] - the cache holds 8 positions
}
