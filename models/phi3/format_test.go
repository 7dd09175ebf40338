package phi3

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/models/phi3/chat"
	"github.com/smolgo/smolgo/tokenizer"
)

// markers are the templates' special tokens, in the test vocabulary.
var markers = []string{chat.EndOfText, chat.Assistant, chat.System, chat.User, chat.End,
	chat.Tool, chat.EndTool, chat.ToolCall, chat.EndToolCall}

// testFile is a vocabulary-only GGUF: SentencePiece with byte tokens and ▁,
// the templates' markers as control tokens, and the given chat template
// ("" for none).
func testFile(t *testing.T, template string) *gguf.File {
	t.Helper()
	tokens := []string{"<unk>", "<s>", "</s>", "\u2581"} // ▁: a space
	types := []int32{2, 3, 3, 1}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	for _, m := range markers {
		tokens = append(tokens, m)
		types = append(types, 3)
	}
	kv := []gguf.KV{
		{Key: "general.architecture", Value: "phi3"},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.scores", Value: make([]float32, len(tokens))},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(260)},
		{Key: "tokenizer.ggml.add_bos_token", Value: false},
		{Key: "tokenizer.ggml.add_space_prefix", Value: false},
	}
	if template != "" {
		kv = append(kv, gguf.KV{Key: "tokenizer.chat_template", Value: template})
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

func readTemplate(t *testing.T, name string) string {
	b, err := os.ReadFile("chat/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// prompt renders msgs with f's format and spells the ids back, special
// tokens included.
func prompt(t *testing.T, f *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, error) {
	t.Helper()
	format, err := Format(f)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := format.Prompt(msgs, opts)
	if err != nil {
		return "", err
	}
	tok, _ := format.Tokenizer()
	return tok.(*tokenizer.Tokenizer).Decode(ids, false)
}

// The file's template picks the format; the markers are tokens, what the
// user wrote is text.
func TestFormatByTemplate(t *testing.T) {
	user := []engine.Message{{Role: "user", Content: "hi<|end|>"}}
	tests := []struct {
		name, template, want string
	}{
		{"no template", "", "<|user|>hi<|end|><|end|><|assistant|>"},
		{"Phi-4-mini", readTemplate(t, "microsoft-Phi-4-mini-instruct.jinja"), "<|user|>hi<|end|><|end|><|assistant|>"},
		{"Phi-3.5-mini", readTemplate(t, "microsoft-Phi-3.5-mini-instruct.jinja"), "<|user|>\nhi<|end|><|end|>\n<|assistant|>\n"},
	}
	for _, tt := range tests {
		f := testFile(t, tt.template)
		got, err := prompt(t, f, user, engine.PromptOptions{})
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
		format, _ := Format(f)
		ids, _ := format.Prompt(user, engine.PromptOptions{})
		tok, _ := format.Tokenizer()
		end, _ := tok.(*tokenizer.Tokenizer).ID(chat.End)
		n := 0
		for _, id := range ids {
			if id == end {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d <|end|> tokens, want the template's 1 (the user's is text)", tt.name, n)
		}
		if !format.EndOfTurn(end) {
			t.Errorf("%s: <|end|> does not end a turn", tt.name)
		}
	}
}

// TestFormatUnknownTemplate: a template the package does not know renders
// through the Jinja engine, as the file says.
func TestFormatUnknownTemplate(t *testing.T) {
	f := testFile(t, "{{ bos_token }}{% for message in messages %}{{ message['content'] }}{% endfor %}")
	got, err := prompt(t, f, []engine.Message{{Role: "user", Content: "hi"}}, engine.PromptOptions{})
	if err != nil || !strings.HasSuffix(got, "hi") || strings.Contains(got, "<|user|>") {
		t.Errorf("unknown template: %q, %v; want the template's own render, ending in hi", got, err)
	}
}

// Phi-4-mini's format, tools end to end: the prompt lists them, the parser
// reads a call written with the tag tokens, the grammar forces one.
func TestFormatTools(t *testing.T) {
	f := testFile(t, "")
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_time", "parameters": {}}}`)}
	got, err := prompt(t, f, []engine.Message{{Role: "user", Content: "Time?"}}, engine.PromptOptions{Tools: tools})
	want := `<|system|>` + chat.DefaultToolSystem + `<|tool|>[{"name": "get_time", "parameters": {}}]<|/tool|><|end|><|user|>Time?<|end|><|assistant|>`
	if err != nil || got != want {
		t.Errorf("prompt with tools: %q, %v\nwant %q", got, err, want)
	}

	format, _ := Format(f)
	tok, _ := format.Tokenizer()
	open, _ := tok.(*tokenizer.Tokenizer).ID(chat.ToolCall)
	close, _ := tok.(*tokenizer.Tokenizer).ID(chat.EndToolCall)
	p := format.NewParser(engine.ParserOptions{Tools: true})
	var evs []engine.Event
	evs = append(evs, p.Push(-1, "Sure.")...)
	evs = append(evs, p.Push(open, "")...) // a control token decodes to nothing
	evs = append(evs, p.Push(-1, `[{"name": "get_time", "arguments": {}}]`)...)
	evs = append(evs, p.Push(close, "")...)
	evs = append(evs, p.Flush()...)
	var calls []string
	for _, ev := range evs {
		if ev.Kind == engine.EventToolCall {
			calls = append(calls, ev.ToolCall.Name+string(ev.ToolCall.Arguments))
		}
	}
	if fmt.Sprint(calls) != "[get_time{}]" {
		t.Errorf("parsed calls %v from %+v", calls, evs)
	}

	tc, ok := format.(engine.ToolCaller)
	if !ok {
		t.Fatal("the format is not an engine.ToolCaller")
	}
	g, err := tc.ToolCallGrammar(context.Background(), []grammar.Function{{Name: "get_time"}}, grammar.ToolCallOptions{})
	if err != nil || !strings.HasPrefix(g.String(), `root ::= "<|tool_call|>"`) {
		t.Errorf("grammar: %v, %v", g, err)
	}
}

// Phi-3.5-mini's format: the generic JSON format for tools.
func TestPhi35FormatTools(t *testing.T) {
	f := testFile(t, readTemplate(t, "microsoft-Phi-3.5-mini-instruct.jinja"))
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_time", "parameters": {}}}`)}
	got, err := prompt(t, f, []engine.Message{{Role: "user", Content: "Time?"}}, engine.PromptOptions{Tools: tools})
	if err != nil || !strings.Contains(got, "Respond in JSON format") || !strings.HasSuffix(got, "<|user|>\nTime?<|end|>\n<|assistant|>\n") {
		t.Errorf("prompt with tools: %q, %v", got, err)
	}
	format, _ := Format(f)
	p := format.NewParser(engine.ParserOptions{Tools: true})
	evs := append(p.Push(-1, `{"tool_call": {"name": "get_time", "arguments": {}}}`), p.Flush()...)
	if len(evs) != 1 || evs[0].Kind != engine.EventToolCall || evs[0].ToolCall.Name != "get_time" {
		t.Errorf("events %+v", evs)
	}
	g, err := format.(engine.ToolCaller).ToolCallGrammar(context.Background(), []grammar.Function{{Name: "get_time"}}, grammar.ToolCallOptions{})
	if err != nil || g == nil {
		t.Errorf("grammar: %v", err)
	}
}
