package smollm3_test

import (
	"context"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/smollm3"
	"github.com/smolgo/smolgo/smollm3/chat"
)

// Two sessions (two users, or two requests of a server) share a system
// prompt: with a prompt cache the second computes only its own question.
func ExampleWithPromptCache() {
	path, cleanup := writeTinyModel()
	defer cleanup()
	m, err := smollm3.Load(path, smollm3.WithPromptCache(64<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	system := smollm3.Message{Role: "system", Content: "You are a terse assistant. /system_override"}
	opts := smollm3.GenerateOptions{MaxTokens: 4, Thinking: chat.Think(false)}
	for _, q := range []string{"Why is the sky blue?", "Why is grass green?"} {
		s := m.NewSession()
		msgs := []smollm3.Message{system, {Role: "user", Content: q}}
		for ev, err := range s.Generate(context.Background(), msgs, opts) {
			if err != nil {
				log.Fatal(err)
			}
			if ev.Kind == smollm3.EventDone {
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
