package chat_test

import (
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/models/qwen3/chat"
)

// A conversation in a tool loop, rendered for Qwen3 in non-thinking mode:
// the reasoning of the turn after the last user message stays, the
// generation prompt ends with an empty think block. Then an answer written
// in thinking mode is read back, its tokens given as text (the tags are not
// single tokens here).
func ExampleRender() {
	msgs := []engine.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi! What time is it?"},
		{Role: "assistant", ReasoningContent: "Use the clock.", ToolCalls: []engine.ToolCall{{Name: "get_time"}}},
		{Role: "tool", Content: "14:05"},
	}
	prompt, err := chat.Render(msgs, chat.Options{AddGenerationPrompt: true, EnableThinking: chat.Think(false)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(prompt)

	p := chat.NewParser(-1, -1, chat.ParserOptions{TrimSpace: true})
	for _, piece := range []string{"<think>\nIt is", " 14:05.\n</think>\n\n", "It is 14:05."} {
		for _, seg := range p.Push(-1, piece) {
			fmt.Printf("%s: %q\n", seg.Kind, seg.Text)
		}
	}
	for _, seg := range p.Flush() {
		fmt.Printf("%s: %q\n", seg.Kind, seg.Text)
	}
	// Output:
	// <|im_start|>system
	// Be brief.<|im_end|>
	// <|im_start|>user
	// Hi! What time is it?<|im_end|>
	// <|im_start|>assistant
	// <think>
	// Use the clock.
	// </think>
	//
	// <tool_call>
	// {"name": "get_time", "arguments": {}}
	// </tool_call><|im_end|>
	// <|im_start|>user
	// <tool_response>
	// 14:05
	// </tool_response><|im_end|>
	// <|im_start|>assistant
	// <think>
	//
	// </think>
	//
	// reasoning: "It is"
	// reasoning: " 14:05."
	// content: "It is 14:05."
}
