package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/server/servertest"
)

// A server is an http.Handler. Here it serves the fake echo engine; a real
// program passes server.FromSmolLM3(model, ...) and calls ListenAndServe.
func Example() {
	srv := server.New(&servertest.Engine{}, server.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv)
	defer ts.Close()

	body := `{"messages":[{"role":"user","content":"Hello"}],"chat_template_kwargs":{"enable_thinking":true}}`
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	fmt.Println("reasoning:", out.Choices[0].Message.ReasoningContent)
	fmt.Println("answer:", out.Choices[0].Message.Content)
	fmt.Println("finish:", out.Choices[0].FinishReason)
	// Output:
	// reasoning: The user wrote 1 words. I will echo them back.
	// answer: You said: Hello
	// finish: stop
}

// With "stream": true the answer arrives as Server-Sent Events: one
// chat.completion.chunk per token, then "data: [DONE]".
func Example_streaming() {
	ts := httptest.NewServer(server.New(&servertest.Engine{}, server.Config{Logger: slog.New(slog.DiscardHandler)}))
	defer ts.Close()

	body := `{"stream":true,"messages":[{"role":"user","content":"count 3"}],"chat_template_kwargs":{"enable_thinking":false}}`
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue // the blank line after each event
		}
		if data == "[DONE]" {
			fmt.Println("[DONE]")
			break
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		json.Unmarshal([]byte(data), &c)
		switch ch := c.Choices[0]; {
		case ch.FinishReason != nil:
			fmt.Println("finish:", *ch.FinishReason)
		case ch.Delta.Content != nil:
			fmt.Printf("delta: %q\n", *ch.Delta.Content)
		}
	}
	// Output:
	// delta: "1 "
	// delta: "2 "
	// delta: "3"
	// finish: stop
	// [DONE]
}
