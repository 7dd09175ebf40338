package chat_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/models/qwen2/chat"
	"github.com/smolgo/smolgo/toolcall"
)

// Without a system message Qwen2.5's template writes its own; a tool call
// in the answer is read with package toolcall's parser.
func ExampleRender() {
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_time", "parameters": {}}}`)}
	prompt, err := chat.Render([]engine.Message{{Role: "user", Content: "What time is it?"}},
		chat.Options{Tools: tools, AddGenerationPrompt: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(prompt)

	p := chat.NewToolParser(-1, -1)
	events := p.Push(-1, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>")
	for _, ev := range append(events, p.Flush()...) {
		if ev.Kind == toolcall.KindCall {
			fmt.Println("call:", ev.Call.Name, string(ev.Call.Arguments))
		}
	}
	// Output:
	// <|im_start|>system
	// You are Qwen, created by Alibaba Cloud. You are a helpful assistant.
	//
	// # Tools
	//
	// You may call one or more functions to assist with the user query.
	//
	// You are provided with function signatures within <tools></tools> XML tags:
	// <tools>
	// {"type": "function", "function": {"name": "get_time", "parameters": {}}}
	// </tools>
	//
	// For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
	// <tool_call>
	// {"name": <function-name>, "arguments": <args-json-object>}
	// </tool_call><|im_end|>
	// <|im_start|>user
	// What time is it?<|im_end|>
	// <|im_start|>assistant
	// call: get_time {}
}
