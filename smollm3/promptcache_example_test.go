package smollm3_test

import (
	"context"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	_ "github.com/smolgo/smolgo/smollm3" // registers SmolLM3 with engine.Open
	"github.com/smolgo/smolgo/smollm3/chat"
)

// Two sessions (two users, or two requests of a server) share a system
// prompt: with a prompt cache the second computes only its own question.
func Example_promptCache() {
	m, err := engine.Open(tinyModel, engine.WithPromptCache(64<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	system := engine.Message{Role: "system", Content: "You are a terse assistant. /system_override"}
	opts := engine.GenerateOptions{MaxTokens: 4, Thinking: chat.Think(false)}
	for _, q := range []string{"Why is the sky blue?", "Why is grass green?"} {
		s := m.NewSession()
		msgs := []engine.Message{system, {Role: "user", Content: q}}
		for ev, err := range s.Generate(context.Background(), msgs, opts) {
			if err != nil {
				log.Fatal(err)
			}
			if ev.Kind == engine.EventDone {
				fmt.Println("shared prompt tokens:", ev.Stats.SharedCachedTokens > 0)
			}
		}
	}
	fmt.Println("hits:", m.PromptCache().Stats().Hits)
	// Output:
	// shared prompt tokens: false
	// shared prompt tokens: true
	// hits: 1
}
