package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

// TestEmbeddingModel serves a BERT file: /v1/embeddings answers, and a
// chat request gets a 400 that says the model only embeds.
func TestEmbeddingModel(t *testing.T) {
	url := serve(t, "-model", sharedtest.Path(t, "golden-families/models/bert-tiny-F32.gguf"), "-threads", "2")
	resp, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(`{"input":"Hello world"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"object":"embedding"`) {
		t.Errorf("embeddings: %d %s", resp.StatusCode, b[:min(len(b), 300)])
	}
	resp, err = http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "embedding model") {
		t.Errorf("chat: %d %s", resp.StatusCode, b)
	}
}
