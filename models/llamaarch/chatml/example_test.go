package chatml_test

import (
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/models/llamaarch/chatml"
)

// Without a system message SmolLM2's template writes its own.
func ExampleRender() {
	msgs := []engine.Message{
		{Role: "user", Content: "Hi!"},
		{Role: "assistant", Content: "Hello!"},
		{Role: "user", Content: "What is 2+2?"},
	}
	prompt, err := chatml.Render(msgs, chatml.Options{AddGenerationPrompt: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(prompt)
	// Output:
	// <|im_start|>system
	// You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>
	// <|im_start|>user
	// Hi!<|im_end|>
	// <|im_start|>assistant
	// Hello!<|im_end|>
	// <|im_start|>user
	// What is 2+2?<|im_end|>
	// <|im_start|>assistant
}

// A file's template is recognized by its text, and the default system text
// of a fine-tune's copy is read out of it.
func ExampleRecognize() {
	src := "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are Pip.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
	system, ok := chatml.Recognize(src)
	fmt.Printf("%q %v\n", system, ok)
	// Output: "You are Pip." true
}
