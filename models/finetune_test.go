package models_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/grammar"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

// fineTune writes the tiny model of a synth preset carrying another chat
// template (llama.cpp's models/templates/NAME.jinja), as a fine-tune's file
// does, and loads it (with opts after two threads).
func fineTune(t *testing.T, preset, template string, opts ...engine.Option) *engine.Model {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(sharedtest.LlamaCpp(t), "models", "templates", template+".jinja"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	m.ChatTemplate = string(src)
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Mix: "Q8_0", Workers: 2}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), preset+".gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fm, err := engine.Open(path, append([]engine.Option{engine.WithThreads(2)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fm.Close() })
	return fm
}

// events runs one generation and returns its events by kind.
func events(t *testing.T, m *engine.Model, msgs []engine.Message, opts engine.GenerateOptions) map[engine.EventKind][]engine.Event {
	t.Helper()
	out := map[engine.EventKind][]engine.Event{}
	for ev, err := range m.NewSession().Generate(context.Background(), msgs, opts) {
		if err != nil {
			t.Fatal(err)
		}
		out[ev.Kind] = append(out[ev.Kind], ev)
	}
	return out
}

// Hermes 3 is a Llama 3.1 fine-tune with a ChatML template and Hermes tool
// calls: on a `llama` file, its own template renders the prompt (not Llama
// 3.2's), and the model chats and calls tools in the Hermes syntax.
func TestFineTuneHermes3OnLlama(t *testing.T) {
	m := fineTune(t, "llama32-tiny", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use")
	f := m.Format().(*family.Format)
	if tm := f.Spec().Template; tm == nil || tm.Syntax == nil || tm.Syntax.Name != "Hermes" {
		t.Fatalf("markers %+v, want the template's, with Hermes tool calls", tm)
	}
	text, err := f.PromptText([]engine.Message{{Role: "user", Content: "Hi"}}, engine.PromptOptions{Tools: []json.RawMessage{weatherTool}})
	if err != nil || !strings.Contains(text, "<tools>") || !strings.HasSuffix(text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") {
		t.Fatalf("prompt %q, %v; want Hermes 3's tool prompt and ChatML turns", text, err)
	}
	// It chats.
	evs := events(t, m, chat("Hi"), engine.GenerateOptions{MaxTokens: 8})
	if len(evs[engine.EventContent]) == 0 || len(evs[engine.EventDone]) != 1 {
		t.Errorf("chat: %d content events, want some", len(evs[engine.EventContent]))
	}
	// It calls tools: a forced call in its syntax, read by its parser.
	g, err := m.ToolCallGrammar(context.Background(), []grammar.Function{{Name: "get_weather",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}`)}}, grammar.ToolCallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	con, err := m.NewConstraint(g)
	if err != nil {
		t.Fatal(err)
	}
	evs = events(t, m, chat("Weather in Paris?"), engine.GenerateOptions{MaxTokens: 300, Tools: []json.RawMessage{weatherTool}, Constraint: con})
	if calls := evs[engine.EventToolCall]; len(calls) != 1 || calls[0].ToolCall.Name != "get_weather" || len(evs[engine.EventToolError]) > 0 {
		t.Errorf("forced call: %d calls, %d errors; want one call of get_weather", len(calls), len(evs[engine.EventToolError]))
	}
	// The call and its result go back into the next prompt as Hermes 3 writes them.
	history := []engine.Message{{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "call_0", Name: "get_weather"}}
	text, err = f.PromptText(history, engine.PromptOptions{Tools: []json.RawMessage{weatherTool}})
	if err != nil || !strings.Contains(text, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>") ||
		!strings.Contains(text, "<tool_response>\n{\"temp\": 21}\n</tool_response>") {
		t.Errorf("history prompt %q, %v", text, err)
	}
}

// DeepSeek-R1-Distill-Qwen is a Qwen2.5 fine-tune that reasons in <think>
// (its generation prompt opens the block) and calls tools in DeepSeek's
// syntax: on a `qwen2` file, its template renders the prompt, the answer
// is reasoning until </think>, and its calls are read.
func TestFineTuneDeepSeekR1OnQwen2(t *testing.T) {
	m := fineTune(t, "qwen2-tiny", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")
	f := m.Format().(*family.Format)
	tm := f.Spec().Template
	if tm == nil || tm.Syntax == nil || tm.Syntax.Name != "DeepSeek" || tm.ReasoningOpen != "<think>" || !tm.StartsInReasoning[1] {
		t.Fatalf("markers %+v, want DeepSeek calls and <think> opened by the generation prompt", tm)
	}
	on := true
	text, err := f.PromptText(chat("Hi"), engine.PromptOptions{Thinking: &on})
	if err != nil || !strings.HasSuffix(text, "<｜User｜>Hi<｜Assistant｜><think>\n") {
		t.Fatalf("prompt %q, %v", text, err)
	}
	// It reasons: with thinking on, what it writes is reasoning until it
	// closes the block (a random model never does).
	evs := events(t, m, chat("Hi"), engine.GenerateOptions{MaxTokens: 8, Thinking: &on})
	if len(evs[engine.EventReasoning]) == 0 || len(evs[engine.EventContent]) != 0 {
		t.Errorf("thinking on: %d reasoning and %d content events; want reasoning only", len(evs[engine.EventReasoning]), len(evs[engine.EventContent]))
	}
	// Its answer's reasoning and calls are split out as the format reads them.
	p := f.NewParser(engine.ParserOptions{Tools: true, Thinking: &on})
	var got []engine.Event
	for _, piece := range []string{"The user wants", " the weather.</think>\n\nLet me check.", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"} {
		got = append(got, p.Push(-1, piece)...)
	}
	got = append(got, p.Flush()...)
	var reasoning, content string
	var calls []*engine.ToolCall
	for _, ev := range got {
		switch ev.Kind {
		case engine.EventReasoning:
			reasoning += ev.Text
		case engine.EventContent:
			content += ev.Text
		case engine.EventToolCall:
			calls = append(calls, ev.ToolCall)
		}
	}
	if reasoning != "The user wants the weather." || content != "Let me check." || len(calls) != 1 || calls[0].Name != "get_weather" || string(calls[0].Arguments) != `{"city": "Paris"}` {
		t.Errorf("parsed reasoning %q, content %q, calls %v", reasoning, content, calls)
	}
	// A forced call is refused with a reason (its markers are special tokens).
	if _, err := m.ToolCallGrammar(context.Background(), []grammar.Function{{Name: "get_weather"}}, grammar.ToolCallOptions{}); err == nil {
		t.Error("a forced DeepSeek call compiled; want the error saying why not")
	}
}

// forcedCalls runs a generation in session s forced to call funcs
// (tool_choice required) and returns its calls, failing on any malformed
// one.
func forcedCalls(t *testing.T, m *engine.Model, s *engine.Session, msgs []engine.Message, funcs []grammar.Function, opts grammar.ToolCallOptions) []*engine.ToolCall {
	t.Helper()
	g, err := m.ToolCallGrammar(context.Background(), funcs, opts)
	if err != nil {
		t.Fatal(err)
	}
	con, err := m.NewConstraint(g)
	if err != nil {
		t.Fatal(err)
	}
	evs := map[engine.EventKind][]engine.Event{}
	for ev, err := range s.Generate(context.Background(), msgs, engine.GenerateOptions{MaxTokens: 300, Tools: []json.RawMessage{weatherTool}, Constraint: con}) {
		if err != nil {
			t.Fatal(err)
		}
		evs[ev.Kind] = append(evs[ev.Kind], ev)
	}
	for _, e := range evs[engine.EventToolError] {
		t.Errorf("malformed call %q: %v", e.Text, e.Err)
	}
	var calls []*engine.ToolCall
	for _, e := range evs[engine.EventToolCall] {
		calls = append(calls, e.ToolCall)
	}
	return calls
}

// checkWeatherCalls checks that calls are n calls of get_weather, with a
// city of at most 12 characters (the schema's) and the engine's ids.
func checkWeatherCalls(t *testing.T, calls []*engine.ToolCall, n int) {
	t.Helper()
	if len(calls) != n {
		t.Fatalf("%d calls, want %d", len(calls), n)
	}
	for i, c := range calls {
		var args struct {
			City *string `json:"city"`
		}
		if c.Name != "get_weather" || json.Unmarshal(c.Arguments, &args) != nil || args.City == nil || len([]rune(*args.City)) > 12 || c.ID != fmt.Sprintf("call_%d", i) {
			t.Errorf("call %d: %+v (arguments %s); want get_weather with a city, id call_%d", i, c, c.Arguments, i)
		}
	}
}

var weatherFunc = grammar.Function{Name: "get_weather",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}`)}

// functionary medium v3.2 is a Llama 3.1 fine-tune whose answers are
// messages to recipients (">>>all" for the user, ">>>get_weather" for a
// call): on a `llama` file its template renders the prompt, a forced call
// is written in its syntax and read back, and the call goes into the next
// prompt with its arguments as the JSON string the template wants.
func TestFineTuneFunctionaryV32OnLlama(t *testing.T) {
	m := fineTune(t, "llama32-tiny", "meetkai-functionary-medium-v3.2")
	f := m.Format().(*family.Format)
	if tm := f.Spec().Template; tm == nil || tm.Syntax == nil || tm.Syntax.Name != "functionary v3.2" || !tm.StringArguments {
		t.Fatalf("markers %+v, want functionary v3.2 calls with string arguments", tm)
	}
	text, err := f.PromptText(chat("Weather in Paris?"), engine.PromptOptions{Tools: []json.RawMessage{weatherTool}})
	if err != nil || !strings.Contains(text, "type get_weather = (_: {") || !strings.HasSuffix(text, "<|start_header_id|>assistant<|end_header_id|>\n\n>>>") {
		t.Fatalf("prompt %q, %v; want the tools as TypeScript and the generation prompt ending with >>>", text, err)
	}
	s := m.NewSession()
	checkWeatherCalls(t, forcedCalls(t, m, s, chat("Weather in Paris?"), []grammar.Function{weatherFunc}, grammar.ToolCallOptions{}), 1)
	// Parallel calls: one or more, separated by >>>; each read.
	if calls := forcedCalls(t, m, s, chat("Weather in Paris and Rome?"), []grammar.Function{weatherFunc}, grammar.ToolCallOptions{Parallel: true}); len(calls) > 0 {
		checkWeatherCalls(t, calls, len(calls))
	} else {
		t.Error("parallel forced calls: none")
	}
	// Text and calls in one answer, split across tokens anywhere.
	answer := "all\nLet me check.>>>get_weather\n{\"city\": \"Paris\"}>>>get_weather\n{\"city\": \"Rome\"}"
	for _, step := range []int{1, 4, len(answer)} {
		content, calls := parseAnswer(f, answer, step, nil)
		if content != "Let me check." || len(calls) != 2 || string(calls[0].Arguments) != `{"city": "Paris"}` || string(calls[1].Arguments) != `{"city": "Rome"}` {
			t.Errorf("pieces of %d: content %q, calls %v", step, content, calls)
		}
	}
	// Without tools, the answer's recipient line is no part of its text.
	p := f.NewParser(engine.ParserOptions{})
	var content string
	for _, piece := range []string{"al", "l\nHel", "lo.>>>get_time\n{}"} {
		for _, ev := range p.Push(-1, piece) {
			content += ev.Text
		}
	}
	for _, ev := range p.Flush() {
		content += ev.Text
	}
	if content != "Hello.>>>get_time\n{}" {
		t.Errorf("without tools: content %q", content)
	}
	history := []engine.Message{{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "call_0", Name: "get_weather"}}
	text, err = f.PromptText(history, engine.PromptOptions{Tools: []json.RawMessage{weatherTool}})
	if err != nil || !strings.Contains(text, "<|start_header_id|>assistant<|end_header_id|>\n\n>>>get_weather\n{\"city\": \"Paris\"}<|eot_id|>") {
		t.Errorf("history prompt %q, %v", text, err)
	}
}

// Command R7B writes its calls as a JSON list between <|START_ACTION|>
// and <|END_ACTION|>, after reasoning in <|START_THINKING|>: with its
// template on a `qwen2` file, forced calls (one, or several in parallel)
// are written in that syntax and read back, and an answer's reasoning and
// calls are split out.
func TestFineTuneCommandR7BOnQwen2(t *testing.T) {
	m := fineTune(t, "qwen2-tiny", "CohereForAI-c4ai-command-r7b-12-2024-tool_use", engine.WithContext(8192)) // its system preamble is long
	f := m.Format().(*family.Format)
	tm := f.Spec().Template
	if tm == nil || tm.Syntax == nil || tm.Syntax.Name != "Command R7B" || tm.ReasoningOpen != "<|START_THINKING|>" {
		t.Fatalf("markers %+v, want Command R7B calls and <|START_THINKING|> reasoning", tm)
	}
	text, err := f.PromptText(chat("Weather in Paris?"), engine.PromptOptions{Tools: []json.RawMessage{weatherTool}})
	if err != nil || !strings.Contains(text, `{"name": "get_weather", "description": "Weather in a city", "parameters": {"type":`) ||
		!strings.HasSuffix(text, "<|USER_TOKEN|>Weather in Paris?<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|><|END_THINKING|>") {
		t.Fatalf("prompt %q, %v; want the tools listed and the reasoning closed", text, err)
	}
	// Its prompt is 4,455 tokens on this vocabulary (the system preamble
	// is long): one session, so that the second prompt reuses the first's
	// cache.
	s := m.NewSession()
	checkWeatherCalls(t, forcedCalls(t, m, s, chat("Weather in Paris?"), []grammar.Function{weatherFunc}, grammar.ToolCallOptions{}), 1)
	if calls := forcedCalls(t, m, s, chat("Weather in Paris and Rome?"), []grammar.Function{weatherFunc}, grammar.ToolCallOptions{Parallel: true}); len(calls) > 0 {
		checkWeatherCalls(t, calls, len(calls))
	} else {
		t.Error("parallel forced calls: none")
	}
	on := true
	answer := "<|START_THINKING|>The user wants the weather.<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}},\n    {\"tool_call_id\": \"1\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}\n]<|END_ACTION|>"
	for _, step := range []int{1, 5, len(answer)} {
		content, calls := parseAnswer(f, answer, step, &on)
		if content != "" || len(calls) != 2 || string(calls[0].Arguments) != `{"city":"Paris"}` || string(calls[1].Arguments) != `{"city":"Rome"}` {
			t.Errorf("pieces of %d: content %q, calls %v", step, content, calls)
		}
	}
	// The calls go back into the next prompt as the template writes them.
	history := []engine.Message{{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "call_0", Name: "get_weather"}}
	text, err = f.PromptText(history, engine.PromptOptions{Tools: []json.RawMessage{weatherTool}})
	if err != nil || !strings.Contains(text, `<|START_ACTION|>[`+"\n    "+`{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}`) {
		t.Errorf("history prompt %q, %v", text, err)
	}
}

// parseAnswer feeds answer to the format's parser (with tools) in pieces
// of step bytes and returns the content and the calls; reasoning is left
// out.
func parseAnswer(f *family.Format, answer string, step int, thinking *bool) (string, []*engine.ToolCall) {
	p := f.NewParser(engine.ParserOptions{Tools: true, Thinking: thinking})
	var evs []engine.Event
	for i := 0; i < len(answer); i += step {
		evs = append(evs, p.Push(-1, answer[i:min(len(answer), i+step)])...)
	}
	var content string
	var calls []*engine.ToolCall
	for _, ev := range append(evs, p.Flush()...) {
		switch ev.Kind {
		case engine.EventContent:
			content += ev.Text
		case engine.EventToolCall:
			calls = append(calls, ev.ToolCall)
		}
	}
	return content, calls
}
