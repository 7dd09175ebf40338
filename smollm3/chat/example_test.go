package chat_test

import (
	"fmt"
	"log"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/smollm3/chat"
)

func ExampleRender() {
	msgs := []engine.Message{
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

// A Parser separates SmolLM3's reasoning from its answer while tokens
// stream in; here the tags arrive as single tokens (ids 128002 and 128003)
// and the text pieces are what a tokenizer.StreamDecoder returns.
func ExampleParser() {
	type token struct {
		id   int32
		text string
	}
	stream := []token{{128002, "<think>"}, {40, "\nThe"}, {41, " user"}, {42, " greets.\n"},
		{128003, "</think>"}, {43, "\n\nHello"}, {44, "!"}}
	p := chat.NewParser(128002, 128003, chat.ParserOptions{TrimSpace: true})
	for _, t := range stream {
		for _, seg := range p.Push(t.id, t.text) {
			fmt.Printf("%s: %q\n", seg.Kind, seg.Text)
		}
	}
	for _, seg := range p.Flush() {
		fmt.Printf("%s: %q\n", seg.Kind, seg.Text)
	}
	// Output:
	// reasoning: "The"
	// reasoning: " user"
	// reasoning: " greets."
	// content: "Hello"
	// content: "!"
}
