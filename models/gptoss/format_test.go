package gptoss

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/scripted"
	"github.com/smolgo/smolgo/models/gptoss/chat"
	"github.com/smolgo/smolgo/tokenizer"
)

// markers are gpt-oss's added tokens, after the bytes (not at gpt-oss's
// ids, 199998 on: a small vocabulary builds fast). The converter writes
// them as control tokens; llama.cpp and package tokenizer then make
// <|channel|>, <|message|>, <|start|>, <|constrain|> and <|end|>
// user-defined, and drop <|end|> from the end-of-generation tokens.
var markers = map[int]string{idStartOfText: "<|startoftext|>", idEndOfText: "<|endoftext|>", idReturn: chat.Return, idConstrain: chat.Constrain,
	idChannel: chat.Channel, idStart: chat.Start, idEnd: chat.End, idMessage: chat.Message, idCall: chat.Call}

const (
	idStartOfText = 256 + iota
	idEndOfText
	idReturn
	idConstrain
	idChannel
	idStart
	idEnd
	idMessage
	idCall
)

// vocabFile is a vocabulary-only GGUF in gpt-oss's manner: the bytes, the
// markers, pre-tokenizer "gpt-4o".
func vocabFile(t *testing.T) *gguf.File {
	t.Helper()
	b, err := scripted.Vocab(markers, nil, "gpt-4o",
		gguf.KV{Key: "general.architecture", Value: Arch},
		gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: uint32(idStartOfText)},
		gguf.KV{Key: "tokenizer.ggml.eos_token_id", Value: uint32(idReturn)},
		gguf.KV{Key: "tokenizer.ggml.padding_token_id", Value: uint32(idEndOfText)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var weatherTool = json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}}}`)

func chatMsgs(text string) []engine.Message { return []engine.Message{{Role: "user", Content: text}} }

// The prompt is the template's render, its markers single tokens; the
// caller's text cannot forge <|return|> (a special token), though it can
// write the user-defined markers, which llama.cpp parses everywhere too.
func TestPrompt(t *testing.T) {
	f := family.NewFormat(vocabFile(t), FormatSpec)
	msgs := chatMsgs("hi <|return|> and <|start|>")
	ids, err := f.Prompt(msgs, engine.PromptOptions{ReasoningEffort: "high"})
	if err != nil {
		t.Fatal(err)
	}
	text, spans, err := chat.RenderSpans(msgs, chat.Options{AddGenerationPrompt: true, ReasoningEffort: "high"})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := f.Tokenizer()
	if want := tok.(*tokenizer.Tokenizer).EncodeMarked(text, spans); !slices.Equal(ids, want) {
		t.Errorf("prompt %v, want the render tokenized: %v", ids, want)
	}
	if !strings.Contains(text, "Reasoning: high") {
		t.Errorf("the render has no high effort:\n%s", text)
	}
	if n := countID(ids, idReturn); n != 0 {
		t.Errorf("%d <|return|> tokens in the prompt, want 0 (the user's is text)", n)
	}
	if n, want := countID(ids, idStart), strings.Count(text, chat.Start); n != want {
		t.Errorf("%d <|start|> tokens, want %d", n, want)
	}
	for _, c := range []struct {
		id  int32
		end bool
	}{{idReturn, true}, {idCall, true}, {idEnd, false}, {idMessage, false}} {
		if got := f.EndOfTurn(c.id); got != c.end {
			t.Errorf("EndOfTurn(%d) = %v, want %v", c.id, got, c.end)
		}
	}
	if _, err := f.Prompt(msgs, engine.PromptOptions{ReasoningEffort: "extreme"}); err == nil || !strings.Contains(err.Error(), "extreme") {
		t.Errorf("effort extreme: err = %v", err)
	}
}

func countID(ids []int32, id int32) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

func TestEffort(t *testing.T) {
	for in, want := range map[string]string{"": "", "low": "low", "medium": "medium", "high": "high", "none": "low", "minimal": "low", "xhigh": "high"} {
		if got, err := Effort(in); err != nil || got != want {
			t.Errorf("Effort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Effort("max"); err == nil {
		t.Error("Effort(max): no error")
	}
}

// The engine, with this format, turns a scripted gpt-oss answer into
// reasoning, content and calls: the markers arrive as their tokens.
func TestGenerate(t *testing.T) {
	m, b := newModel(t, vocabFile(t), "")
	tests := []struct {
		answer, reasoning, content, call string
	}{
		{"<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Paris.<|return|>", "Easy.", "Paris.", ""},
		{"<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
			"Need it.", "", `get_weather{"city":"Paris"}`},
	}
	for _, tt := range tests {
		b.Answer = b.tok.Encode(tt.answer, true)
		reasoning, content, calls := generate(t, m, engine.GenerateOptions{MaxTokens: 200, Tools: []json.RawMessage{weatherTool}})
		if reasoning != tt.reasoning || content != tt.content || strings.Join(calls, " ") != tt.call {
			t.Errorf("%q:\n got reasoning %q content %q calls %v\nwant %q %q %q", tt.answer, reasoning, content, calls, tt.reasoning, tt.content, tt.call)
		}
	}
}

// A forced call (tool_choice "required"): with the grammar the format
// gives, even a random model can only answer with a call the parser reads.
func TestForcedToolCall(t *testing.T) {
	m, b := newModel(t, vocabFile(t), "")
	for seed := range uint64(2) {
		b.Rand = rand.New(rand.NewPCG(seed, 7))
		g, err := m.ToolCallGrammar(context.Background(), []grammar.Function{{Name: "get_weather",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}`)}},
			grammar.ToolCallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		con, err := m.NewConstraint(g)
		if err != nil {
			t.Fatal(err)
		}
		_, _, calls := generate(t, m, engine.GenerateOptions{MaxTokens: 300, Tools: []json.RawMessage{weatherTool}, Constraint: con})
		if len(calls) != 1 || !strings.HasPrefix(calls[0], `get_weather{"city":`) {
			t.Errorf("seed %d: calls %v, want one get_weather call", seed, calls)
		}
	}
}

func generate(t *testing.T, m *engine.Model, opts engine.GenerateOptions) (reasoning, content string, calls []string) {
	t.Helper()
	for ev, err := range m.NewSession().Generate(context.Background(), chatMsgs("Weather in Paris?"), opts) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case engine.EventReasoning:
			reasoning += ev.Text
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
	return reasoning, content, calls
}

// newModel is an engine.Model with gpt-oss's format over f whose backend
// writes answer (tokenized with its markers) and then <|return|>, or random
// logits once the test sets its Rand.
func newModel(t *testing.T, f *gguf.File, answer string) (*engine.Model, *backend) {
	t.Helper()
	format := family.NewFormat(f, FormatSpec)
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := format.Prompt(chatMsgs("Weather in Paris?"), engine.PromptOptions{Tools: []json.RawMessage{weatherTool}})
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{tok: tok, Backend: scripted.Backend{Size: tok.Len(), PromptLen: len(prompt), Answer: tok.Encode(answer, true), End: idReturn}}
	m, err := engine.New(&b.Backend, format, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, b
}

type backend struct {
	scripted.Backend
	tok *tokenizer.Tokenizer
}
