package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

func TestResponsesSDK(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	client := openaiClient(ts.URL)
	ctx := context.Background()

	res, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model:        e.ModelName(),
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hello there")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.OutputText() != "You said: hello there" {
		t.Fatalf("status %q, output text %q", res.Status, res.OutputText())
	}
	types := []string{}
	for _, it := range res.Output {
		types = append(types, it.Type)
	}
	if !slices.Equal(types, []string{"reasoning", "message"}) {
		t.Errorf("output items %v, want reasoning then message", types)
	}
	if r := res.Output[0].AsReasoning(); len(r.Content) != 1 || !strings.HasPrefix(r.Content[0].Text, "The user wrote 2 words") {
		t.Errorf("reasoning item %+v", r)
	}
	if res.Usage.OutputTokensDetails.ReasoningTokens == 0 || res.Usage.InputTokens == 0 {
		t.Errorf("usage %+v", res.Usage)
	}

	// previous_response_id continues the stored conversation.
	next, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model:              e.ModelName(),
		PreviousResponseID: openai.String(res.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("and again")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if next.OutputText() != "You said: and again" {
		t.Errorf("follow-up said %q", next.OutputText())
	}
	got, err := client.Responses.Get(ctx, next.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != next.OutputText() {
		t.Errorf("GET of a stored response: %v, %q", err, got.OutputText())
	}
	if err := client.Responses.Delete(ctx, res.ID); err != nil {
		t.Errorf("DELETE: %v", err)
	}
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{
		Model:              e.ModelName(),
		PreviousResponseID: openai.String(res.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("gone?")},
	})
	var apiErr *openai.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "previous_response_id" {
		t.Errorf("a deleted previous response: %v, want a 400 on previous_response_id", err)
	}
}

// asError is errors.As for the SDK's error type.
func asError(err error, target **openai.Error) bool {
	e, ok := err.(*openai.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestResponsesStreaming(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	client := openaiClient(ts.URL)
	for _, tc := range []struct {
		name      string
		reasoning shared.ReasoningParam
		delta     string // the reasoning's delta event
	}{
		{"reasoning text", shared.ReasoningParam{}, "response.reasoning_text.delta"},
		{"summary", shared.ReasoningParam{Summary: shared.ReasoningSummaryAuto}, "response.reasoning_summary_text.delta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
				Model:     e.ModelName(),
				Input:     responses.ResponseNewParamsInputUnion{OfString: openai.String("one two three")},
				Reasoning: tc.reasoning,
			})
			var seen []string
			var text, reasoning strings.Builder
			var final responses.Response
			seq := int64(-1)
			for stream.Next() {
				ev := stream.Current()
				if ev.SequenceNumber != seq+1 {
					t.Errorf("event %s has sequence number %d after %d", ev.Type, ev.SequenceNumber, seq)
				}
				seq = ev.SequenceNumber
				if len(seen) == 0 || seen[len(seen)-1] != ev.Type {
					seen = append(seen, ev.Type)
				}
				switch ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case tc.delta:
					reasoning.WriteString(ev.Delta)
				case "response.completed":
					final = ev.Response
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if text.String() != "You said: one two three" || !strings.HasPrefix(reasoning.String(), "The user wrote 3 words") {
				t.Errorf("streamed text %q, reasoning %q", text.String(), reasoning.String())
			}
			if final.OutputText() != text.String() || final.Status != "completed" {
				t.Errorf("response.completed carries %q (%s)", final.OutputText(), final.Status)
			}
			if seen[0] != "response.created" || seen[1] != "response.in_progress" || seen[len(seen)-1] != "response.completed" {
				t.Errorf("events %v", seen)
			}
			for _, want := range []string{"response.output_item.added", "response.content_part.added", "response.output_text.done", "response.output_item.done"} {
				if !slices.Contains(seen, want) {
					t.Errorf("no %s event in %v", want, seen)
				}
			}
		})
	}
}

// TestResponsesFunctionToolRoundTrip: the model calls a tool, the client
// runs it and sends function_call_output after previous_response_id, and
// the model answers with the result.
func TestResponsesFunctionToolRoundTrip(t *testing.T) {
	e, mu := recordingEngine()
	ts := start(t, e, server.Config{})
	client := openaiClient(ts.URL)
	ctx := context.Background()
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
		Name:       "get_weather",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	}}}
	for _, streaming := range []bool{false, true} {
		params := responses.ResponseNewParams{
			Model: e.ModelName(),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(`call get_weather {"city": "Paris"}`)},
			Tools: tools,
		}
		var first *responses.Response
		var argDeltas strings.Builder
		if streaming {
			stream := client.Responses.NewStreaming(ctx, params)
			for stream.Next() {
				ev := stream.Current()
				switch ev.Type {
				case "response.function_call_arguments.delta":
					argDeltas.WriteString(ev.Delta)
				case "response.completed":
					first = &ev.Response
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			var err error
			if first, err = client.Responses.New(ctx, params); err != nil {
				t.Fatal(err)
			}
		}
		<-mu
		var call responses.ResponseFunctionToolCall
		for _, it := range first.Output {
			if it.Type == "function_call" {
				call = it.AsFunctionCall()
			}
		}
		if call.Name != "get_weather" || call.CallID == "" || !jsonEqual(call.Arguments, `{"city": "Paris"}`) {
			t.Fatalf("streaming=%v: function call %+v", streaming, call)
		}
		if streaming && argDeltas.String() != call.Arguments {
			t.Errorf("argument deltas %q, call arguments %q", argDeltas.String(), call.Arguments)
		}
		out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temperature": 21}`)
		out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
		second, err := client.Responses.New(ctx, responses.ResponseNewParams{
			Model:              e.ModelName(),
			PreviousResponseID: openai.String(first.ID),
			Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}},
			Tools:              tools,
		})
		if err != nil {
			t.Fatal(err)
		}
		msgs := <-mu
		if second.OutputText() != `The tool returned: {"temperature": 21}` {
			t.Errorf("answer after the tool: %q", second.OutputText())
		}
		// The model saw its own call (from the stored response) and then
		// the result, tied by the call id.
		n := len(msgs)
		if n < 3 || len(msgs[n-2].ToolCalls) != 1 || msgs[n-2].ToolCalls[0].ID != call.CallID || msgs[n-1].ToolCallID != call.CallID {
			t.Errorf("conversation sent to the model: %+v", msgs)
		}
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// TestResponsesJSONSchemaTinyModel: text.format json_schema constrains the
// real model's answer, which then parses and has the schema's shape, even
// with a small max_output_tokens.
func TestResponsesJSONSchemaTinyModel(t *testing.T) {
	ts := start(t, tinyEngine(t, 512), server.Config{})
	client := openaiClient(ts.URL)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"name": map[string]any{"type": "string", "maxLength": 8}, "age": map[string]any{"type": "integer"}},
		"required": []string{"name", "age"}, "additionalProperties": false}
	res, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "tiny",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("A person, please.")},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "person", Schema: schema}}},
		MaxOutputTokens: openai.Int(200),
		Temperature:     openai.Float(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Name *string `json:"name"`
		Age  *int    `json:"age"`
	}
	if err := json.Unmarshal([]byte(res.OutputText()), &v); err != nil || v.Name == nil || v.Age == nil {
		t.Fatalf("answer %q (%s) does not follow the schema: %v", res.OutputText(), res.Status, err)
	}

	// A schema the grammar cannot compile is a 400 naming the field.
	_, err = client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "tiny",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "bad", Schema: map[string]any{"type": "object", "not": map[string]any{}}}}},
	})
	var apiErr *openai.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Errorf("unsupported schema: %v, want 400", err)
	}
}

func TestResponsesBadRequests(t *testing.T) {
	ts := start(t, &servertest.Engine{}, server.Config{})
	for _, tc := range []struct{ body, param string }{
		{`{"input": 3}`, "input"},
		{`{"input": []}`, "input"},
		{`{"input": [{"type": "image_generation_call"}]}`, "input"}, // left out: nothing is left
		{`{"input": [{"type": "mystery", "output": "x"}, "hi"]}`, "input"},
		{`{"input": [{"type": "mystery", "output": "x"}, {"role": "user", "content": "hi"}]}`, "input[0].type"},
		{`{"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}`, "input[0].content[0].image_url"},
		{`{"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "x"}]}]}`, "input[0].content[0].type"},
		{`{"input": [{"type": "function_call_output", "output": "x"}]}`, "input[0].call_id"},
		{`{"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]}`, "input[0].arguments"},
		{`{"input": "x", "tools": [{"type": "function"}]}`, "tools[0].name"},
		{`{"input": "x", "max_output_tokens": 0}`, "max_output_tokens"},
		{`{"input": "x", "text": {"format": {"type": "json_schema"}}}`, "text.format.schema"},
		{`{"input": "x", "background": true}`, "background"},
		{`{"input": "x", "tool_choice": {"type": "file_search"}}`, "tool_choice"},
		{`{"input": "x", "reasoning": {"effort": "extreme"}}`, "reasoning.effort"},
		{`{"input": "x", "previous_response_id": "resp_nope"}`, "previous_response_id"},
		// OpenAI's bounds on metadata (issue 39: it was unvalidated).
		{`{"input": "x", "metadata": ` + metadataOf(17, 1, 1) + `}`, "metadata"},
		{`{"input": "x", "metadata": ` + metadataOf(1, 65, 1) + `}`, "metadata"},
		{`{"input": "x", "metadata": ` + metadataOf(1, 1, 513) + `}`, "metadata"},
		{`{"input": "x", "metadata": {"a": 1}}`, "metadata"},
		{`{"input": "x", "metadata": ["a"]}`, "metadata"},
	} {
		resp := post(t, ts.URL+"/v1/responses", tc.body)
		var e apiErr
		decode(t, resp.Body, &e)
		if resp.StatusCode != http.StatusBadRequest || deref(e.Error.Param) != tc.param {
			t.Errorf("%s: status %d, param %q (%s); want 400 on %q", tc.body, resp.StatusCode, deref(e.Error.Param), e.Error.Message, tc.param)
		}
	}
}

// metadataOf is a metadata object of n pairs with keys and values of the
// given lengths in characters (é: two bytes each).
func metadataOf(n, keyLen, valueLen int) string {
	m := map[string]string{}
	for i := range n {
		k := fmt.Sprintf("%0*d", keyLen, i)
		m[k] = strings.Repeat("é", valueLen)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Metadata within OpenAI's bounds is accepted and echoed.
func TestResponsesMetadata(t *testing.T) {
	ts := start(t, &servertest.Engine{}, server.Config{})
	resp := post(t, ts.URL+"/v1/responses", `{"input": "x", "metadata": `+metadataOf(16, 64, 512)+`}`)
	var r struct {
		Metadata map[string]string `json:"metadata"`
	}
	decode(t, resp.Body, &r)
	if resp.StatusCode != 200 || len(r.Metadata) != 16 {
		t.Errorf("status %d, %d metadata pairs back", resp.StatusCode, len(r.Metadata))
	}
}
