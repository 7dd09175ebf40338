package chat_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/models/phi3/chat"
	"github.com/smolgo/smolgo/toolcall"
)

// Phi-4-mini lists the tools in the system turn and writes a call as a
// JSON list between <|tool_call|> and <|/tool_call|>; the parser reads it
// back as the answer streams in, whatever the pieces.
func ExampleRender() {
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_time", "parameters": {}}}`)}
	msgs := []engine.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "What time is it?"},
	}
	prompt, err := chat.Render(msgs, chat.Options{Tools: tools, AddGenerationPrompt: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(prompt)

	p := chat.NewToolParser(-1, -1) // the tags' ids, or -1 to read them as text
	var events []toolcall.Event
	for _, piece := range []string{"<|tool_", "call|>[{\"name\": \"get_time\", ", "\"arguments\": {}}]<|/tool_call|>"} {
		events = append(events, p.Push(-1, piece)...)
	}
	for _, ev := range append(events, p.Flush()...) {
		if ev.Kind == toolcall.KindCall {
			fmt.Println("call:", ev.Call.Name, string(ev.Call.Arguments))
		}
	}

	// The call goes back into the conversation as the model wrote it, and
	// the result as a message of role tool.
	msgs = append(msgs,
		engine.Message{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "get_time", Arguments: json.RawMessage(`{}`)}}},
		engine.Message{Role: "tool", Content: "14:05"})
	prompt, err = chat.Render(msgs[1:], chat.Options{AddGenerationPrompt: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(prompt)
	// Output:
	// <|system|>Be brief.<|tool|>[{"name": "get_time", "parameters": {}}]<|/tool|><|end|><|user|>What time is it?<|end|><|assistant|>
	// call: get_time {}
	// <|user|>What time is it?<|end|><|assistant|><|tool_call|>[{"name": "get_time", "arguments": {}}]<|/tool_call|><|end|><|tool|>14:05<|end|><|assistant|>
}

// Phi-3.5-mini puts each role marker on a line of its own.
func ExampleRender_phi35() {
	msgs := []engine.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi!"},
	}
	prompt, err := chat.Render(msgs, chat.Options{Template: chat.Phi35Mini, AddGenerationPrompt: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(prompt)
	// Output:
	// <|system|>
	// Be brief.<|end|>
	// <|user|>
	// Hi!<|end|>
	// <|assistant|>
}
