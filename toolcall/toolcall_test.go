package toolcall

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const (
	openID  = 128015
	closeID = 128016
)

// norm renders events for comparison: adjacent text merged (how text is cut
// into events depends on the tokens), calls as name + compact arguments,
// errors as "error".
func norm(evs []Event) []string {
	var out []string
	for _, ev := range evs {
		switch ev.Kind {
		case KindText:
			if n := len(out); n > 0 && strings.HasPrefix(out[n-1], "text:") {
				out[n-1] += ev.Text
				continue
			}
			out = append(out, "text:"+ev.Text)
		case KindCall:
			out = append(out, fmt.Sprintf("call:%s%s", ev.Call.Name, ev.Call.Arguments))
		case KindError:
			out = append(out, "error")
		}
	}
	return out
}

func feed(p *Parser, pieces []string) []Event {
	var evs []Event
	for _, s := range pieces {
		switch s {
		case "\x00open":
			evs = append(evs, p.Push(openID, OpenTag)...)
		case "\x00close":
			evs = append(evs, p.Push(closeID, CloseTag)...)
		default:
			evs = append(evs, p.Push(5, s)...)
		}
	}
	return append(evs, p.Flush()...)
}

var parseTests = []struct {
	name, in string
	want     []string
	errs     []string // substrings of the error events' messages, in order
}{
	{"plain text", "Hello, world.", []string{"text:Hello, world."}, nil},
	{"angle brackets are text", "a < b, <tool and <tool_cal <tool_call", []string{"text:a < b, <tool and <tool_cal <tool_call"}, nil},
	{"one call", "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2]}}\n</tool_call>",
		[]string{"text:Let me check.\n", `call:get_weather{"city":"Paris","days":[1,2]}`}, nil},
	{"two calls and text", `<tool_call>{"name":"a","arguments":{}}</tool_call> and <tool_call>{"name":"b","arguments":{"x":"</tool"}}</tool_call>done`,
		[]string{`call:a{}`, "text: and ", `call:b{"x":"</tool"}`, "text:done"}, nil},
	{"array of calls", `<tool_call>[{"name":"a","arguments":{"i":1}},{"name":"b"}]</tool_call>`,
		[]string{`call:a{"i":1}`, `call:b{}`}, nil},
	{"arguments as a JSON string", `<tool_call>{"name":"f","arguments":"{\"q\": \"x\"}"}</tool_call>`, []string{`call:f{"q":"x"}`}, nil},
	{"parameters instead of arguments", `<tool_call>{"name":"f","parameters":{"q":1}}</tool_call>`, []string{`call:f{"q":1}`}, nil},
	{"null arguments", `<tool_call>{"name":"f","arguments":null}</tool_call>`, []string{`call:f{}`}, nil},
	{"unicode and escapes survive", `<tool_call>{"name":"say","arguments":{"t":"é😀 \"q\" \u00e9"}}</tool_call>`, []string{`call:say{"t":"é😀 \"q\" \u00e9"}`}, nil},
	{"malformed JSON", `<tool_call>{"name": "f", "arguments": {</tool_call>after`, []string{"error", "text:after"}, []string{"not valid JSON"}},
	{"trailing garbage", `<tool_call>{"name":"f"} extra</tool_call>`, []string{"error"}, []string{"not valid JSON"}},
	{"no name", `<tool_call>{"arguments":{}}</tool_call>`, []string{"error"}, []string{`no "name"`}},
	{"arguments not an object", `<tool_call>{"name":"f","arguments":[1]}</tool_call>`, []string{"error"}, []string{`arguments of "f" are not a JSON object`}},
	{"string arguments not an object", `<tool_call>{"name":"f","arguments":"x"}</tool_call>`, []string{"error"}, []string{`a string that is not a JSON object`}},
	{"not an object", `<tool_call>"f"</tool_call>`, []string{"error"}, []string{"must be a JSON object"}},
	{"empty call", `<tool_call> </tool_call>x`, []string{"error", "text:x"}, []string{"empty"}},
	{"empty array", `<tool_call>[]</tool_call>`, []string{"error"}, []string{"at least one call"}},
	{"unclosed but complete", "<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":1}}\n", []string{`call:f{"a":1}`}, nil},
	{"unclosed and incomplete", `text <tool_call>{"name":"f","argu`, []string{"text:text ", "error"}, []string{"</tool_call> never came"}},
	{"stray close tag is dropped", `a</tool_call>b`, []string{"text:ab"}, nil},
	{"open inside a call ends it", `<tool_call>{"name":"a"<tool_call>{"name":"b"}</tool_call>`, []string{"error", "call:b{}"}, []string{"never came"}},
	{"partial tag at the end is text", `answer <tool_ca`, []string{"text:answer <tool_ca"}, nil},
}

// TestParserSplits feeds every case whole, cut in two at every byte, and
// byte by byte: the events must not depend on how the text is cut.
func TestParserSplits(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(how string, evs []Event) {
				t.Helper()
				if got := norm(evs); fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Fatalf("%s: events %q, want %q", how, got, tt.want)
				}
				var errs []Event
				for _, ev := range evs {
					if ev.Kind == KindError {
						errs = append(errs, ev)
					}
				}
				for i, ev := range errs {
					if !errors.Is(ev.Err, ErrMalformed) || !strings.Contains(ev.Err.Error(), tt.errs[i]) {
						t.Fatalf("%s: error %v, want ErrMalformed containing %q", how, ev.Err, tt.errs[i])
					}
				}
			}
			check("whole", feed(NewParser(openID, closeID), []string{tt.in}))
			for i := 1; i < len(tt.in); i++ {
				check(fmt.Sprintf("cut at %d", i), feed(NewParser(openID, closeID), []string{tt.in[:i], tt.in[i:]}))
			}
			var bytes []string
			for i := range len(tt.in) {
				bytes = append(bytes, tt.in[i:i+1])
			}
			check("byte by byte", feed(NewParser(-1, -1), bytes))
			// The same with the tags as single tokens.
			var pieces []string
			for _, s := range strings.SplitAfter(strings.ReplaceAll(strings.ReplaceAll(tt.in, OpenTag, "\x01open\x01"), CloseTag, "\x01close\x01"), "\x01") {
				switch s = strings.TrimSuffix(s, "\x01"); s {
				case "open", "close":
					pieces = append(pieces, "\x00"+s)
				default:
					pieces = append(pieces, s)
				}
			}
			check("tag tokens", feed(NewParser(openID, closeID), pieces))
		})
	}
}

func TestParse(t *testing.T) {
	text, calls, err := Parse("Sure.\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n<tool_call>{bad}</tool_call>")
	if text != "Sure.\n\n" || len(calls) != 1 || calls[0].Name != "add" || string(calls[0].Arguments) != `{"a":1,"b":2}` {
		t.Fatalf("Parse = %q, %+v", text, calls)
	}
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("err = %v", err)
	}
}

func TestOverflow(t *testing.T) {
	p := NewParser(openID, closeID)
	var evs []Event
	evs = append(evs, p.Push(openID, OpenTag)...)
	chunk := `{"name":"f","arguments":{"x":"` + strings.Repeat("a", 1<<16)
	for range MaxCallBytes/len(chunk) + 2 {
		evs = append(evs, p.Push(5, chunk)...)
	}
	evs = append(evs, p.Push(closeID, CloseTag)...)
	evs = append(evs, p.Push(5, "after")...)
	evs = append(evs, p.Flush()...)
	if got := norm(evs); fmt.Sprint(got) != "[error text:after]" {
		t.Fatalf("events %q", got)
	}
	if len(evs[0].Raw) != MaxCallBytes || !strings.Contains(evs[0].Err.Error(), "longer than") {
		t.Fatalf("raw %d bytes, err %v", len(evs[0].Raw), evs[0].Err)
	}
}

// FuzzParser checks that no input crashes the parser, that tags never
// leak into the text, and that the events do not depend on where the text
// is cut into tokens.
func FuzzParser(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.in, uint8(3))
	}
	f.Fuzz(func(t *testing.T, in string, step uint8) {
		whole := feed(NewParser(openID, closeID), []string{in})
		var pieces []string
		n := int(step%16) + 1
		for i := 0; i < len(in); i += n {
			pieces = append(pieces, in[i:min(i+n, len(in))])
		}
		cut := feed(NewParser(openID, closeID), pieces)
		if fmt.Sprint(norm(whole)) != fmt.Sprint(norm(cut)) {
			t.Fatalf("whole %q, in pieces of %d %q", norm(whole), n, norm(cut))
		}
		for _, ev := range whole {
			if ev.Kind == KindText && (strings.Contains(ev.Text, OpenTag) || strings.Contains(ev.Text, CloseTag)) {
				t.Fatalf("tag in text %q", ev.Text)
			}
		}
	})
}

// Other tags (Phi-4-mini's) follow the same rules, split at every byte or
// pushed as single tokens.
func TestTagParser(t *testing.T) {
	const open, close = "<|tool_call|>", "<|/tool_call|>"
	in := "Sure. <|tool|> <|tool_call|>[{\"name\": \"f\", \"arguments\": {\"a\": \"<|/tool\"}}, {\"name\": \"g\", \"parameters\": {}}]<|/tool_call|> done"
	want := []string{"text:Sure. <|tool|> ", `call:f{"a":"<|/tool"}`, "call:g{}", "text: done"}
	for n := 1; n <= len(in); n++ {
		p := NewTagParser(open, close, 7, 8)
		var evs []Event
		for i := 0; i < len(in); i += n {
			evs = append(evs, p.Push(-1, in[i:min(len(in), i+n)])...)
		}
		if got := norm(append(evs, p.Flush()...)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("pieces of %d: %q, want %q", n, got, want)
		}
	}
	p := NewTagParser(open, close, 7, 8)
	evs := append(p.Push(5, "x"), p.Push(7, open)...)
	evs = append(evs, p.Push(5, `{"name": "f"}`)...)
	evs = append(evs, p.Push(8, close)...)
	evs = append(evs, p.Push(5, "<tool_call>")...)
	if got := norm(append(evs, p.Flush()...)); fmt.Sprint(got) != fmt.Sprint([]string{"text:x", "call:f{}", "text:<tool_call>"}) {
		t.Errorf("tokens: %q", got)
	}
	p = NewTagParser(open, close, -1, -1)
	evs = append(p.Push(-1, open+"[{\"name\": 1}]"), p.Flush()...)
	if len(evs) != 1 || evs[0].Kind != KindError || !strings.Contains(evs[0].Err.Error(), "<|/tool_call|> never came") {
		t.Errorf("unclosed malformed call: %+v", evs)
	}
	defer func() {
		if recover() == nil {
			t.Error("NewTagParser with an empty tag did not panic")
		}
	}()
	NewTagParser("", close, -1, -1)
}
