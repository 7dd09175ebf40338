package chat_test

import (
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/models/gemma3/chat"
)

// Gemma 3 has no system turn: the system text opens the first user turn.
func ExampleRender() {
	msgs := []engine.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi!"},
		{Role: "assistant", Content: "Hello! "},
		{Role: "user", Content: "What is 2+2?"},
	}
	prompt, err := chat.Render(msgs, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(prompt)

	// Two user messages in a row break the template's alternation.
	_, err = chat.Render(append(msgs, engine.Message{Role: "user", Content: "Hurry."}), chat.Options{})
	fmt.Println(err != nil)
	// Output:
	// <bos><start_of_turn>user
	// Be brief.
	//
	// Hi!<end_of_turn>
	// <start_of_turn>model
	// Hello!<end_of_turn>
	// <start_of_turn>user
	// What is 2+2?<end_of_turn>
	// <start_of_turn>model
	// true
}
