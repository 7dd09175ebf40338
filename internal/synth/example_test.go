package synth_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/synth"
)

// Write the tiny SmolLM3 preset in llama.cpp's Q4_K_M mix and look at it.
func Example() {
	m, err := synth.Preset("tinyq")
	if err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer // a file in real use: the model is streamed tensor by tensor
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Mix: synth.MixQ4_K_M}); err != nil {
		log.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	types := map[gguf.Type]int{}
	for _, t := range f.Tensors {
		types[t.Type]++
	}
	eos, _ := f.Uint32("tokenizer.ggml.eos_token_id")
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	fmt.Println(buf.Len(), "bytes,", len(f.Tensors), "tensors:", types[gguf.TypeQ4_K], "q4_K,", types[gguf.TypeQ6_K], "q6_K,", types[gguf.TypeF32], "f32")
	fmt.Println("eos:", tokens[eos])
	// Output:
	// 1970208 bytes, 74 tensors: 48 q4_K, 9 q6_K, 17 f32
	// eos: <|im_end|>
}

// Write Gemma 3's tiny golden model in llama.cpp's Q4_K_M mix and read its
// family keys back: a 32-token window with one global layer in 2, and a
// final logit soft-cap.
func ExamplePreset() {
	m, err := synth.Preset("gemma3-tiny")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Shape)
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Mix: synth.MixQ4_K_M}); err != nil {
		log.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	window, _ := f.Uint32("gemma3.attention.sliding_window")
	pattern, _ := f.Uint32("gemma3.attention.sliding_window_pattern")
	softcap, _ := f.Float32("gemma3.final_logit_softcapping")
	qn, _ := f.Tensor("blk.0.attn_q_norm.weight")
	fmt.Println("window", window, "pattern", pattern, "softcap", softcap)
	fmt.Println(qn.Name, qn.Type, qn.Dims)
	// Output:
	// gemma3: 2 layers, hidden 256, FFN 256, 8/2 heads of 32, vocab 337 (built-in), window 32 with 1 global layer in 2, softcap 15
	// window 32 pattern 2 softcap 15
	// blk.0.attn_q_norm.weight f32 [32]
}
