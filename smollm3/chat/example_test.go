package chat_test

import (
	"fmt"
	"log"
	"time"

	"github.com/smolgo/smolgo/smollm3/chat"
)

func ExampleRender() {
	msgs := []chat.Message{
		{Role: "system", Content: "You are a pirate. /no_think"},
		{Role: "user", Content: "Hello!"},
	}
	prompt, err := chat.Render(msgs, chat.Options{
		AddGenerationPrompt: true,
		Now:                 func() time.Time { return time.Date(2025, 7, 8, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(prompt)
	// Output:
	// <|im_start|>system
	// ## Metadata
	//
	// Knowledge Cutoff Date: June 2025
	// Today Date: 08 July 2025
	// Reasoning Mode: /no_think
	//
	// ## Custom Instructions
	//
	// You are a pirate.
	//
	// <|im_start|>user
	// Hello!<|im_end|>
	// <|im_start|>assistant
	// <think>
	//
	// </think>
}
