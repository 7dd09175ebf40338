package lfm2

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/chatfmt/reftest"
)

// templateFile is a GGUF file of architecture lfm2 holding tmpl (none when
// "") and a vocabulary of LFM2's special tokens the templates and the
// parser read.
func templateFile(t *testing.T, tmpl string) *gguf.File {
	t.Helper()
	tokens := []string{"<|pad|>", "<|startoftext|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>",
		"<|tool_call_start|>", "<|tool_call_end|>", "<think>", "</think>"}
	types := []int32{3, 3, 3, 3, 3, 3, 3, 4, 4}
	for _, r := range byteTokens() {
		tokens = append(tokens, string(r))
		types = append(types, 1)
	}
	kv := []gguf.KV{{Key: "general.architecture", Value: Arch},
		{Key: "tokenizer.ggml.model", Value: "gpt2"}, {Key: "tokenizer.ggml.pre", Value: "lfm2"},
		{Key: "tokenizer.ggml.tokens", Value: tokens}, {Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.merges", Value: []string{}},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(1)}, {Key: "tokenizer.ggml.eos_token_id", Value: uint32(4)}}
	if tmpl != "" {
		kv = append(kv, gguf.KV{Key: "tokenizer.chat_template", Value: tmpl})
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// byteTokens are GPT-2's printable stand-ins for the 256 bytes, which a
// byte-level vocabulary must have.
func byteTokens() []rune {
	var out []rune
	n := 0
	for b := range 256 {
		if '!' <= b && b <= '~' || '¡' <= b && b <= '¬' || '®' <= b && b <= 'ÿ' {
			out = append(out, rune(b))
		} else {
			out = append(out, rune(256+n))
			n++
		}
	}
	return out
}

var templates = map[string]string{
	"LFM2.5-Instruct": "LFM2.5-Instruct.jinja",
	"LFM2-8B-A1B":     "testdata/LFM2-8B-A1B.jinja",
	"LFM2.5-8B-A1B":   "testdata/LFM2.5-8B-A1B.jinja",
}

// Format renders each of LFM2's templates through the Jinja engine byte
// for byte as jinja2 does with llama.cpp's inputs (testdata/render.py), on
// conversations with tools, tool calls and results, reasoning in the
// content and in reasoning_content, and the templates' switches; the
// callers' texts are marked as such.
func TestFormatReference(t *testing.T) {
	formats := map[string]*family.Format{}
	for name, path := range templates {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ef, err := Format(templateFile(t, string(src)))
		if err != nil {
			t.Fatal(err)
		}
		formats[name] = ef.(*family.Format)
	}
	cases := reftest.Load(t, 75)
	for _, c := range cases {
		var o struct {
			Template string                     `json:"template"`
			Tools    []json.RawMessage          `json:"tools"`
			Kwargs   map[string]json.RawMessage `json:"kwargs"`
		}
		c.Decode(t, &o)
		f := formats[o.Template]
		if f == nil {
			t.Fatalf("%s: no template %q", c.Name, o.Template)
		}
		reftest.Check(t, []reftest.Case{c}, func(reftest.Case) (string, [][2]int, error) {
			return f.Spec().Render(nil, c.Messages, engine.PromptOptions{Tools: o.Tools, TemplateKwargs: o.Kwargs})
		})
	}
}

// The engine reads from each template what llama.cpp's LFM2 handler
// knows: <|im_end|> ends a turn, the tools are listed, calls are LFM2's
// Python calls (Tools), and reasoning is <think>…</think> only where the
// template names <think> (LFM2.5-8B-A1B's).
func TestFormatMarkers(t *testing.T) {
	for name, path := range templates {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ef, err := Format(templateFile(t, string(src)))
		if err != nil {
			t.Fatal(err)
		}
		spec := ef.(*family.Format).Spec()
		if spec.Tools != Tools {
			t.Errorf("%s: tool syntax %T, want LFM2's", name, spec.Tools)
		}
		if !spec.Template.ToolsShown {
			t.Errorf("%s: the tools are not shown", name)
		}
		if len(spec.EndOfTurn) != 1 || spec.EndOfTurn[0] != "<|im_end|>" {
			t.Errorf("%s: end of turn %q", name, spec.EndOfTurn)
		}
		wantReasoning := strings.Contains(string(src), "<think>")
		if spec.Reasoning != wantReasoning || wantReasoning && spec.ReasoningTags != [2]string{"<think>", "</think>"} {
			t.Errorf("%s: reasoning %v %q, want %v", name, spec.Reasoning, spec.ReasoningTags, wantReasoning)
		}
	}
}

// A file without a template gets LFM2.5-Instruct's.
func TestFormatDefault(t *testing.T) {
	src, err := os.ReadFile("LFM2.5-Instruct.jinja")
	if err != nil {
		t.Fatal(err)
	}
	if string(src) != DefaultTemplate {
		t.Fatal("DefaultTemplate is not LFM2.5-Instruct.jinja")
	}
	msgs := []engine.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}
	opts := engine.PromptOptions{Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f"}}`)}}
	var texts []string
	for _, f := range []*gguf.File{templateFile(t, ""), templateFile(t, string(src))} {
		ef, err := Format(f)
		if err != nil {
			t.Fatal(err)
		}
		text, err := ef.(engine.PromptTexter).PromptText(msgs, opts)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, text)
	}
	want := "<|startoftext|><|im_start|>system\nBe brief.\nList of tools: [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if texts[0] != texts[1] || texts[0] != want {
		t.Errorf("without a template: %q\nwith LFM2.5-Instruct's: %q\nwant %q", texts[0], texts[1], want)
	}
}

// An answer's calls are read with the markers as their special tokens
// (which decoding leaves out, giving the parser the id and no text) and as
// text; behind the reasoning parser of LFM2.5-8B-A1B's template too.
func TestFormatParsesCalls(t *testing.T) {
	for _, name := range []string{"LFM2.5-Instruct", "LFM2.5-8B-A1B"} {
		src, err := os.ReadFile(templates[name])
		if err != nil {
			t.Fatal(err)
		}
		ef, err := Format(templateFile(t, string(src)))
		if err != nil {
			t.Fatal(err)
		}
		for _, asIDs := range []bool{true, false} {
			p := ef.NewParser(engine.ParserOptions{Tools: true})
			var evs []engine.Event
			push := func(id int32, text string) { evs = append(evs, p.Push(id, text)...) }
			if name == "LFM2.5-8B-A1B" {
				push(7, "<think>")
				push(-1, "Weather needed.")
				push(8, "</think>")
			}
			push(-1, "Checking.")
			if asIDs {
				push(5, "")
			} else {
				push(-1, "<|tool_call")
				push(-1, "_start|>")
			}
			push(-1, `[get_weather(city="Paris"), get_time()]`)
			if asIDs {
				push(6, "")
			} else {
				push(-1, "<|tool_call_end|>")
			}
			evs = append(evs, p.Flush()...)
			var got []string
			for _, e := range evs {
				switch e.Kind {
				case engine.EventToolCall:
					got = append(got, "call:"+e.ToolCall.Name+string(e.ToolCall.Arguments))
				case engine.EventContent:
					got = append(got, "content:"+e.Text)
				case engine.EventReasoning:
					got = append(got, "reasoning:"+e.Text)
				default:
					got = append(got, "other:"+e.Text)
				}
			}
			want := `content:Checking. call:get_weather{"city":"Paris"} call:get_time{}`
			if name == "LFM2.5-8B-A1B" {
				want = "reasoning:Weather needed. " + want
			}
			if s := strings.Join(got, " "); s != want {
				t.Errorf("%s (ids %v): %s, want %s", name, asIDs, s, want)
			}
		}
	}
}
