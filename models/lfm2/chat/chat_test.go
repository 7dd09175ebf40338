package chat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
	"github.com/smolgo/smolgo/toolcall"
)

func block(calls string) string { return CallStart + calls + CallEnd }

func TestParseCalls(t *testing.T) {
	tests := []struct{ body, want string }{
		{`[get_weather(city="Paris", days=3)]`, `get_weather{"city":"Paris","days":3}`},
		{`[get_weather(city='Paris')]`, `get_weather{"city":"Paris"}`},
		{`[get_time()]`, `get_time{}`},
		{`get_time()`, `get_time{}`},
		{` [ f( a = 1 ,b=-2.5e3 ) , g() ] `, `f{"a":1,"b":-2.5e3} g{}`},
		{`[f(a=1,)]`, `f{"a":1}`},
		{`[f(), ]`, `f{}`},
		{`[f(x=True, y=False, z=None, t=true, u=false, v=null)]`, `f{"x":true,"y":false,"z":null,"t":true,"u":false,"v":null}`},
		{`[f(l=[1, 'a', [], {}], d={'k': "v", "n": {'m': [True]}})]`, `f{"l":[1,"a",[],{}],"d":{"k":"v","n":{"m":[true]}}}`},
		{`[f(s='it\'s "x"', q="say \"hi\" \'ok\'")]`, `f{"s":"it's \"x\"","q":"say \"hi\" 'ok'"}`},
		{`[f(s="a\nb\tc\\d\/e\u00e9\ud83d\ude00")]`, `f{"s":"a\nb\tc\\d/eé😀"}`},
		{"[f(s='line one\nline two')]", `f{"s":"line one\nline two"}`},
		{`[f(s="São Paulo ✓")]`, `f{"s":"São Paulo ✓"}`},
		{`[browser.open(url="x"), a-b()]`, `browser.open{"url":"x"} a-b{}`},
		{`[f(n=0, m=0.5, k=10)]`, `f{"n":0,"m":0.5,"k":10}`},
	}
	for _, tt := range tests {
		calls, err := ParseCalls(tt.body)
		if err != nil {
			t.Errorf("ParseCalls(%q): %v", tt.body, err)
			continue
		}
		var parts []string
		for _, c := range calls {
			if !json.Valid(c.Arguments) {
				t.Errorf("ParseCalls(%q): arguments %s are not JSON", tt.body, c.Arguments)
			}
			parts = append(parts, c.Name+string(c.Arguments))
		}
		if got := strings.Join(parts, " "); got != tt.want {
			t.Errorf("ParseCalls(%q) = %s, want %s", tt.body, got, tt.want)
		}
	}
}

func TestParseCallsErrors(t *testing.T) {
	tests := []struct{ body, want string }{
		{`[]`, "want a function name"},
		{``, "want a function name"},
		{`[f("Paris")]`, "want a keyword argument"},
		{`[f(city=Paris)]`, "want a literal value"},
		{`[f(a=1, a=2)]`, "argument a given twice"},
		{`[f(a=1 b=2)]`, "want , or ) after argument a"},
		{`[f(a="x)]`, "not closed"},
		{`[f(a="\x41")]`, `the escape \x`},
		{`[f(a=01)]`, "not a number"},
		{`[f(a=1.)]`, "digits after the decimal point"},
		{`[f(a={1: 2})]`, "string key"},
		{`[f(a=[1 2])]`, "want , or ]"},
		{`[f() g()]`, "want , or ] after call 1"},
		{`[f()] and more`, "unexpected text after the calls"},
		{`f() g()`, "unexpected text after the calls"},
		{`[f(a=` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `)]`, "nested deeper"},
		{"[f(a=\"\xff\")]", "invalid UTF-8"},
	}
	for _, tt := range tests {
		if _, err := ParseCalls(tt.body); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseCalls(%q): err = %v, want one mentioning %q", tt.body, err, tt.want)
		}
	}
}

// startID and endID stand for the markers' special tokens.
const startID, endID = 12, 13

// tokens cuts an answer into n-byte pieces of text, except the markers,
// which come as their ids with empty text when asIDs.
func tokens(answer string, n int, asIDs bool) []reftest.Token {
	if !asIDs {
		return reftest.Split(answer, n)
	}
	var out []reftest.Token
	for answer != "" {
		i, j := strings.Index(answer, CallStart), strings.Index(answer, CallEnd)
		cut, id, tag := -1, int32(0), ""
		switch {
		case i >= 0 && (j < 0 || i < j):
			cut, id, tag = i, startID, CallStart
		case j >= 0:
			cut, id, tag = j, endID, CallEnd
		}
		if cut < 0 {
			return append(out, reftest.Split(answer, n)...)
		}
		if cut > 0 {
			out = append(out, reftest.Split(answer[:cut], n)...)
		}
		out = append(out, reftest.Token{ID: id})
		answer = answer[cut+len(tag):]
	}
	return out
}

func TestToolParser(t *testing.T) {
	tests := []struct{ name, answer, want string }{
		{"text", "Hello, world!\nWhat's up? <b>", `text:"Hello, world!\nWhat's up? <b>"`},
		{"one call", block(`[get_weather(city="Paris", days=3)]`), `call:get_weather{"city":"Paris","days":3}`},
		{"parallel", block(`[get_weather(city="Paris"), get_time()]`), `call:get_weather{"city":"Paris"} call:get_time{}`},
		{"text then call", "Let me check.\n" + block(`[get_time()]`), `text:"Let me check.\n" call:get_time{}`},
		{"call then text", block(`[get_time()]`) + " Done.", `call:get_time{} text:" Done."`},
		{"two blocks", block(`[f()]`) + "\n" + block(`[g()]`), `call:f{} call:g{}`},
		{"start marker inside a string", block(`[f(s="a <|tool_call_start|> b")]`), `call:f{"s":"a <|tool_call_start|> b"}`},
		{"end marker inside a string cuts the call", block(`[f(s="x<|tool_call_end|>")]`), `error:"<|tool_call_start|>[f(s=\"x<|tool_call_end|>" text:"\")]<|tool_call_end|>"`},
		{"not a call", block(`[f(Paris)]`) + " ok", `error:"<|tool_call_start|>[f(Paris)]<|tool_call_end|>" text:" ok"`},
		{"cut off", "Sure. " + CallStart + `[get_weather(city="Par`, `text:"Sure. " error:"<|tool_call_start|>[get_weather(city=\"Par"`},
		{"partial marker at the end", "see <|tool_call", `text:"see <|tool_call"`},
	}
	for _, tt := range tests {
		for _, asIDs := range []bool{false, true} {
			for n := 1; n <= 9; n++ {
				p := NewToolParser(startID, endID)
				var evs []toolcall.Event
				for _, tok := range tokens(tt.answer, n, asIDs) {
					evs = append(evs, p.Push(tok.ID, tok.Text)...)
				}
				evs = append(evs, p.Flush()...)
				if got := reftest.Summary(evs); got != tt.want {
					t.Errorf("%s (ids %v, %d-byte pieces):\n got %s\nwant %s", tt.name, asIDs, n, got, tt.want)
					break
				}
			}
		}
	}
}

// Text streams as it comes: only a possible start of a marker is held.
func TestToolParserStreams(t *testing.T) {
	p := NewToolParser(-1, -1)
	steps := []struct{ in, want string }{
		{"Hello <", `text:"Hello "`},
		{"b", `text:"<b"`},
		{" <|tool", `text:" "`},
		{"_call_start|>[f(", ""},
		{")]<|tool_call_end|>", `call:f{}`},
		{"ok", `text:"ok"`},
	}
	for _, s := range steps {
		if got := reftest.Summary(p.Push(-1, s.in)); got != s.want {
			t.Errorf("Push(%q) = %s, want %s", s.in, got, s.want)
		}
	}
}

var testFuncs = []grammar.Function{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{
		"city":{"type":"string","maxLength":12},"days":{"type":"integer","minimum":1,"maximum":7},
		"metric":{"type":"boolean"},"where":{"$ref":"#/$defs/point"},"tags":{"type":"array","items":{"type":"string"}}},
		"required":["city"],"$defs":{"point":{"type":"object","properties":{"lat":{"type":"number"}},"required":["lat"]}}}`)},
	{Name: "get_time"},
	{Name: "pick", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["b"]}`)},
}

// The forced-call grammar accepts the calls ToolParser reads, with values
// valid under their schemas, and nothing else.
func TestCallGrammar(t *testing.T) {
	g, err := CallGrammar(context.Background(), testFuncs, grammar.ToolCallOptions{Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text             string
		prefix, complete bool
		want             string
	}{
		{block(`[get_weather(city="Paris", days=3)]`), true, true, `call:get_weather{"city":"Paris","days":3}`},
		{block(`[get_weather(city="Paris", metric=true, where={"lat":1.5}, tags=["a","b"])]`), true, true,
			`call:get_weather{"city":"Paris","metric":true,"where":{"lat":1.5},"tags":["a","b"]}`},
		{block(`[get_weather(city="P\"\u00e9"), get_time()]`), true, true, `call:get_weather{"city":"P\"é"} call:get_time{}`},
		{block(`[pick(b=2)]`), true, true, `call:pick{"b":2}`},
		{block(`[pick(a=1, b=2)]`), true, true, `call:pick{"a":1,"b":2}`},
		{block(`[get_time()]`), true, true, `call:get_time{}`},
		{block(`[pick(a=1)]`), false, false, ""},
		{block(`[pick(b=2, a=1)]`), false, false, ""},
		{block(`[get_weather(days=3)]`), false, false, ""},
		{block(`[get_weather(city="Paris", days=9)]`), false, false, ""},
		{block(`[get_weather(city="a long city name")]`), false, false, ""},
		{block(`[get_weather(city='Paris')]`), false, false, ""},
		{block(`[get_weather(city="Paris", nope=1)]`), false, false, ""},
		{block(`[nope()]`), false, false, ""},
		{"text " + block(`[get_time()]`), false, false, ""},
		{CallStart + `[get_weather(city="Par`, true, false, ""},
	}
	for _, tt := range tests {
		prefix, complete := g.Match([]byte(tt.text))
		if prefix != tt.prefix || complete != tt.complete {
			t.Errorf("Match(%q) = %v, %v; want %v, %v", tt.text, prefix, complete, tt.prefix, tt.complete)
		}
		if tt.want == "" {
			continue
		}
		p := NewToolParser(-1, -1)
		if got := reftest.Summary(append(p.Push(-1, tt.text), p.Flush()...)); got != tt.want {
			t.Errorf("parsing %q: %s, want %s", tt.text, got, tt.want)
		}
	}
	one, err := CallGrammar(context.Background(), testFuncs[1:2], grammar.ToolCallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, complete := one.Match([]byte(block(`[get_time(), get_time()]`))); complete {
		t.Error("two calls accepted without Parallel")
	}
	for _, bad := range [][]grammar.Function{nil, {{Name: "a b"}}, {{Name: ""}},
		{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"x-y":{}}}`)}},
		{{Name: "f", Parameters: json.RawMessage(`[1]`)}},
		{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer","minimum":"one"}}}`)}}} {
		if _, err := CallGrammar(context.Background(), bad, grammar.ToolCallOptions{}); err == nil {
			t.Errorf("CallGrammar(%v): no error", bad)
		}
	}
}
