package chatfmt

import (
	"context"
	"encoding/json"
	"testing"
)

// TestJSONCalls reads each JSON-list syntax's calls as its template writes
// them, whole and split at every byte.
func TestJSONCalls(t *testing.T) {
	tests := []struct {
		name   string
		syn    JSONCalls
		answer string
		want   string
	}{
		{"Command R7B", CommandR7BCalls, "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}},\n    {\"tool_call_id\": \"1\", \"tool_name\": \"get_time\", \"parameters\": {}}\n]<|END_ACTION|>",
			`call:get_weather{"city":"Paris"} call:get_time{}`},
		{"Command R7B text", CommandR7BCalls, "Paris is sunny.", `text:"Paris is sunny."`},
		{"Command R+", CommandRPlusCalls, "Action:\n```json\n[\n    {\n        \"tool_name\": \"get_weather\",\n        \"parameters\": {\n            \"city\": \"Paris\"\n        }\n    }\n]```",
			`call:get_weather{"city":"Paris"}`},
		{"Command R+ no fence language", CommandRPlusCalls, "Action: ```[{\"tool_name\": \"get_time\", \"parameters\": {}}]```", `call:get_time{}`},
		{"Nemotron v2", NemotronCalls, "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {}}]</TOOLCALL>",
			`call:get_weather{"city":"Paris"} call:get_time{}`},
		{"Apriel", AprielCalls, "Checking.\n<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"a1B2c3D4e\"}]</tool_calls>",
			`text:"Checking.\n" call:get_weather{"city":"Paris"}`},
		{"MiniMax-M1", MiniMaxM1Calls, "<tool_calls>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_calls>",
			`call:get_weather{"city":"Paris"} call:get_time{}`},
		{"Firefunction v2", FirefunctionCalls, "Sure. functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
			`text:"Sure. " call:get_weather{"city":"Paris"}`},
		{"arguments as a string", NemotronCalls, "<TOOLCALL>[{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"UTC\\\"}\"}]</TOOLCALL>", `call:get_time{"tz":"UTC"}`},
		{"no name", NemotronCalls, "<TOOLCALL>[{\"arguments\": {}}]</TOOLCALL>", `error:"<TOOLCALL>[{\"arguments\": {}}]</TOOLCALL>"`},
		{"not JSON", CommandR7BCalls, "<|START_ACTION|>[oops]<|END_ACTION|>after", `error:"<|START_ACTION|>[oops]<|END_ACTION|>" text:"after"`},
		{"cut off", AprielCalls, "<tool_calls>[{\"name\": \"get_time\"", `error:"<tool_calls>[{\"name\": \"get_time\""`},
		{"empty list", AprielCalls, "<tool_calls>[]</tool_calls>", `error:"<tool_calls>[]</tool_calls>"`},
	}
	for _, tt := range tests {
		for _, step := range []int{len(tt.answer) + 1, 1, 3} {
			if got := parse(NewMarkedParser(tt.syn.Marked()), tt.answer, step); got != tt.want {
				t.Errorf("%s in pieces of %d: %s, want %s", tt.name, step, got, tt.want)
			}
		}
	}
}

// TestJSONCallsGrammar: each syntax's forced-call grammar accepts its calls
// of the functions, one or (parallel) several, and nothing else; what it
// accepts the parser reads back.
func TestJSONCallsGrammar(t *testing.T) {
	names := []string{"get_weather", "get_time"}
	params := []json.RawMessage{json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}`), nil}
	tests := []struct {
		name                string
		syn                 JSONCalls
		one, two, wrongName string
		wantOne, wantTwo    string
	}{
		{"Command R7B", CommandR7BCalls,
			`<|START_ACTION|>[{"tool_call_id":"0","tool_name":"get_weather","parameters":{"city":"Paris"}}]<|END_ACTION|>`,
			`<|START_ACTION|>[{"tool_call_id":"0","tool_name":"get_weather","parameters":{"city":"Paris"}},{"tool_call_id":"1","tool_name":"get_time","parameters":{}}]<|END_ACTION|>`,
			`<|START_ACTION|>[{"tool_call_id":"0","tool_name":"nope","parameters":{}}]<|END_ACTION|>`,
			`call:get_weather{"city":"Paris"}`, `call:get_weather{"city":"Paris"} call:get_time{}`},
		{"Command R+", CommandRPlusCalls,
			"Action:\n```json\n[{\"tool_name\":\"get_weather\",\"parameters\":{\"city\":\"Paris\"}}]```",
			"Action:\n```json\n[{\"tool_name\":\"get_weather\",\"parameters\":{\"city\":\"Paris\"}},{\"tool_name\":\"get_time\",\"parameters\":{}}]```",
			"Action:\n```json\n[{\"tool_name\":\"directly-answer\",\"parameters\":{}}]```",
			`call:get_weather{"city":"Paris"}`, `call:get_weather{"city":"Paris"} call:get_time{}`},
		{"Nemotron v2", NemotronCalls,
			`<TOOLCALL>[{"name":"get_weather","arguments":{"city":"Paris"}}]</TOOLCALL>`,
			`<TOOLCALL>[{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"get_time","arguments":{}}]</TOOLCALL>`,
			`<TOOLCALL>[{"name":"get_weather","arguments":{"city":"a long city name"}}]</TOOLCALL>`,
			`call:get_weather{"city":"Paris"}`, `call:get_weather{"city":"Paris"} call:get_time{}`},
		{"MiniMax-M1", MiniMaxM1Calls,
			"<tool_calls>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_calls>",
			"<tool_calls>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n{\"name\":\"get_time\",\"arguments\":{}}\n</tool_calls>",
			"<tool_calls>\n{\"name\":\"get_weather\",\"arguments\":{}}\n</tool_calls>",
			`call:get_weather{"city":"Paris"}`, `call:get_weather{"city":"Paris"} call:get_time{}`},
		{"Firefunction v2", FirefunctionCalls,
			`functools[{"name":"get_weather","arguments":{"city":"Paris"}}]`,
			`functools[{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"get_time","arguments":{}}]`,
			`functools[{"name":"nope","arguments":{}}]`,
			`call:get_weather{"city":"Paris"}`, `call:get_weather{"city":"Paris"} call:get_time{}`},
	}
	for _, tt := range tests {
		par, err := tt.syn.Grammar(context.Background(), names, params, true)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		single, err := tt.syn.Grammar(context.Background(), names, params, false)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, c := range []struct {
			g      string
			text   string
			accept bool
		}{{"parallel", tt.one, true}, {"parallel", tt.two, true}, {"parallel", tt.wrongName, false},
			{"one", tt.one, true}, {"one", tt.two, false}, {"one", "text " + tt.one, false}} {
			g := par
			if c.g == "one" {
				g = single
			}
			if _, complete := g.Match([]byte(c.text)); complete != c.accept {
				t.Errorf("%s, %s grammar: Match(%q) complete %v, want %v", tt.name, c.g, c.text, complete, c.accept)
			}
		}
		for text, want := range map[string]string{tt.one: tt.wantOne, tt.two: tt.wantTwo} {
			if got := parse(NewMarkedParser(tt.syn.Marked()), text, 1); got != want {
				t.Errorf("%s: parsing %q: %s, want %s", tt.name, text, got, want)
			}
		}
	}
	if _, err := CommandR7BCalls.Grammar(context.Background(), []string{""}, []json.RawMessage{nil}, true); err == nil {
		t.Error("a function without a name: no error")
	}
	if _, err := CommandR7BCalls.Grammar(context.Background(), nil, nil, true); err == nil {
		t.Error("no functions: no error")
	}
}
