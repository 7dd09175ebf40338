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

const (
	callID    = 200025 // <|tool_call|> in Phi-4-mini's vocabulary
	endCallID = 200026 // <|/tool_call|>
)

// parseAll feeds tokens to a new Phi-4-mini parser and summarizes the events.
func parseAll(tokens []reftest.Token) string {
	p := NewToolParser(callID, endCallID)
	var ev []toolcall.Event
	for _, t := range tokens {
		ev = append(ev, p.Push(t.ID, t.Text)...)
	}
	return reftest.Summary(append(ev, p.Flush()...))
}

// asTokens cuts text into pieces of n bytes, except that the tags are
// their single tokens.
func asTokens(text string, n int) []reftest.Token {
	var out []reftest.Token
	for text != "" {
		i, j := strings.Index(text, ToolCall), strings.Index(text, EndToolCall)
		k, tag, id := len(text), "", int32(-1)
		if i >= 0 && (j < 0 || i < j) {
			k, tag, id = i, ToolCall, callID
		} else if j >= 0 {
			k, tag, id = j, EndToolCall, endCallID
		}
		if k > 0 {
			out = append(out, reftest.Split(text[:k], n)...)
		}
		if tag == "" {
			break
		}
		out = append(out, reftest.Token{ID: id, Text: tag})
		text = text[k+len(tag):]
	}
	return out
}

var parserTests = []struct{ in, want string }{
	// What Phi-4-mini writes: a list of calls between the tags.
	{`<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>`, `call:get_weather{"city":"Paris"}`},
	{`<|tool_call|>[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"a": [1, {"b": "]"}]}}]<|/tool_call|>`, `call:f{} call:g{"a":[1,{"b":"]"}]}`},
	{`Let me check. <|tool_call|>[{"name": "f", "arguments": {}}]<|/tool_call|>`, `text:"Let me check. " call:f{}`},
	{"<|tool_call|>[{\"name\": \"f\", \"arguments\": {}}]<|/tool_call|>\n<|tool_call|>[{\"name\": \"g\", \"arguments\": {}}]<|/tool_call|> Done.", `call:f{} text:"\n" call:g{} text:" Done."`},
	// Tolerated: one object, "parameters", string arguments, no closing tag.
	{`<|tool_call|>{"name": "f", "parameters": {"x": 1}}<|/tool_call|>`, `call:f{"x":1}`},
	{`<|tool_call|>[{"name": "f", "arguments": "{\"x\": 1}"}]<|/tool_call|>`, `call:f{"x":1}`},
	{`<|tool_call|>[{"name": "f", "arguments": {"x": "<|/tool"}}]`, `call:f{"x":"<|/tool"}`},
	// Text only, tag look-alikes included.
	{"The <|tool|> tag, <|tool_ and <|/tool_call| are text.", `text:"The <|tool|> tag, <|tool_ and <|/tool_call| are text."`},
	{"", ``},
	{`<|/tool_call|>stray close`, `text:"stray close"`},
	// Blocks that cannot be read.
	{`<|tool_call|>[{"name": "f", "arguments": {]<|/tool_call|> after`, `error:"<|tool_call|>[{\"name\": \"f\", \"arguments\": {]<|/tool_call|>" text:" after"`},
	{`<|tool_call|>[{"arguments": {}}]<|/tool_call|>`, `error:"<|tool_call|>[{\"arguments\": {}}]<|/tool_call|>"`},
	{`<|tool_call|>[]<|/tool_call|>`, `error:"<|tool_call|>[]<|/tool_call|>"`},
	{`<|tool_call|>[{"name": "f", "arguments": [1]}]<|/tool_call|>`, `error:"<|tool_call|>[{\"name\": \"f\", \"arguments\": [1]}]<|/tool_call|>"`},
	{`<|tool_call|>[{"name": "f", "argu`, `error:"<|tool_call|>[{\"name\": \"f\", \"argu<|/tool_call|>"`},
	{`<|tool_call|><|tool_call|>[{"name": "f", "arguments": {}}]<|/tool_call|>`, `error:"<|tool_call|><|/tool_call|>" call:f{}`},
}

// Every answer gives the same events however it is cut into tokens: at
// every byte boundary, in pieces of 2 to 7 bytes, whole, and with the tags
// as their single tokens.
func TestToolParser(t *testing.T) {
	for _, tt := range parserTests {
		var cuts [][]reftest.Token
		for n := 1; n <= 7; n++ {
			cuts = append(cuts, reftest.Split(tt.in, n), asTokens(tt.in, n))
		}
		cuts = append(cuts, reftest.Split(tt.in, max(1, len(tt.in))))
		for i := 1; i < len(tt.in); i++ { // one cut anywhere
			cuts = append(cuts, []reftest.Token{{ID: -1, Text: tt.in[:i]}, {ID: -1, Text: tt.in[i:]}})
		}
		for _, tokens := range cuts {
			if got := parseAll(tokens); got != tt.want {
				t.Errorf("%q cut as %q:\n got %s\nwant %s", tt.in, tokens, got, tt.want)
				break
			}
		}
	}
}

// InCall is true between the tags.
func TestToolParserInCall(t *testing.T) {
	p := NewToolParser(callID, endCallID)
	p.Push(-1, "Hi ")
	if p.InCall() {
		t.Error("InCall before the tag")
	}
	p.Push(callID, ToolCall)
	p.Push(-1, `[{"name": "f"`)
	if !p.InCall() {
		t.Error("not InCall inside the block")
	}
	p.Push(endCallID, EndToolCall)
	if p.InCall() {
		t.Error("InCall after the block")
	}
}

func FuzzToolParser(f *testing.F) {
	for _, tt := range parserTests {
		f.Add(tt.in, 3)
	}
	f.Fuzz(func(t *testing.T, in string, n int) {
		n = 1 + abs(n)%16
		for _, tokens := range [][]reftest.Token{reftest.Split(in, n), asTokens(in, n)} {
			p := NewToolParser(callID, endCallID)
			var ev []toolcall.Event
			for _, tok := range tokens {
				ev = append(ev, p.Push(tok.ID, tok.Text)...)
			}
			for _, e := range append(ev, p.Flush()...) {
				if e.Kind == toolcall.KindText && (strings.Contains(e.Text, ToolCall) || strings.Contains(e.Text, EndToolCall)) {
					t.Fatalf("a tag leaked into the text: %q", e.Text)
				}
				if e.Kind == toolcall.KindCall && !json.Valid(e.Call.Arguments) {
					t.Fatalf("invalid arguments %q", e.Call.Arguments)
				}
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// byteVocab is a vocabulary of the 256 bytes and an end token (256).
func byteVocab(t *testing.T) *grammar.Vocab {
	tokens := make([][]byte, 257)
	for i := range 256 {
		tokens[i] = []byte{byte(i)}
	}
	v, err := grammar.NewVocab(tokens, []int32{256})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// accepts reports whether g takes s whole, byte by byte.
func accepts(g *grammar.Grammar, v *grammar.Vocab, s string) bool {
	c := g.NewConstraint(v)
	for i := 0; i < len(s); i++ {
		if c.Accept(int32(s[i])) != nil {
			return false
		}
	}
	return c.Done()
}

func TestCallGrammar(t *testing.T) {
	funcs := []grammar.Function{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`)},
		{Name: "get_time"},
	}
	v := byteVocab(t)
	tests := []struct {
		answer          string
		parallel, alone bool
	}{
		{`<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>`, true, true},
		{`<|tool_call|>[{"name": "get_time", "arguments": {}}]<|/tool_call|>`, true, true},
		{`<|tool_call|>[{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Rome"}}]<|/tool_call|>`, true, false},
		{`<|tool_call|>[]<|/tool_call|>`, false, false},
		{`<|tool_call|>[{"name": "get_weather", "arguments": {}}]<|/tool_call|>`, false, false},
		{`<|tool_call|>[{"name": "nope", "arguments": {}}]<|/tool_call|>`, false, false},
		{`[{"name": "get_time", "arguments": {}}]`, false, false},
		{`<|tool_call|>[{"name": "get_time", "arguments": {}}]`, false, false},
		{`It is noon.`, false, false},
	}
	for _, parallel := range []bool{true, false} {
		g, err := CallGrammar(context.Background(), funcs, grammar.ToolCallOptions{Parallel: parallel})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			want := tt.alone
			if parallel {
				want = tt.parallel
			}
			if got := accepts(g, v, tt.answer); got != want {
				t.Errorf("parallel=%v: grammar accepts %s: %v, want %v", parallel, tt.answer, got, want)
			}
		}
	}
	// What the grammar lets through, the parser reads back.
	p := NewToolParser(-1, -1)
	ev := append(p.Push(-1, tests[2].answer), p.Flush()...)
	if got := reftest.Summary(ev); got != `call:get_time{} call:get_weather{"city":"Rome"}` {
		t.Errorf("parser on a grammar's answer: %s", got)
	}
	if _, err := CallGrammar(context.Background(), nil, grammar.ToolCallOptions{}); err == nil {
		t.Error("CallGrammar without functions: no error")
	}
	if _, err := CallGrammar(context.Background(), []grammar.Function{{Name: "f", Parameters: json.RawMessage(`{"type": "bogus"}`)}}, grammar.ToolCallOptions{}); err == nil {
		t.Error("CallGrammar with a bad schema: no error")
	}
}
