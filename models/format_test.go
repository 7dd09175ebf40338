package models_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/models/llamaarch/chatml"
	"github.com/smolgo/smolgo/tokenizer"
)

var weatherTool = json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}}}`)

// Each family's format reads its own model's answers: reasoning where the
// family reasons, and tool calls in the family's own syntax. A scripted
// backend writes the answer; the family's real format (template, parser)
// over its tiny model's vocabulary does the rest.
func TestFamilyFormatsParse(t *testing.T) {
	hermes := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	for _, c := range []struct {
		model, answer      string
		reasoning, content string
		call               bool
	}{
		{"qwen3-tiny-F32", "<think>\nplan it\n</think>\n\nHello there", "plan it", "Hello there", false},
		{"qwen3-tiny-F32", hermes, "", "", true},
		{"qwen2-tiny-F32", hermes, "", "", true},
		{"qwen2-tiny-F32", "<think>not reasoning</think>", "", "<think>not reasoning</think>", false},
		{"llama32-tiny-F32", `{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", "", true},
		{"llama32-tiny-F32", "Sunny, 20 degrees.", "", "Sunny, 20 degrees.", false},
		{"gemma3-tiny-F32", `{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}`, "", "", true},
		{"gemma3-tiny-F32", `{"response": "It is sunny."}`, "", "It is sunny.", false},
		{"granite-tiny-F32", hermes, "", "", true}, // no template: Granite 4.1's format
		{"granite-tiny-F32", "It is sunny.", "", "It is sunny.", false},
		{"phi3-tiny-F32", `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>`, "", "", true}, // no template: Phi-4-mini's
		{"phi3-tiny-F32", "It is sunny.", "", "It is sunny.", false},
		{"smollm2-tiny-F32", `{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}`, "", "", true},
		{"smollm2-tiny-F32", `{"response": "It is sunny."}`, "", "It is sunny.", false},
		{"smollm2-tiny-F32", "Sunny, 20 degrees.", "", "Sunny, 20 degrees.", false},
		{"lfm2-tiny-F32", `<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>`, "", "", true}, // no template: LFM2.5-Instruct's
		{"lfm2-tiny-F32", "It is sunny.", "", "It is sunny.", false},
	} {
		t.Run(c.model, func(t *testing.T) {
			m := scriptedFamily(t, c.model, c.answer)
			var reasoning, content string
			var calls []*engine.ToolCall
			opts := engine.GenerateOptions{MaxTokens: 200, Tools: []json.RawMessage{weatherTool}}
			for ev, err := range m.NewSession().Generate(context.Background(), chat("Weather in Paris?"), opts) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case engine.EventReasoning:
					reasoning += ev.Text
				case engine.EventContent:
					content += ev.Text
				case engine.EventToolCall:
					calls = append(calls, ev.ToolCall)
				case engine.EventToolError:
					t.Errorf("tool error %v on %q", ev.Err, ev.Text)
				}
			}
			if reasoning != c.reasoning || content != c.content {
				t.Errorf("reasoning %q content %q, want %q and %q", reasoning, content, c.reasoning, c.content)
			}
			if c.call && (len(calls) != 1 || calls[0].Name != "get_weather" || string(calls[0].Arguments) != `{"city": "Paris"}` && string(calls[0].Arguments) != `{"city":"Paris"}`) {
				t.Errorf("calls %+v, want get_weather({city: Paris})", calls)
			}
			if !c.call && len(calls) > 0 {
				t.Errorf("calls %+v in a plain answer", calls)
			}
		})
	}
}

// A llama file with SmolLM2's chat template and pre-tokenizer gets
// SmolLM2's ChatML format: the prompt is package chatml's render (the
// default system turn first), its markers single tokens and the caller's
// text plain text, and <|im_end|> ends the answer.
func TestSmolLM2Prompt(t *testing.T) {
	m := loadFamily(t, "smollm2-tiny-Q8_0")
	p := partsOf(t, m)
	tok, err := p.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	if pre, _ := p.File().String("tokenizer.ggml.pre"); pre != "smollm" {
		t.Errorf("pre-tokenizer %q, want smollm", pre)
	}
	msgs := chat("Hi <|im_start|>")
	ids, err := m.Format().Prompt(msgs, engine.PromptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text, spans, err := chatml.RenderSpans(msgs, chatml.Options{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := tok.EncodeMarked(text, spans); !slices.Equal(ids, want) {
		t.Errorf("prompt %v, want chatml's render %q tokenized: %v", ids, text, want)
	}
	start, _ := tok.ID(chatml.ImStart)
	end, _ := tok.ID(chatml.ImEnd)
	if n := strings.Count(text, chatml.ImStart) - 1; countID(ids, start) != n {
		t.Errorf("%d <|im_start|> tokens, want %d (the user's is text)", countID(ids, start), n)
	}
	if !m.Format().EndOfTurn(end) {
		t.Error("<|im_end|> does not end a turn")
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

// A forced call (tool_choice "required") follows each family's own syntax:
// with the grammar the model's format gives, even a random model can only
// answer with a call the format's parser reads.
func TestFamilyForcedToolCall(t *testing.T) {
	for _, name := range sessionModels {
		if noToolModels[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			m := loadFamily(t, name)
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
			var calls int
			opts := engine.GenerateOptions{MaxTokens: 300, Thinking: new(false), Tools: []json.RawMessage{weatherTool}, Constraint: con}
			for ev, err := range m.NewSession().Generate(context.Background(), chat("Weather in Paris?"), opts) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case engine.EventToolCall:
					calls++
					var args struct{ City *string }
					if ev.ToolCall.Name != "get_weather" || json.Unmarshal(ev.ToolCall.Arguments, &args) != nil || args.City == nil {
						t.Errorf("call %s(%s)", ev.ToolCall.Name, ev.ToolCall.Arguments)
					}
				case engine.EventToolError:
					t.Errorf("tool error %v on %q", ev.Err, ev.Text)
				case engine.EventDone:
					if ev.Stats.StopReason == engine.StopLength {
						t.Errorf("the forced call did not end within %d tokens", opts.MaxTokens)
					}
				}
			}
			if calls != 1 {
				t.Errorf("%d calls, want 1", calls)
			}
		})
	}
}

// scriptedFamily is an engine.Model with the family's real format over the
// tiny model's file, whose backend answers with answer and then the end of
// the turn.
func scriptedFamily(t *testing.T, model, answer string) *engine.Model {
	t.Helper()
	f, err := gguf.Open(modelPath(t, model))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	arch, _ := f.Architecture()
	fam, _ := family.Lookup(arch)
	format, err := fam.Format(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := format.Prompt(chat("Weather in Paris?"), engine.PromptOptions{Tools: []json.RawMessage{weatherTool}})
	if err != nil {
		t.Fatal(err)
	}
	b := &scripted{vocab: tok.Len(), promptLen: len(prompt), answer: tok.Encode(answer, false), end: tok.EndOfGeneration()[0]}
	m, err := engine.New(b, format, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// scripted is a backend that writes a fixed answer after the prompt: each
// row predicts the answer's next token, then the end of the turn.
type scripted struct {
	vocab, promptLen int
	answer           []int32
	end              int32
}

type scriptedCache struct{ n int }

func (c *scriptedCache) Len() int             { return c.n }
func (c *scriptedCache) MaxLen() int          { return 4096 }
func (c *scriptedCache) Truncate(n int) error { c.n = min(c.n, n); return nil }
func (c *scriptedCache) Bytes() int64         { return 0 }
func (c *scriptedCache) Close() error         { return nil }

func (b *scripted) Vocab() int                      { return b.vocab }
func (b *scripted) BatchSize() int                  { return 512 }
func (b *scripted) NewCache() (engine.Cache, error) { return &scriptedCache{}, nil }

func (b *scripted) Step(ctx context.Context, batch []engine.Seq) error {
	for _, s := range batch {
		c := s.Cache.(*scriptedCache)
		rows := len(s.Logits) / b.vocab
		for r := range rows {
			p := c.n + len(s.Tokens) - rows + r // the row of position p predicts p+1
			next := b.end
			if i := p + 1 - b.promptLen; i >= 0 && i < len(b.answer) {
				next = b.answer[i]
			}
			row := s.Logits[r*b.vocab : (r+1)*b.vocab]
			clear(row)
			row[next] = 1
		}
		c.n += len(s.Tokens)
	}
	return nil
}
