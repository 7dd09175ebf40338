package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/sample"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

func anthropicClient(url string) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("unused"), aoption.WithMaxRetries(0))
}

// recordingEngine is the fake echo engine, sending each conversation it
// is given on the channel.
func recordingEngine() (*servertest.Engine, chan []engine.Message) {
	msgs := make(chan []engine.Message, 8)
	return &servertest.Engine{Reply: func(m []engine.Message) (string, string) {
		msgs <- m
		return servertest.Echo(m)
	}}, msgs
}

func userText(s string) []anthropic.MessageParam {
	return []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(s))}
}

func blockTypes(m *anthropic.Message) string {
	var t []string
	for _, b := range m.Content {
		t = append(t, b.Type)
	}
	return strings.Join(t, ",")
}

func TestMessagesSDK(t *testing.T) {
	e, msgs := recordingEngine()
	ts := start(t, e, server.Config{})
	client := anthropicClient(ts.URL)
	ctx := context.Background()

	// Without thinking (Anthropic's default) the answer is one text block.
	res, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: anthropic.Model(e.ModelName()), MaxTokens: 100,
		System:   []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages: userText("hello there"),
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := <-msgs
	if seen[0].Role != "system" || seen[0].Content != "Be brief." {
		t.Errorf("system prompt not passed: %+v", seen)
	}
	if blockTypes(res) != "text" || res.Content[0].Text != "You said: hello there" || res.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("answer %s %q, stop %q", blockTypes(res), res.Content[0].Text, res.StopReason)
	}
	if res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 {
		t.Errorf("usage %+v", res.Usage)
	}

	// Thinking, max_tokens.
	res, err = client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: anthropic.Model(e.ModelName()), MaxTokens: 3,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Messages: userText("count 50"),
	})
	if err != nil {
		t.Fatal(err)
	}
	<-msgs
	if blockTypes(res) != "thinking" || res.StopReason != anthropic.StopReasonMaxTokens {
		t.Errorf("with thinking and 3 tokens: blocks %s, stop %q", blockTypes(res), res.StopReason)
	}

	// Stop sequences end the text.
	res, err = client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: anthropic.Model(e.ModelName()), MaxTokens: 100,
		Messages: userText("count 9"), StopSequences: []string{" 5"},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-msgs
	if res.Content[0].Text != "1 2 3 4" || res.StopReason != anthropic.StopReasonStopSequence || res.StopSequence != " 5" {
		t.Errorf("stop sequence: %q, stop reason %q, sequence %q", res.Content[0].Text, res.StopReason, res.StopSequence)
	}

	// Any model name is served (Claude Code sends its default), and the
	// answer names the served model.
	res, err = client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: anthropic.Model("claude-sonnet-4-5"), MaxTokens: 10, Messages: userText("x"),
	})
	if err != nil || string(res.Model) != e.ModelName() {
		t.Fatalf("another model name: %v, %+v", err, res)
	}

	// Errors have Anthropic's shape, which the SDK reads.
	_, err = client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: anthropic.Model("x"), MaxTokens: 0, Messages: userText("x"),
	})
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != http.StatusBadRequest {
		t.Fatalf("max_tokens 0: %v", err)
	}
	var body struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if json.Unmarshal([]byte(aerr.RawJSON()), &body); body.Type != "error" || body.Error.Type != "invalid_request_error" || !strings.Contains(body.Error.Message, "max_tokens") {
		t.Errorf("error body %s", aerr.RawJSON())
	}
}

func TestMessagesStreaming(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	client := anthropicClient(ts.URL)
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: anthropic.Model(e.ModelName()), MaxTokens: 200,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Messages: userText("one two three"),
	})
	var msg anthropic.Message
	var events []string
	for stream.Next() {
		ev := stream.Current()
		if len(events) == 0 || events[len(events)-1] != ev.Type {
			events = append(events, ev.Type)
		}
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := "message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	if blockTypes(&msg) != "thinking,text" || msg.Content[1].Text != "You said: one two three" ||
		!strings.HasPrefix(msg.Content[0].Thinking, "The user wrote 3 words") || msg.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("accumulated %s: %+v, stop %q", blockTypes(&msg), msg.Content, msg.StopReason)
	}
	if msg.Usage.OutputTokens == 0 {
		t.Errorf("usage %+v", msg.Usage)
	}
}

// TestMessagesToolUseRoundTrip: tool_use comes back as a block with
// stop_reason tool_use, streamed or not; the tool_result goes back to the
// model as a tool message tied by id.
func TestMessagesToolUseRoundTrip(t *testing.T) {
	e, msgs := recordingEngine()
	ts := start(t, e, server.Config{})
	client := anthropicClient(ts.URL)
	tools := []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}}}, "get_weather")}
	for _, streaming := range []bool{false, true} {
		params := anthropic.MessageNewParams{
			Model: anthropic.Model(e.ModelName()), MaxTokens: 200, Tools: tools,
			Messages: userText(`call get_weather {"city": "Paris"}`),
		}
		var res anthropic.Message
		if streaming {
			stream := client.Messages.NewStreaming(context.Background(), params)
			for stream.Next() {
				if err := res.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			r, err := client.Messages.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			res = *r
		}
		<-msgs
		if res.StopReason != anthropic.StopReasonToolUse || blockTypes(&res) != "tool_use" {
			t.Fatalf("streaming=%v: stop %q, blocks %s", streaming, res.StopReason, blockTypes(&res))
		}
		use := res.Content[0]
		if use.Name != "get_weather" || !jsonEqual(string(use.Input), `{"city": "Paris"}`) || use.ID == "" {
			t.Errorf("tool_use %+v (input %s)", use, use.Input)
		}
		history := append(params.Messages, res.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, `{"temperature": 21}`, false)))
		next, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
			Model: anthropic.Model(e.ModelName()), MaxTokens: 200, Tools: tools, Messages: history,
		})
		if err != nil {
			t.Fatal(err)
		}
		seen := <-msgs
		n := len(seen)
		if n < 3 || len(seen[n-2].ToolCalls) != 1 || seen[n-2].ToolCalls[0].ID != use.ID || seen[n-1].Role != "tool" || seen[n-1].ToolCallID != use.ID {
			t.Errorf("conversation sent to the model: %+v", seen)
		}
		if next.Content[0].Text != `The tool returned: {"temperature": 21}` {
			t.Errorf("answer after the tool: %q", next.Content[0].Text)
		}
	}
}

// TestMessagesForcedToolTinyModel: tool_choice "tool" forces a call on the
// real model, which then parses against the tool's input_schema.
func TestMessagesForcedToolTinyModel(t *testing.T) {
	sampler := sample.SmolLM3Defaults()
	sampler.Seed = 11
	ts := start(t, tinyEngine(t, 1024), server.Config{Sampler: sampler})
	client := anthropicClient(ts.URL)
	// One call (disable_parallel_tool_use): the turn ends when it is
	// complete. (With parallel calls allowed the random model may go on
	// calling until max_tokens, which is then the honest stop reason.)
	choice := anthropic.ToolChoiceParamOfTool("get_weather")
	choice.OfTool.DisableParallelToolUse = anthropic.Bool(true)
	res, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "tiny", MaxTokens: 300, Messages: userText("Weather in Paris?"),
		Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string", "maxLength": 10}}, Required: []string{"city"}}, "get_weather")},
		ToolChoice: choice,
	})
	if err != nil {
		t.Fatal(err)
	}
	var uses []anthropic.ContentBlockUnion
	for _, b := range res.Content {
		if b.Type == "tool_use" {
			uses = append(uses, b)
		}
	}
	if len(uses) == 0 {
		t.Fatalf("no tool_use block: %+v (stop %q)", res.Content, res.StopReason)
	}
	var in struct {
		City *string `json:"city"`
	}
	if err := json.Unmarshal(uses[0].Input, &in); err != nil || in.City == nil || uses[0].Name != "get_weather" {
		t.Errorf("forced call %s(%s): %v", uses[0].Name, uses[0].Input, err)
	}
	if res.StopReason != anthropic.StopReasonToolUse {
		t.Errorf("stop_reason %q, want tool_use", res.StopReason)
	}
}

func TestMessagesBadRequests(t *testing.T) {
	ts := start(t, &servertest.Engine{}, server.Config{})
	for _, tc := range []struct{ body, inMessage string }{
		{`{"messages": [{"role": "user", "content": "x"}]}`, "max_tokens is required"},
		{`{"max_tokens": 5, "messages": []}`, "messages"},
		{`{"max_tokens": 5, "messages": [{"role": "tool", "content": "x"}]}`, "messages[0].role"},
		{`{"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}`, "messages[0].content[0]"},
		{`{"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}`, "tool_use_id"},
		{`{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [{"input_schema": {}}]}`, "tools[0].name"},
		{`{"max_tokens": 5, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}]}`, "messages[0].content[0].input"},
		{`{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "tool"}}`, "tool_choice"},
		{`{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "thinking": {"type": "maybe"}}`, "thinking.type"},
		{`{"max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}`, "max_tokens"},
		{`not json`, "not valid JSON"},
	} {
		resp := post(t, ts.URL+"/v1/messages", tc.body)
		var e struct {
			Type  string `json:"type"`
			Error struct{ Type, Message string }
		}
		decode(t, resp.Body, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.inMessage) {
			t.Errorf("%s: status %d, %+v; want 400 invalid_request_error mentioning %q", tc.body, resp.StatusCode, e, tc.inMessage)
		}
	}
}
