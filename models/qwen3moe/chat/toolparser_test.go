package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
	"github.com/smolgo/smolgo/toolcall"
)

var testTools = []json.RawMessage{
	json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{
		"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7},"ratio":{"type":"number"},
		"metric":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}},"where":{"$ref":"#/$defs/point"},
		"either":{"type":["integer","string"]},"maybe":{"anyOf":[{"type":"object"},{"type":"null"}]},
		"unit":{"enum":["c","f"]},"any":{}},
		"required":["city"],"$defs":{"point":{"type":"object","properties":{"lat":{"type":"number"}}}}}}}`),
	json.RawMessage(`{"type":"function","function":{"name":"python","parameters":{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}}}`),
	json.RawMessage(`{"type":"function","function":{"name":"get_time"}}`),
}

func call(name string, params ...string) string {
	s := "<tool_call>\n<function=" + name + ">\n"
	for i := 0; i+1 < len(params); i += 2 {
		s += "<parameter=" + params[i] + ">\n" + params[i+1] + "\n</parameter>\n"
	}
	return s + "</function>\n</tool_call>"
}

func TestToolParser(t *testing.T) {
	code := "def hello():\n    print(\"Hello, world!\")\n\nhello()"
	tests := []struct{ name, answer, want string }{
		{"text", "Hello, world!\nWhat's up?", `text:"Hello, world!\nWhat's up?"`},
		{"typed", call("get_weather", "city", "Paris", "days", "3", "ratio", "0.5", "metric", "True", "tags", `["a", "b"]`),
			`call:get_weather{"city":"Paris","days":3,"ratio":0.5,"metric":true,"tags":["a","b"]}`},
		{"string stays a string", call("get_weather", "city", "42"), `call:get_weather{"city":"42"}`},
		{"ref", call("get_weather", "city", "x", "where", `{"lat": 1.5}`), `call:get_weather{"city":"x","where":{"lat":1.5}}`},
		{"either", call("get_weather", "city", "x", "either", "7"), `call:get_weather{"city":"x","either":7}`},
		{"either text", call("get_weather", "city", "x", "either", "seven"), `call:get_weather{"city":"x","either":"seven"}`},
		{"either float text", call("get_weather", "city", "x", "either", "[1]"), `call:get_weather{"city":"x","either":"[1]"}`},
		{"nullable", call("get_weather", "city", "x", "maybe", "None"), `call:get_weather{"city":"x","maybe":null}`},
		{"enum", call("get_weather", "city", "x", "unit", "c"), `call:get_weather{"city":"x","unit":"c"}`},
		{"untyped", call("get_weather", "city", "x", "any", "12", "other", "yes"), `call:get_weather{"city":"x","any":12,"other":"yes"}`},
		{"bad JSON where no string fits", call("get_weather", "city", "x", "days", "three"), `call:get_weather{"city":"x","days":"three"}`},
		{"code", call("python", "code", code), `call:python{"code":"def hello():\n    print(\"Hello, world!\")\n\nhello()"}`},
		{"html", call("python", "code", "<html>\n <head>\n  <title>Hi</title>\n </head>\n</html>"),
			`call:python{"code":"<html>\n <head>\n  <title>Hi</title>\n </head>\n</html>"}`},
		{"empty value", call("python", "code", ""), `call:python{"code":""}`},
		{"no parameters", call("get_time"), `call:get_time{}`},
		{"unknown function", call("nope", "a", "1"), `call:nope{"a":1}`},
		{"text then call", "Let me call it.\n" + call("get_time"), `text:"Let me call it.\n" call:get_time{}`},
		{"no opening tag", "Let me call it.\n<function=get_time>\n</function>\n</tool_call>", `text:"Let me call it.\n" call:get_time{}`},
		{"no opening tag, parallel", "<function=get_time>\n</function>\n</tool_call>\n" + call("python", "code", "1"),
			`call:get_time{} text:"\n" call:python{"code":"1"}`},
		{"two calls", call("get_time") + "\n" + call("get_time"), `call:get_time{} text:"\n" call:get_time{}`},
		{"unclosed at the end", "<tool_call>\n<function=get_time>\n</function>", `call:get_time{}`},
		{"cut off", "<tool_call>\n<function=python>\n<parameter=code>\nprint(", `error:"<tool_call>\n<function=python>\n<parameter=code>\nprint("`},
		{"new call before the close", "<tool_call>\n<function=get_time>\n</function>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
			`call:get_time{} call:get_time{}`},
		{"not a call", "<tool_call>\n{\"name\": \"x\"}\n</tool_call> ok", `error:"<tool_call>\n{\"name\": \"x\"}\n</tool_call>" text:" ok"`},
		{"twice", call("python", "code", "1", "code", "2"), `error:"<tool_call>\n<function=python>\n<parameter=code>\n1\n</parameter>\n<parameter=code>\n2\n</parameter>\n</function>\n</tool_call>"`},
		{"unknown function tag is text", "<function=nope>\n</function>", `text:"<function=nope>\n</function>"`},
		{"partial tag at the end", "see <tool", `text:"see <tool"`},
	}
	for _, tt := range tests {
		for n := 1; n <= 9; n++ {
			p := NewToolParser(testTools)
			var evs []toolcall.Event
			for _, tok := range reftest.Split(tt.answer, n) {
				evs = append(evs, p.Push(tok.ID, tok.Text)...)
			}
			evs = append(evs, p.Flush()...)
			if got := reftest.Summary(evs); got != tt.want {
				t.Errorf("%s (%d-byte pieces):\n got %s\nwant %s", tt.name, n, got, tt.want)
				break
			}
			for _, e := range evs {
				if e.Kind == toolcall.KindCall && !json.Valid(e.Call.Arguments) {
					t.Errorf("%s: arguments %s are not JSON", tt.name, e.Call.Arguments)
				}
			}
		}
	}
}

// Text streams as it comes: only a possible start of a tag is held back.
func TestToolParserStreams(t *testing.T) {
	p := NewToolParser(testTools)
	steps := []struct{ in, want string }{
		{"Hello <", `text:"Hello "`},
		{"b", `text:"<b"`},
		{" <function=get", `text:" "`},
		{"_w", ""},
		{"x", `text:"<function=get_wx"`},
	}
	for _, s := range steps {
		if got := reftest.Summary(p.Push(-1, s.in)); got != s.want {
			t.Errorf("Push(%q) = %s, want %s", s.in, got, s.want)
		}
	}
}

// The forced-call grammar accepts the calls ToolParser reads, with JSON
// parameters valid under their schemas, and nothing else.
func TestCallGrammar(t *testing.T) {
	funcs := make([]grammar.Function, len(testTools))
	for i, raw := range testTools {
		var tool struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		funcs[i] = grammar.Function{Name: tool.Function.Name, Parameters: tool.Function.Parameters}
	}
	g, err := CallGrammar(context.Background(), funcs, grammar.ToolCallOptions{Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text             string
		prefix, complete bool
		want             string
	}{
		{call("get_weather", "city", "Paris", "days", "3"), true, true, `call:get_weather{"city":"Paris","days":3}`},
		{call("get_weather", "city", "Paris\n<b>\n</para", "where", `{"lat": 2}`, "tags", `["x"]`), true, true,
			`call:get_weather{"city":"Paris\n<b>\n</para","where":{"lat":2},"tags":["x"]}`},
		{call("get_weather", "city", "P", "either", "seven"), true, true, `call:get_weather{"city":"P","either":"seven"}`},
		{call("python", "code", "print(1)\n\nx = 2") + "\n" + call("get_time"), true, true, `call:python{"code":"print(1)\n\nx = 2"} text:"\n" call:get_time{}`},
		{call("get_weather", "city", "P", "days", "9"), false, false, ""},
		{call("get_weather", "days", "3"), false, false, ""},
		{call("get_weather", "city", "a\n</parameter>\nb"), false, false, ""},
		{call("get_weather", "city", "P", "where", `{"lat": "n"}`), false, false, ""},
		{call("get_weather", "city", "P", "nope", "1"), false, false, ""},
		{call("nope"), false, false, ""},
		{"<tool_call>\n<function=get_weather>\n<parameter=city>\nPar", true, false, ""},
	}
	for _, tt := range tests {
		prefix, complete := g.Match([]byte(tt.text))
		if prefix != tt.prefix || complete != tt.complete {
			t.Errorf("Match(%q) = %v, %v; want %v, %v", tt.text, prefix, complete, tt.prefix, tt.complete)
		}
		if tt.want == "" {
			continue
		}
		p := NewToolParser(testTools)
		if got := reftest.Summary(append(p.Push(-1, tt.text), p.Flush()...)); got != tt.want {
			t.Errorf("parsing %q: %s, want %s", tt.text, got, tt.want)
		}
	}
	one, err := CallGrammar(context.Background(), funcs[2:], grammar.ToolCallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, complete := one.Match([]byte(call("get_time") + "\n" + call("get_time"))); complete {
		t.Error("two calls accepted without Parallel")
	}
	for _, bad := range [][]grammar.Function{nil, {{Name: "a<b"}}, {{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer","minimum":"one"}}}`)}}} {
		if _, err := CallGrammar(context.Background(), bad, grammar.ToolCallOptions{}); err == nil {
			t.Errorf("CallGrammar(%v): no error", bad)
		}
	}
}

// Seed-OSS writes the same calls between <seed:tool_call> tags (its
// template without the line breaks inside a parameter): its parser reads
// them, split anywhere, and its grammar forces them.
func TestSeedOSSCalls(t *testing.T) {
	seed := func(s string) string {
		s = strings.Replace(s, OpenTag, SeedOSS.Open, 1)
		return strings.Replace(s, CloseTag, SeedOSS.Close, 1)
	}
	answer := "Checking.\n<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n<parameter=days>3</parameter>\n</function>\n</seed:tool_call>\n" +
		seed(call("get_time"))
	want := `text:"Checking.\n" call:get_weather{"city":"Paris","days":3} text:"\n" call:get_time{}`
	for _, step := range []int{1, 3, len(answer)} {
		p := NewToolParserIn(SeedOSS, testTools)
		var evs []toolcall.Event
		for _, tok := range reftest.Split(answer, step) {
			evs = append(evs, p.Push(tok.ID, tok.Text)...)
		}
		if got := reftest.Summary(append(evs, p.Flush()...)); got != want {
			t.Errorf("pieces of %d: %s, want %s", step, got, want)
		}
	}
	g, err := CallGrammarIn(context.Background(), SeedOSS, []grammar.Function{{Name: "get_time"}}, grammar.ToolCallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for text, accept := range map[string]bool{seed(call("get_time")): true, call("get_time"): false, seed(call("get_time")) + "\n" + seed(call("get_time")): false} {
		if _, complete := g.Match([]byte(text)); complete != accept {
			t.Errorf("Match(%q) complete %v, want %v", text, complete, accept)
		}
	}
}

// MiniMax-M2 writes several invokes in one <minimax:tool_call> block:
// each is a call, typed by its schema; its grammar forces one a block.
func TestMiniMaxM2Calls(t *testing.T) {
	answer := "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n<parameter name=\"days\">3</parameter>\n</invoke>\n" +
		"<invoke name=\"get_time\">\n</invoke>\n</minimax:tool_call>"
	want := `call:get_weather{"city":"Paris","days":3} call:get_time{}`
	for _, step := range []int{1, 4, len(answer)} {
		p := NewToolParserIn(MiniMaxM2, testTools)
		var evs []toolcall.Event
		for _, tok := range reftest.Split(answer, step) {
			evs = append(evs, p.Push(tok.ID, tok.Text)...)
		}
		if got := reftest.Summary(append(evs, p.Flush()...)); got != want {
			t.Errorf("pieces of %d: %s, want %s", step, got, want)
		}
	}
	p := NewToolParserIn(MiniMaxM2, nil)
	bad := "<minimax:tool_call>\n<invoke name=\"get_time\">\n</invoke>\ntrailing</minimax:tool_call>"
	if got := reftest.Summary(append(p.Push(-1, bad), p.Flush()...)); got != fmt.Sprintf("error:%q", bad) {
		t.Errorf("text after an invoke: %s", got)
	}
	g, err := CallGrammarIn(context.Background(), MiniMaxM2, []grammar.Function{{Name: "get_weather",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}, grammar.ToolCallOptions{Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	one := "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">\nParis\n</parameter>\n</invoke>\n</minimax:tool_call>"
	for text, accept := range map[string]bool{one: true, one + "\n" + one: true, strings.Replace(one, "get_weather", "nope", 1): false,
		strings.Replace(one, "<parameter name=\"city\">\nParis\n</parameter>\n", "", 1): false} {
		if _, complete := g.Match([]byte(text)); complete != accept {
			t.Errorf("Match(%q) complete %v, want %v", text, complete, accept)
		}
	}
	p = NewToolParserIn(MiniMaxM2, nil)
	if got := reftest.Summary(append(p.Push(-1, one), p.Flush()...)); got != `call:get_weather{"city":"Paris"}` {
		t.Errorf("parsing the grammar's call: %s", got)
	}
}
