package smollm3_test

import (
	"context"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	_ "github.com/smolgo/smolgo/smollm3" // registers SmolLM3 with engine.Open
	"github.com/smolgo/smolgo/smollm3/chat"
)

// Open a model, start a chat session and stream the answer as it is
// generated. The tiny test model's answer is gibberish; with
// SmolLM3-3B-Q4_K_M.gguf the same code chats. Use Sampler:
// sample.SmolLM3Defaults() for the model's recommended sampling; the zero
// Sampler is greedy.
func Example_generate() {
	m, err := engine.Open(tinyModel)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession() // keeps the KV cache between turns
	msgs := []engine.Message{{Role: "user", Content: "Why is the sky blue?"}}
	opts := engine.GenerateOptions{MaxTokens: 8, Thinking: chat.Think(false)}
	for ev, err := range s.Generate(context.Background(), msgs, opts) {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Kind {
		case engine.EventReasoning: // the model's <think> text: show it dimmed, or not at all
		case engine.EventContent: // the answer: print ev.Text as it arrives
		case engine.EventDone:
			fmt.Println(ev.Stats.GeneratedTokens, "tokens, stop reason:", ev.Stats.StopReason)
		}
	}
	// Output: 8 tokens, stop reason: length
}
