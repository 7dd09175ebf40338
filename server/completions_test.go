package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// openaiClient is the official OpenAI Go SDK pointed at ts.
func openaiClient(ts string) openai.Client {
	return openai.NewClient(option.WithBaseURL(ts+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

func TestCompletionsSDK(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	client := openaiClient(ts.URL)
	ctx := context.Background()

	res, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model:  openai.CompletionNewParamsModel(e.ModelName()),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Object != "text_completion" || len(res.Choices) != 1 {
		t.Fatalf("object %q with %d choices", res.Object, len(res.Choices))
	}
	// The fake answers a raw prompt as one user message, with no
	// template and no reasoning.
	if got, want := res.Choices[0].Text, "You said: Once upon a time"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if res.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason %q", res.Choices[0].FinishReason)
	}
	// 4 pieces of prompt; "You said: Once upon a time" is 6 pieces, and
	// the end of turn one more token.
	if res.Usage.PromptTokens != 4 || res.Usage.CompletionTokens != 7 {
		t.Errorf("usage %+v: want 4 prompt tokens (no template) and 7 generated", res.Usage)
	}

	// Streaming, with max_tokens cutting it short and usage at the end.
	stream := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model:         openai.CompletionNewParamsModel(e.ModelName()),
		Prompt:        openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{"count 10"}},
		MaxTokens:     openai.Int(4),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	finish := ""
	usage := int64(-1)
	for stream.Next() {
		c := stream.Current()
		if c.Object != "text_completion" {
			t.Errorf("chunk object %q", c.Object)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
		if c.Usage.TotalTokens > 0 {
			usage = c.Usage.CompletionTokens
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "1 2 3 4 " || finish != "length" || usage != 4 {
		t.Errorf("streamed %q, finish %q, completion tokens %d; want \"1 2 3 4 \", length, 4", text.String(), finish, usage)
	}

	// A prompt of token ids, as /tokenize gives them.
	ids, err := e.Tokenize("count 3", false)
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]int64, len(ids))
	for i, id := range ids {
		tokens[i] = int64(id)
	}
	res, err = client.Completions.New(ctx, openai.CompletionNewParams{
		Model:  openai.CompletionNewParamsModel(e.ModelName()),
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: tokens},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Text != "1 2 3" {
		t.Errorf("token prompt answered %q, want \"1 2 3\"", res.Choices[0].Text)
	}

	// Bad requests name the field.
	for _, tc := range []struct{ body, param string }{
		{`{"prompt": ["a", "b"]}`, "prompt"},
		{`{"prompt": 3}`, "prompt"},
		{`{"prompt": [999999]}`, "prompt"},
		{`{"prompt": "hi", "echo": true}`, "echo"},
		{`{"prompt": "hi", "logprobs": 9}`, "logprobs"},
		{`{"prompt": "hi", "temperature": 5}`, "temperature"},
		{`{}`, "prompt"},
	} {
		resp := post(t, ts.URL+"/v1/completions", tc.body)
		var e apiErr
		decode(t, resp.Body, &e)
		if resp.StatusCode != http.StatusBadRequest || deref(e.Error.Param) != tc.param {
			t.Errorf("%s: status %d, param %q (%s); want 400 on %q", tc.body, resp.StatusCode, deref(e.Error.Param), e.Error.Message, tc.param)
		}
	}
}

func TestTokenizeDetokenize(t *testing.T) {
	e := &servertest.Engine{}
	ts := start(t, e, server.Config{})
	var tok struct {
		Tokens []int32 `json:"tokens"`
	}
	decode(t, post(t, ts.URL+"/tokenize", `{"content": "hello big world", "add_special": true}`).Body, &tok)
	if len(tok.Tokens) != 3 {
		t.Fatalf("tokens %v, want 3", tok.Tokens)
	}
	var pieces struct {
		Tokens []struct {
			ID    int32  `json:"id"`
			Piece string `json:"piece"`
		} `json:"tokens"`
	}
	decode(t, post(t, ts.URL+"/tokenize", `{"content": "hello big world", "with_pieces": true}`).Body, &pieces)
	if len(pieces.Tokens) != 3 || pieces.Tokens[1].Piece != "big " || pieces.Tokens[1].ID != tok.Tokens[1] {
		t.Errorf("pieces %+v", pieces.Tokens)
	}
	body, _ := json.Marshal(map[string]any{"tokens": tok.Tokens})
	var detok struct {
		Content string `json:"content"`
	}
	decode(t, post(t, ts.URL+"/detokenize", string(body)).Body, &detok)
	if detok.Content != "hello big world" {
		t.Errorf("detokenized %q", detok.Content)
	}
	resp := post(t, ts.URL+"/detokenize", `{"tokens": [1, 424242]}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown token: status %d, want 400", resp.StatusCode)
	}
	resp = post(t, ts.URL+"/tokenize", `{"text": "no content field"}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no content: status %d, want 400", resp.StatusCode)
	}
}

// TestCompletionsTinyModel runs a plain completion and the tokenizer
// endpoints on the real (random-weight) model: the prompt's tokens come back
// from /tokenize, go through /detokenize unchanged, and a seeded completion
// of them repeats.
func TestCompletionsTinyModel(t *testing.T) {
	ts := start(t, tinyEngine(t, 256), server.Config{})
	var tok struct {
		Tokens []int64 `json:"tokens"`
	}
	decode(t, post(t, ts.URL+"/tokenize", `{"content": "The capital of France is"}`).Body, &tok)
	if len(tok.Tokens) < 3 {
		t.Fatalf("tokens %v", tok.Tokens)
	}
	body, _ := json.Marshal(map[string]any{"tokens": tok.Tokens})
	var detok struct {
		Content string `json:"content"`
	}
	decode(t, post(t, ts.URL+"/detokenize", string(body)).Body, &detok)
	if detok.Content != "The capital of France is" {
		t.Errorf("round trip gave %q", detok.Content)
	}
	client := openaiClient(ts.URL)
	complete := func() *openai.Completion {
		res, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
			Model:     "tiny",
			Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: tok.Tokens},
			MaxTokens: openai.Int(8),
			Seed:      openai.Int(7),
			Logprobs:  openai.Int(2),
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := complete(), complete()
	if a.Usage.PromptTokens != int64(len(tok.Tokens)) {
		t.Errorf("prompt tokens %d, want %d (no chat template)", a.Usage.PromptTokens, len(tok.Tokens))
	}
	if a.Choices[0].Text != b.Choices[0].Text {
		t.Errorf("seeded completions differ: %q and %q", a.Choices[0].Text, b.Choices[0].Text)
	}
	lp := a.Choices[0].Logprobs
	if n := len(lp.Tokens); n == 0 || n != len(lp.TokenLogprobs) || strings.Join(lp.Tokens, "") != a.Choices[0].Text {
		t.Errorf("logprobs tokens %q do not spell the text %q", lp.Tokens, a.Choices[0].Text)
	}
}
