package chat

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
	"github.com/smolgo/smolgo/toolcall"
)

// markerVocab gives the markers the ids they have in gpt-oss's vocabulary.
type markerVocab map[string]int32

func (v markerVocab) ID(s string) (int32, bool) { id, ok := v[s]; return id, ok }

var vocab = markerVocab{Return: 200002, Constrain: 200003, Channel: 200005, Start: 200006, End: 200007, Message: 200008, Call: 200012}

// summary writes events compactly, adjacent texts of a kind merged:
// reasoning:"…" content:"…" call:name{args} error:"raw".
func summary(evs []engine.Event) string {
	var parts []string
	kind, text := engine.EventKind(-1), ""
	flush := func() {
		if text != "" {
			parts = append(parts, fmt.Sprintf("%s:%q", kind, text))
		}
		text = ""
	}
	for _, e := range evs {
		switch e.Kind {
		case engine.EventReasoning, engine.EventContent:
			if e.Kind != kind {
				flush()
				kind = e.Kind
			}
			text += e.Text
		case engine.EventToolCall:
			flush()
			kind = -1
			parts = append(parts, "call:"+e.ToolCall.Name+string(e.ToolCall.Arguments))
		case engine.EventToolError:
			flush()
			kind = -1
			if !errors.Is(e.Err, toolcall.ErrMalformed) {
				parts = append(parts, "bad error "+e.Err.Error())
			}
			parts = append(parts, fmt.Sprintf("error:%q", e.Text))
		}
	}
	flush()
	return strings.Join(parts, " ")
}

// pieces cuts an answer the ways tokens bring it: markers as ids (with
// their text or without, as a detokenizer that skips special tokens gives
// them) and the text between in n-byte pieces, or everything as text in
// n-byte pieces (markers split across tokens).
func pieces(answer string, n int, ids, withText bool) []reftest.Token {
	if !ids {
		return reftest.Split(answer, n)
	}
	var out []reftest.Token
	for answer != "" {
		i, m := -1, ""
		for s := range vocab {
			if j := strings.Index(answer, s); j >= 0 && (i < 0 || j < i) {
				i, m = j, s
			}
		}
		if i < 0 {
			i = len(answer)
		}
		if i > 0 {
			out = append(out, reftest.Split(answer[:i], n)...)
		}
		if m == "" {
			break
		}
		tok := reftest.Token{ID: vocab[m]}
		if withText {
			tok.Text = m
		}
		out = append(out, tok)
		answer = answer[i+len(m):]
	}
	return out
}

func TestParser(t *testing.T) {
	tests := []struct {
		name, answer string
		tools        bool
		want         string
	}{
		{"final only", "<|channel|>final<|message|>Paris.", false, `content:"Paris."`},
		{"analysis then final", "<|channel|>analysis<|message|>The user asks. Easy.<|end|><|start|>assistant<|channel|>final<|message|>Paris.", false,
			`reasoning:"The user asks. Easy." content:"Paris."`},
		{"final ends with return as text", "<|channel|>final<|message|>Hi.<|return|>", false, `content:"Hi."`},
		{"call", "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}", true,
			`reasoning:"Need weather." call:get_weather{"city":"Paris"}`},
		{"call closed as text", "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|>", true, `call:get_time{}`},
		{"recipient before channel", "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\":\"Rome\"}", true,
			`reasoning:"Hm." call:get_weather{"city":"Rome"}`},
		{"call on the analysis channel", "<|channel|>analysis to=functions.get_time<|message|>{ }", true, `call:get_time{}`},
		{"empty arguments", "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>", true, `call:get_time{}`},
		{"preamble then call", "<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}", true,
			`content:"Let me check." call:get_time{}`},
		{"stray commentary", "<|channel|>commentary<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>commentary to=assistant<|channel|>final<|message|>c", false,
			`reasoning:"r" content:"c"`},
		{"two analysis messages", "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|><|start|>assistant<|channel|>final<|message|>c", false,
			`reasoning:"ab" content:"c"`},
		{"start without end", "<|channel|>analysis<|message|>a<|start|>assistant<|channel|>final<|message|>c", false, `reasoning:"a" content:"c"`},
		{"markers inside text", "<|channel|>final<|message|>Use <|channel|> and <|message|>; not <|en", false, `content:"Use <|channel|> and <|message|>; not <|en"`},
		{"plain text", "Hello there, no harmony.", false, `content:"Hello there, no harmony."`},
		{"broken arguments", "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": ", true,
			`error:"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": "`},
		{"arguments not an object", "<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1]", true,
			`error:"<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1]"`},
		{"builtin tool", "<|channel|>analysis<|message|>search<|end|><|start|>assistant<|channel|>analysis to=browser.search code<|message|>{\"query\":\"x\"}", true,
			`reasoning:"search" error:"<|start|>assistant<|channel|>analysis to=browser.search code<|message|>{\"query\":\"x\"}"`},
		{"call without tools", "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}", false,
			`error:"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}"`},
		{"header cut off", "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>fin", false, `reasoning:"r"`},
		{"unicode", "<|channel|>final<|message|>é😀 – ok", false, `content:"é😀 – ok"`},
	}
	for _, tt := range tests {
		for _, ids := range []bool{false, true} {
			for _, withText := range []bool{false, true} {
				if !ids && withText {
					continue
				}
				for n := 1; n <= 8; n++ {
					p := NewParser(vocab, ParserOptions{Tools: tt.tools})
					var evs []engine.Event
					for _, tok := range pieces(tt.answer, n, ids, withText) {
						evs = append(evs, p.Push(tok.ID, tok.Text)...)
					}
					evs = append(evs, p.Flush()...)
					if got := summary(evs); got != tt.want {
						t.Errorf("%s (ids %v, text %v, %d-byte pieces):\n got %s\nwant %s", tt.name, ids, withText, n, got, tt.want)
					}
				}
			}
		}
	}
}

// Content streams as it comes: only a possible start of an end marker is
// held back.
func TestParserStreams(t *testing.T) {
	p := NewParser(nil, ParserOptions{})
	steps := []struct{ in, want string }{
		{"<|channel|>final", ""},
		{"<|message|>Hel", `content:"Hel"`},
		{"lo <|", `content:"lo "`},
		{"b", `content:"<|b"`},
		{" <|en", `content:" "`},
	}
	for _, s := range steps {
		if got := summary(p.Push(-1, s.in)); got != s.want {
			t.Errorf("Push(%q) = %s, want %s", s.in, got, s.want)
		}
	}
	if got := summary(p.Flush()); got != `content:"<|en"` {
		t.Errorf("Flush = %s", got)
	}
}

// A header that never reaches <|message|> is not held forever.
func TestParserLongHeader(t *testing.T) {
	p := NewParser(nil, ParserOptions{})
	long := "<|channel|>" + strings.Repeat("x", maxHeader)
	got := summary(append(p.Push(-1, long), p.Flush()...))
	if got != fmt.Sprintf("content:%q", long) {
		t.Errorf("got %s", got)
	}
}
