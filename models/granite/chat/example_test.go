package chat_test

import (
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/models/granite/chat"
	"github.com/smolgo/smolgo/toolcall"
)

// A Granite 3.3 prompt with a tool, and the model's answer read as it
// streams: <|tool_call|> (a special token, decoded to no text, known by
// its id) and a JSON list of calls.
func ExampleRender() {
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_time", "parameters": {}}}`)}
	msgs := []engine.Message{{Role: "user", Content: "What time is it?"}}
	prompt, err := chat.Render(msgs, chat.Options{
		Template: chat.Granite33, Tools: tools, AddGenerationPrompt: true,
		Now: func() time.Time { return time.Date(2025, 7, 8, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(prompt)

	const toolCallID = 49154 // <|tool_call|>'s id: look it up with the tokenizer's ID
	p := chat.NewToolParser(toolCallID)
	var events []toolcall.Event
	events = append(events, p.Push(toolCallID, "")...)
	for _, piece := range []string{`[{"name": "get`, `_time", "arguments": {}}]`} {
		events = append(events, p.Push(-1, piece)...)
	}
	for _, ev := range append(events, p.Flush()...) {
		fmt.Println(ev.Kind == toolcall.KindCall, ev.Call.Name, string(ev.Call.Arguments))
	}
	// Output:
	// <|start_of_role|>system<|end_of_role|>Knowledge Cutoff Date: April 2024. Today's Date: July 08, 2025. You are Granite, developed by IBM. You are a helpful assistant with access to the following tools. When a tool is required to answer the user's query, respond only with <|tool_call|> followed by a JSON list of tools used. If a tool does not exist in the provided list of tools, notify the user that you do not have the ability to fulfill the request.<|end_of_text|>
	// <|start_of_role|>available_tools<|end_of_role|>[
	//     {
	//         "type": "function",
	//         "function": {
	//             "name": "get_time",
	//             "parameters": {}
	//         }
	//     }
	// ]<|end_of_text|>
	// <|start_of_role|>user<|end_of_role|>What time is it?<|end_of_text|>
	// <|start_of_role|>assistant<|end_of_role|>
	// true get_time {}
}

// Granite 4.0 writes its tools into the system turn and the calls of the
// history as <tool_call> blocks; Detect picks the template from a file's
// tokenizer.chat_template.
func ExampleRender_granite4() {
	msgs := []engine.Message{
		{Role: "user", Content: "Time?"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{{Name: "get_time", Arguments: json.RawMessage(`{}`)}}},
		{Role: "tool", Content: "14:05"},
	}
	prompt, err := chat.Render(msgs, chat.Options{Template: chat.Granite40, AddGenerationPrompt: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(prompt)
	// Output:
	// <|start_of_role|>system<|end_of_role|>You are a helpful assistant. Please ensure responses are professional, accurate, and safe.<|end_of_text|>
	// <|start_of_role|>user<|end_of_role|>Time?<|end_of_text|>
	// <|start_of_role|>assistant<|end_of_role|><tool_call>
	// {"name": "get_time", "arguments": {}}
	// </tool_call><|end_of_text|>
	// <|start_of_role|>user<|end_of_role|>
	// <tool_response>
	// 14:05
	// </tool_response><|end_of_text|>
	// <|start_of_role|>assistant<|end_of_role|>
}
