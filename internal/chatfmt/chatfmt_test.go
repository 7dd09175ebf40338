package chatfmt

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/toolcall"
)

func TestDumps(t *testing.T) {
	in := `{"b": [1, -0, 2.50, 1e16, 1e15, 1E-5, 0.0001, 123456789012345678901234, -0.0, 1e400], "a": {"x": null, "y": true, "z": {}, "w": []}, "s": "é\"\\\n\t\u0001\u007f\u2028<>&", "b": "dup"}`
	tests := []struct {
		style  Style
		indent int
		want   string
	}{
		{Python, -1, `{"b": "dup", "a": {"x": null, "y": true, "z": {}, "w": []}, "s": "é\"\\\n\t\u0001` + "\x7f\u2028" + `<>&"}`},
		{Python, 2, "{\n  \"b\": \"dup\",\n  \"a\": {\n    \"x\": null,\n    \"y\": true,\n    \"z\": {},\n    \"w\": []\n  },\n  \"s\": \"é\\\"\\\\\\n\\t\\u0001\x7f\u2028<>&\"\n}"},
		{Minja, 2, "{\n  \"b\": \"dup\",\n  \"a\": {\n    \"x\": null,\n    \"y\": true,\n    \"z\": {\n      \n    },\n    \"w\": [\n      \n    ]\n  },\n  \"s\": \"é\\\"\\\\\\n\\t\\u0001\x7f\u2028<>&\"\n}"},
	}
	for _, tt := range tests {
		got, err := Dumps([]byte(in), tt.style, tt.indent)
		if err != nil || got != tt.want {
			t.Errorf("Dumps(style %d, indent %d) = %v\n%s\nwant\n%s", tt.style, tt.indent, err, got, tt.want)
		}
	}
	nums := `[1, -0, 2.50, 1e16, 1e15, 1E-5, 0.0001, 123456789012345678901234, -0.0, 1e400, 100, 1.5e300]`
	for style, want := range map[Style]string{
		Python:   `[1, 0, 2.5, 1e+16, 1000000000000000.0, 1e-05, 0.0001, 123456789012345678901234, -0.0, Infinity, 100, 1.5e+300]`,
		Nlohmann: `[1, 0, 2.5, 1e+16, 1e+15, 1e-05, 0.0001, 1.2345678901234569e+23, -0.0, null, 100, 1.5e+300]`,
	} {
		if got, err := Dumps([]byte(nums), style, -1); err != nil || got != want {
			t.Errorf("numbers in style %d: %s, %v\nwant %s", style, got, err, want)
		}
	}
	for _, bad := range []string{`{"a":`, `{} {}`, ``, strings.Repeat("[", 2000) + strings.Repeat("]", 2000)} {
		if _, err := Dumps([]byte(bad), Python, -1); err == nil {
			t.Errorf("Dumps(%.20q): no error", bad)
		}
	}
}

func TestStrip(t *testing.T) {
	if got := Strip("\u00a0\x1c\t a b \n\u2029\x1f"); got != "a b" {
		t.Errorf("Strip = %q", got)
	}
	if got := Strip("\u200bx\u200b"); got != "\u200bx\u200b" { // not white space to Python
		t.Errorf("Strip(ZWSP) = %q", got)
	}
}

func TestBuilderMergesAdjacentLiterals(t *testing.T) {
	var b Builder
	b.WriteString("<a>")
	b.Literal("x")
	b.Literal("")
	b.Literal("y")
	b.WriteString("<b>")
	b.Literal("z")
	if got := b.Spans(); len(got) != 2 || got[0] != [2]int{3, 5} || got[1] != [2]int{8, 9} {
		t.Errorf("spans %v", got)
	}
}

// A call longer than toolcall.MaxCallBytes is an error event; the text
// after it still streams.
func TestLeadParserOverrun(t *testing.T) {
	decide := func(raw string, complete bool) []toolcall.Event {
		return []toolcall.Event{{Kind: toolcall.KindCall, Call: toolcall.Call{Name: "f"}}}
	}
	p := NewLeadParser(decide, -1, "", false)
	var ev []toolcall.Event
	ev = append(ev, p.Push(-1, `{"a": "`)...)
	chunk := strings.Repeat("x", 1<<16)
	for range (toolcall.MaxCallBytes >> 16) + 1 {
		ev = append(ev, p.Push(-1, chunk)...)
	}
	ev = append(ev, p.Push(-1, `"} after`)...)
	ev = append(ev, p.Flush()...)
	if len(ev) != 2 || ev[0].Kind != toolcall.KindError || !errors.Is(ev[0].Err, toolcall.ErrMalformed) ||
		len(ev[0].Raw) != toolcall.MaxCallBytes || ev[1].Text != "after" {
		t.Fatalf("events: %d, first %v (raw %d bytes), last %+v", len(ev), ev[0].Kind, len(ev[0].Raw), ev[len(ev)-1])
	}
}

// With AcceptArrays a "[" starts a value too (strings and nesting
// respected); without it an answer opening with "[" is text.
func TestLeadParserArrays(t *testing.T) {
	var got []string
	decide := func(raw string, complete bool) []toolcall.Event {
		got = append(got, raw)
		return []toolcall.Event{{Kind: toolcall.KindCall, Call: toolcall.Call{Name: "f"}}}
	}
	in := ` [{"a": "]["}, [1]] , [2] tail`
	for _, arrays := range []bool{false, true} {
		got = nil
		p := NewLeadParser(decide, -1, "", true)
		if arrays {
			p.AcceptArrays()
		}
		var ev []toolcall.Event
		for i := range len(in) {
			ev = append(ev, p.Push(-1, in[i:i+1])...)
		}
		ev = append(ev, p.Flush()...)
		calls, text := 0, ""
		for _, e := range ev {
			if e.Kind == toolcall.KindCall {
				calls++
			}
			text += e.Text
		}
		if !arrays {
			if len(got) != 0 || calls != 0 || text != in {
				t.Errorf("without arrays: decided %q, %d calls, text %q", got, calls, text)
			}
			continue
		}
		if len(got) != 2 || got[0] != `[{"a": "]["}, [1]]` || got[1] != `[2]` || calls != 2 || text != "tail" {
			t.Errorf("with arrays: decided %q, %d calls, text %q", got, calls, text)
		}
	}
}

func TestCallSchema(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)
	tests := []struct {
		names          []string
		params         []json.RawMessage
		key            string
		list, parallel bool
		want           string // a prefix of the schema, or the error
	}{
		{[]string{"f"}, []json.RawMessage{params}, "parameters", false, false,
			`{"type":"object","properties":{"name":{"const":"f"},"parameters":{"type":"object","properties"`},
		{[]string{"f"}, []json.RawMessage{nil}, "arguments", true, false,
			`{"type":"array","items":{"type":"object","properties":{"name":{"const":"f"},"arguments":{"type":"object"}},"required":["name","arguments"],"additionalProperties":false},"minItems":1,"maxItems":1}`},
		{[]string{"f", "g"}, []json.RawMessage{params, params}, "arguments", true, true,
			`{"type":"array","items":{"anyOf":[`},
		{nil, nil, "arguments", true, true, "at least one function"},
		{[]string{""}, []json.RawMessage{params}, "arguments", true, true, "function 0 has no name"},
	}
	for _, tt := range tests {
		got, err := CallSchema(tt.names, tt.params, tt.key, tt.list, tt.parallel)
		text := string(got)
		if err != nil {
			text = err.Error()
		}
		if !strings.Contains(text, tt.want) {
			t.Errorf("CallSchema(%q, list %v, parallel %v) = %s, want %s", tt.names, tt.list, tt.parallel, text, tt.want)
		}
		if tt.parallel && err == nil && strings.Contains(text, "maxItems") {
			t.Errorf("parallel schema has maxItems: %s", text)
		}
	}
}
