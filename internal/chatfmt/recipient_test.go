package chatfmt

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
	"github.com/smolgo/smolgo/toolcall"
)

// parse feeds answer to p in pieces of step bytes and summarises the
// events.
func parse(p interface {
	Push(int32, string) []toolcall.Event
	Flush() []toolcall.Event
}, answer string, step int) string {
	var evs []toolcall.Event
	for _, tok := range reftest.Split(answer, step) {
		evs = append(evs, p.Push(tok.ID, tok.Text)...)
	}
	return reftest.Summary(append(evs, p.Flush()...))
}

// TestRecipientParser reads functionary v3.2's answers (written after the
// generation prompt's ">>>") whole and split at every byte.
func TestRecipientParser(t *testing.T) {
	tests := []struct{ answer, want string }{
		{"all\nHello there.", `text:"Hello there."`},
		{"get_weather\n{\"city\": \"Paris\"}", `call:get_weather{"city": "Paris"}`},
		{"all\nLet me check.>>>get_weather\n{\"city\": \"Paris\"}>>>get_time\n{}", `text:"Let me check." call:get_weather{"city": "Paris"} call:get_time{}`},
		{">>>get_weather\n{\"a\": \">>>all\\n}\"}\n>>>all\nDone.", `call:get_weather{"a": ">>>all\n}"} text:"Done."`},
		{"get_time\n{}\nand then some", `call:get_time{} text:"and then some"`},
		{"Hello, no recipient", `text:"Hello, no recipient"`},
		{"all\n3 >>2 and 4>>>", `text:"3 >>2 and 4"`},
		{"all\nok>>>not a name\nrest", `text:"ok>>>not a name\nrest"`},
		{"python\nprint(1)>>>all\nx", `error:">>>python\nprint(1)" text:"x"`},
		{"get_weather\n{\"city\": \"Par", `error:">>>get_weather\n{\"city\": \"Par"`},
		{"get_weather\n", `error:">>>get_weather\n"`},
		{"all", ``},
		{"", ``},
	}
	for _, tt := range tests {
		for _, step := range []int{len(tt.answer) + 1, 1, 2, 5} {
			if got := parse(NewRecipientParser(), tt.answer, step); got != tt.want {
				t.Errorf("%q in pieces of %d: %s, want %s", tt.answer, step, got, tt.want)
			}
		}
	}
}

// Without tools, only the recipient "all" is read; a call is text.
func TestRecipientTextParser(t *testing.T) {
	for answer, want := range map[string]string{
		"all\nHello.":             `text:"Hello."`,
		"all\nHi.>>>get_time\n{}": `text:"Hi.>>>get_time\n{}"`,
		"get_time\n{}":            `text:"get_time\n{}"`,
		"Hello":                   `text:"Hello"`,
	} {
		for _, step := range []int{len(answer), 1} {
			if got := parse(NewRecipientTextParser(), answer, step); got != want {
				t.Errorf("%q in pieces of %d: %s, want %s", answer, step, got, want)
			}
		}
	}
}

// TestRecipientGrammar: the forced-call grammar accepts functionary
// v3.2's calls, and what it accepts the parser reads back.
func TestRecipientGrammar(t *testing.T) {
	names := []string{"get_weather", "get_time"}
	params := []json.RawMessage{json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}`), nil}
	g, err := RecipientGrammar(context.Background(), names, params, true)
	if err != nil {
		t.Fatal(err)
	}
	one, err := RecipientGrammar(context.Background(), names, params, false)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text           string
		parallel, once bool
		want           string
	}{
		{"get_weather\n{\"city\":\"Paris\"}", true, true, `call:get_weather{"city":"Paris"}`},
		{"get_time\n{}", true, true, `call:get_time{}`},
		{"get_weather\n{\"city\":\"Paris\"}>>>get_time\n{}", true, false, `call:get_weather{"city":"Paris"} call:get_time{}`},
		{"get_weather\n{}", false, false, ""},
		{"all\nhi", false, false, ""},
		{">>>get_time\n{}", false, false, ""},
		{"nope\n{}", false, false, ""},
		{"get_weather\n{\"city\":\"a long city name\"}", false, false, ""},
	}
	for _, tt := range tests {
		if _, complete := g.Match([]byte(tt.text)); complete != tt.parallel {
			t.Errorf("parallel grammar: Match(%q) complete %v, want %v", tt.text, complete, tt.parallel)
		}
		if _, complete := one.Match([]byte(tt.text)); complete != tt.once {
			t.Errorf("one-call grammar: Match(%q) complete %v, want %v", tt.text, complete, tt.once)
		}
		if tt.want != "" {
			if got := parse(NewRecipientParser(), tt.text, 1); got != tt.want {
				t.Errorf("parsing %q: %s, want %s", tt.text, got, tt.want)
			}
		}
	}
	for _, bad := range [][]string{nil, {"all"}, {"a b"}, {"two\nlines"}} {
		ps := make([]json.RawMessage, len(bad))
		if _, err := RecipientGrammar(context.Background(), bad, ps, true); err == nil {
			t.Errorf("RecipientGrammar(%q): no error", bad)
		}
	}
}
