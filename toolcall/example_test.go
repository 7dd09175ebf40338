package toolcall_test

import (
	"fmt"

	"github.com/smolgo/smolgo/toolcall"
)

// Tokens arrive one by one; tags come as SmolLM3's single tokens or as
// text in pieces.
func ExampleParser() {
	p := toolcall.NewParser(128015, 128016)
	type token struct {
		id   int32
		text string
	}
	stream := []token{
		{100, "Checking"}, {101, " the weather."}, {102, "\n"},
		{128015, "<tool_call>"}, {103, "\n{\"name\": \"get_weather\", "}, {104, "\"arguments\": {\"city\": \"Paris\"}}\n"}, {128016, "</tool_call>"},
		{105, "<tool"}, {106, "_call>{\"name\": 42}</tool_"}, {107, "call>"}, // tags as text, and a broken call
	}
	show := func(evs []toolcall.Event) {
		for _, ev := range evs {
			switch ev.Kind {
			case toolcall.KindText:
				fmt.Printf("text  %q\n", ev.Text)
			case toolcall.KindCall:
				fmt.Printf("call  %s %s\n", ev.Call.Name, ev.Call.Arguments)
			case toolcall.KindError:
				fmt.Printf("error %v (raw %q)\n", ev.Err, ev.Raw)
			}
		}
	}
	for _, t := range stream {
		show(p.Push(t.id, t.text))
	}
	show(p.Flush())
	// Output:
	// text  "Checking"
	// text  " the weather."
	// text  "\n"
	// call  get_weather {"city":"Paris"}
	// error malformed tool call: a call must be a JSON object with a name and arguments (raw "{\"name\": 42}")
}

func ExampleParse() {
	text, calls, err := toolcall.Parse("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>")
	fmt.Printf("%q %s %s %v\n", text, calls[0].Name, calls[0].Arguments, err)
	// Output: "" add {"a":1,"b":2} <nil>
}
