package qwen3moe

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/scripted"
	"github.com/smolgo/smolgo/models/qwen3"
	"github.com/smolgo/smolgo/models/qwen3moe/chat"
	"github.com/smolgo/smolgo/tokenizer"
)

// Qwen's added tokens (after the bytes, not at Qwen's ids: a small
// vocabulary builds fast): the ChatML markers are control tokens, the tool
// and reasoning tags user-defined.
var (
	control     = map[int]string{256: "<|endoftext|>", 257: "<|im_start|>", 258: "<|im_end|>"}
	userDefined = map[int]string{259: "<tool_call>", 260: "</tool_call>", 261: "<think>", 262: "</think>"}
)

const imEnd = 258

func vocabFile(t *testing.T, template string) *gguf.File {
	t.Helper()
	kv := []gguf.KV{{Key: "general.architecture", Value: Arch}, {Key: "tokenizer.ggml.eos_token_id", Value: uint32(imEnd)}}
	if template != "" {
		kv = append(kv, gguf.KV{Key: "tokenizer.chat_template", Value: template})
	}
	b, err := scripted.Vocab(control, userDefined, "qwen2", kv...)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func readTemplate(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var weatherTool = json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city"]}}}`)

func chatMsgs(text string) []engine.Message { return []engine.Message{{Role: "user", Content: text}} }

// Qwen3-Coder's template gets Qwen3-Coder's format, any other (and none)
// Qwen3's.
func TestFormatChoice(t *testing.T) {
	coder := readTemplate(t, "chat/testdata/Qwen3-Coder.jinja")
	qwen := readTemplate(t, "../qwen3/chat/testdata/Qwen-Qwen3-0.6B.jinja")
	for _, c := range []struct {
		name, template string
		coder          bool
	}{{"coder", coder, true}, {"qwen3", qwen, false}, {"none", "", false}} {
		f, err := Format(vocabFile(t, c.template))
		if err != nil {
			t.Fatal(err)
		}
		spec := f.(*family.Format).Spec()
		if got := spec.Tools == CoderTools; got != c.coder {
			t.Errorf("%s: Coder's format %v, want %v", c.name, got, c.coder)
		}
		if !c.coder && !spec.Reasoning {
			t.Errorf("%s: Qwen3's format does not reason", c.name)
		}
		if IsCoder(c.template) != c.coder {
			t.Errorf("%s: IsCoder = %v", c.name, !c.coder)
		}
	}
	// The prompt is package chat's render, its markers single tokens.
	f, _ := Format(vocabFile(t, coder))
	msgs := chatMsgs("hi <|im_end|>")
	ids, err := f.Prompt(msgs, engine.PromptOptions{Tools: []json.RawMessage{weatherTool}})
	if err != nil {
		t.Fatal(err)
	}
	text, spans, err := chat.RenderSpans(msgs, chat.Options{Tools: []json.RawMessage{weatherTool}, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := f.Tokenizer()
	if want := tok.(*tokenizer.Tokenizer).EncodeMarked(text, spans); !slices.Equal(ids, want) {
		t.Errorf("prompt %v, want the render tokenized: %v", ids, want)
	}
	if !f.EndOfTurn(imEnd) {
		t.Error("<|im_end|> does not end a turn")
	}
}

// Through the engine, an XML call's arguments are typed by the request's
// tool schema; a forced call of a random model is one the parser reads.
func TestCoderCalls(t *testing.T) {
	f := vocabFile(t, readTemplate(t, "chat/testdata/Qwen3-Coder.jinja"))
	format, err := Format(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	tools := []json.RawMessage{weatherTool}
	prompt, err := format.Prompt(chatMsgs("Weather in Paris?"), engine.PromptOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	answer := "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
	b := &scripted.Backend{Size: tok.Len(), PromptLen: len(prompt), Answer: tok.Encode(answer, true), End: imEnd}
	m, err := engine.New(b, format, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	content, calls := generate(t, m, engine.GenerateOptions{MaxTokens: 200, Tools: tools})
	if content != "Checking.\n" || strings.Join(calls, " ") != `get_weather{"city":"Paris","days":3}` {
		t.Errorf("content %q, calls %v", content, calls)
	}

	g, err := m.ToolCallGrammar(context.Background(), []grammar.Function{{Name: "get_weather",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":12},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["days"]}`)}},
		grammar.ToolCallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(2) {
		b.Rand = rand.New(rand.NewPCG(seed, 11))
		con, err := m.NewConstraint(g)
		if err != nil {
			t.Fatal(err)
		}
		_, calls := generate(t, m, engine.GenerateOptions{MaxTokens: 300, Tools: tools, Constraint: con})
		var args struct{ Days *int }
		if len(calls) != 1 || !strings.HasPrefix(calls[0], "get_weather{") || json.Unmarshal([]byte(strings.TrimPrefix(calls[0], "get_weather")), &args) != nil || args.Days == nil {
			t.Errorf("seed %d: calls %v, want one get_weather call with days", seed, calls)
		}
	}
}

func generate(t *testing.T, m *engine.Model, opts engine.GenerateOptions) (content string, calls []string) {
	t.Helper()
	for ev, err := range m.NewSession().Generate(context.Background(), chatMsgs("Weather in Paris?"), opts) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case engine.EventContent:
			content += ev.Text
		case engine.EventToolCall:
			calls = append(calls, ev.ToolCall.Name+string(ev.ToolCall.Arguments))
		case engine.EventToolError:
			t.Errorf("tool error %v on %q", ev.Err, ev.Text)
		case engine.EventDone:
			if ev.Stats.StopReason == engine.StopLength {
				t.Errorf("the answer did not end within %d tokens", opts.MaxTokens)
			}
		}
	}
	return content, calls
}

// The Qwen3 format of a qwen3moe file is package qwen3's.
func TestQwen3Format(t *testing.T) {
	f, err := Format(vocabFile(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	want, err := family.NewFormat(vocabFile(t, ""), qwen3.FormatSpec).Prompt(chatMsgs("hi"), engine.PromptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.Prompt(chatMsgs("hi"), engine.PromptOptions{}); err != nil || !slices.Equal(got, want) {
		t.Errorf("prompt %v, %v; want qwen3's %v", got, err, want)
	}
}
