package smollm3_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/smolgo/smolgo/internal/synth"
	"github.com/smolgo/smolgo/smollm3"
	"github.com/smolgo/smolgo/smollm3/chat"
)

// Load a model, start a chat session and stream the answer as it is
// generated. The model here is the project's tiny random-weight test model,
// so its answer is gibberish; with SmolLM3-3B-Q4_K_M.gguf the same code
// chats. Use Sampler: sample.SmolLM3Defaults() for the model's recommended
// sampling; the zero Sampler is greedy.
func ExampleSession_Generate() {
	path, cleanup := writeTinyModel()
	defer cleanup()

	m, err := smollm3.Load(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession() // keeps the KV cache between turns
	msgs := []smollm3.Message{{Role: "user", Content: "Why is the sky blue?"}}
	opts := smollm3.GenerateOptions{MaxTokens: 8, Thinking: chat.Think(false)}
	for ev, err := range s.Generate(context.Background(), msgs, opts) {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Kind {
		case smollm3.EventReasoning: // the model's <think> text: show it dimmed, or not at all
		case smollm3.EventContent: // the answer: print ev.Text as it arrives
		case smollm3.EventDone:
			fmt.Println(ev.Stats.GeneratedTokens, "tokens, stop reason:", ev.Stats.StopReason)
		}
	}
	// Output: 8 tokens, stop reason: length
}

// writeTinyModel writes the golden "tinyq" model (Q4_K_M, 2 MB) to a temporary
// file.
func writeTinyModel() (path string, cleanup func()) {
	dir, err := os.MkdirTemp("", "smollm3-example")
	if err != nil {
		log.Fatal(err)
	}
	path = filepath.Join(dir, "tinyq-Q4_K_M.gguf")
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	model, err := synth.Preset("tinyq")
	if err == nil {
		err = synth.Write(context.Background(), f, model, synth.Options{Mix: synth.MixQ4_K_M})
	}
	if err != nil {
		log.Fatal(err)
	}
	return path, func() { os.RemoveAll(dir) }
}
