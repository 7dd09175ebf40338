package chatfmt

import (
	"strings"
	"testing"

	"github.com/smolgo/smolgo/toolcall"
)

// TestMarkedCalls reads each marker syntax's calls, as its template writes
// them, fed whole and byte by byte: the same text and calls either way.
func TestMarkedCalls(t *testing.T) {
	cases := []struct {
		name   string
		syn    MarkedCalls
		answer string
		text   string
		calls  []string // name(arguments)
		errs   int
	}{
		{"DeepSeek R1", DeepSeekCalls, "Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			"Let me check.", []string{`get_weather({"city": "Paris"})`, `get_time({})`}, 0},
		{"DeepSeek V3.1", DeepSeekCalls, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>fn<｜tool▁sep｜>{\"a\": \"v\", \"n\": 2}<｜tool▁call▁end｜><｜tool▁call▁begin｜>fn2<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			"", []string{`fn({"a": "v", "n": 2})`, `fn2({})`}, 0},
		{"Kimi K2", KimiCalls, "ok<|tool_calls_section_begin|><|tool_call_begin|>functions.fn:0<|tool_call_argument_begin|>{\"a\": \"v\"}<|tool_call_end|><|tool_call_begin|>functions.fn2:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
			"ok", []string{`fn({"a": "v"})`, `fn2({})`}, 0},
		{"Mistral Small 3.2", MistralCalls, "[TOOL_CALLS]fn[CALL_ID]a1B2c3D4e[ARGS]{\"a\": \"v\", \"n\": 2}[TOOL_CALLS]fn2[CALL_ID]b1B2c3D4e[ARGS]{}",
			"", []string{`fn({"a": "v", "n": 2})`, `fn2({})`}, 0},
		{"Ministral 3", MistralCalls, "Sure.[TOOL_CALLS]fn[ARGS]{\"a\": \"v\"}", "Sure.", []string{`fn({"a": "v"})`}, 0},
		{"Mistral Nemo", MistralCalls, "[TOOL_CALLS][{\"name\": \"fn\", \"arguments\": {\"a\": \"v\"}, \"id\": \"a1B2c3D4e\"}, {\"name\": \"fn2\", \"arguments\": {}}]",
			"", []string{`fn({"a": "v"})`, `fn2({})`}, 0},
		{"functionary v3.1", FunctionaryCalls, "<function=fn>{\"a\": \"v\"}</function><function=fn2>{}</function>", "", []string{`fn({"a": "v"})`, `fn2({})`}, 0},
		{"GLM", GLMCalls, "Checking.\n<tool_call>fn\n<arg_key>a</arg_key>\n<arg_value>v</arg_value>\n<arg_key>n</arg_key>\n<arg_value>2</arg_value>\n</tool_call>\n<tool_call>fn2\n</tool_call>",
			"Checking.\n", []string{`fn({"a": "v", "n": 2})`, `fn2({})`}, 0},
		{"plain text", KimiCalls, "no calls <| here", "no calls <| here", nil, 0},
		{"bad arguments", FunctionaryCalls, "<function=fn>{oops}</function>after", "after", nil, 1},
		{"cut off", DeepSeekCalls, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>fn\n```json\n{\"a\"", "", nil, 1},
	}
	for _, c := range cases {
		for _, step := range []int{len(c.answer), 1, 3} {
			p := NewMarkedParser(c.syn)
			var evs []toolcall.Event
			for i := 0; i < len(c.answer); i += step {
				evs = append(evs, p.Push(-1, c.answer[i:min(len(c.answer), i+step)])...)
			}
			evs = append(evs, p.Flush()...)
			var text strings.Builder
			var calls []string
			errs := 0
			for _, ev := range evs {
				switch ev.Kind {
				case toolcall.KindText:
					text.WriteString(ev.Text)
				case toolcall.KindCall:
					calls = append(calls, ev.Call.Name+"("+string(ev.Call.Arguments)+")")
				default:
					errs++
				}
			}
			if text.String() != c.text || strings.Join(calls, " ") != strings.Join(c.calls, " ") || errs != c.errs {
				t.Errorf("%s (pieces of %d bytes): text %q, calls %v, %d errors; want %q, %v, %d", c.name, step, text.String(), calls, errs, c.text, c.calls, c.errs)
			}
		}
	}
}
