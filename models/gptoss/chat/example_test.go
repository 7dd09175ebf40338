package chat_test

import (
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/models/gptoss/chat"
)

// A tool loop rendered for gpt-oss at high effort (the reasoning of the
// unfinished loop stays), then an answer read back as its tokens arrive,
// here as text in pieces that cut the markers.
func ExampleRender() {
	weather := json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
		"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`)
	msgs := []engine.Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ReasoningContent: "Ask the tool.", ToolCalls: []engine.ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: "tool", Content: "sunny"},
	}
	prompt, err := chat.Render(msgs, chat.Options{Tools: []json.RawMessage{weather}, AddGenerationPrompt: true, ReasoningEffort: "high",
		Now: func() time.Time { return time.Date(2025, 7, 8, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.ReplaceAll(prompt, "<|end|>", "<|end|>\n"))

	p := chat.NewParser(nil, chat.ParserOptions{Tools: true})
	answer := "<|channel|>analysis<|message|>It is sunny.<|end|><|start|>assistant<|channel|>final<|message|>Sunny in Paris."
	for i := 0; i < len(answer); i += 7 {
		for _, ev := range p.Push(-1, answer[i:min(i+7, len(answer))]) {
			fmt.Printf("%s: %q\n", ev.Kind, ev.Text)
		}
	}
	for _, ev := range p.Flush() {
		fmt.Printf("%s: %q\n", ev.Kind, ev.Text)
	}
	// Output:
	// <|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.
	// Knowledge cutoff: 2024-06
	// Current date: 2025-07-08
	//
	// Reasoning: high
	//
	// # Valid channels: analysis, commentary, final. Channel must be included for every message.
	// Calls to these tools must go to the commentary channel: 'functions'.<|end|>
	// <|start|>developer<|message|># Tools
	//
	// ## functions
	//
	// namespace functions {
	//
	// // Weather in a city
	// type get_weather = (_: {
	// city: string,
	// }) => any;
	//
	// } // namespace functions<|end|>
	// <|start|>user<|message|>Weather in Paris?<|end|>
	// <|start|>assistant<|channel|>analysis<|message|>Ask the tool.<|end|>
	// <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"sunny"<|end|>
	// <|start|>assistant
	// reasoning: "It is"
	// reasoning: " sunny."
	// content: "Sunn"
	// content: "y in Pa"
	// content: "ris."
}
