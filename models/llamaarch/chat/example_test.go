package chat_test

import (
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/models/llamaarch/chat"
	"github.com/smolgo/smolgo/toolcall"
)

// A prompt with a tool listed in the system turn (as llama.cpp renders
// it), and the model's answer read as it streams: the JSON object is a
// call.
func ExampleRender() {
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_time", "parameters": {}}}`)}
	msgs := []engine.Message{{Role: "user", Content: " What time is it? "}}
	prompt, err := chat.Render(msgs, chat.Options{
		Tools: tools, ToolsInSystem: true, AddGenerationPrompt: true,
		Now: func() time.Time { return time.Date(2025, 7, 8, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", prompt)

	p := chat.NewToolParser(128010)
	var events []toolcall.Event
	for _, piece := range []string{`{"name": "get`, `_time", "parameters": {}}`} {
		events = append(events, p.Push(-1, piece)...)
	}
	for _, ev := range append(events, p.Flush()...) {
		fmt.Println(ev.Kind == toolcall.KindCall, ev.Call.Name, string(ev.Call.Arguments))
	}
	// Output:
	// "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 08 Jul 2025\n\nYou have access to the following functions. To call a function, please respond with JSON for a function call.Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_time\",\n        \"parameters\": {}\n    }\n}\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat time is it?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	// true get_time {}
}
