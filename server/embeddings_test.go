package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/sharedtest"
	_ "github.com/smolgo/smolgo/models/bert"
	_ "github.com/smolgo/smolgo/models/qwen3"
	"github.com/smolgo/smolgo/server"
)

// embedServer serves a golden model of ../shared/golden-families through
// engine.Open (bert-tiny-F32: mean pooling; bert-rank-tiny-F32: a
// reranker).
func embedServer(t *testing.T, name string, cfg server.Config, opts ...engine.Option) (*httptest.Server, *engine.Model) {
	t.Helper()
	m, err := engine.Open(sharedtest.Path(t, "golden-families/models/"+name+".gguf"), append([]engine.Option{engine.WithThreads(2)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := server.FromModel(m, server.ModelOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, e, cfg)
	t.Cleanup(func() { ts.Close(); m.Close() })
	return ts, m
}

// embeddingsResponse is the OpenAI answer, with the vectors in either
// encoding.
type embeddingsResponse struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func (r embeddingsResponse) vectors(t *testing.T) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, d := range r.Data {
		var v []float32
		var s string
		switch {
		case json.Unmarshal(d.Embedding, &v) == nil:
		case json.Unmarshal(d.Embedding, &s) == nil:
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(b)%4 != 0 {
				t.Fatalf("base64 embedding: %v (%d bytes)", err, len(b))
			}
			for i := 0; i < len(b); i += 4 {
				v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
			}
		default:
			t.Fatalf("embedding %s", d.Embedding)
		}
		out = append(out, v)
	}
	return out
}

func postJSON(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestEmbeddingsInputShapes: every input shape OpenAI defines, in float and
// base64, gives the engine's normalized vectors, in order, with
// usage.prompt_tokens counting the tokens.
func TestEmbeddingsInputShapes(t *testing.T) {
	ts, m := embedServer(t, "bert-tiny-F32", server.Config{}, engine.WithMatryoshka(64, 128))
	ctx := context.Background()
	texts := []string{"Hello world", "the quick brown fox jumps over the lazy dog"}
	ids, err := m.EmbedInputs(texts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.EmbedTokens(ctx, ids, engine.EmbedOptions{Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	idJSON := func(v []int32) string { b, _ := json.Marshal(v); return string(b) }
	for _, c := range []struct {
		input string
		want  []int // which of want.Vectors
	}{
		{`"Hello world"`, []int{0}},
		{`["Hello world", "the quick brown fox jumps over the lazy dog"]`, []int{0, 1}},
		{idJSON(ids[1]), []int{1}},
		{"[" + idJSON(ids[0]) + "," + idJSON(ids[1]) + "]", []int{0, 1}},
	} {
		for _, format := range []string{"", `"float"`, `"base64"`} {
			body := `{"model":"bert-tiny-F32","input":` + c.input
			if format != "" {
				body += `,"encoding_format":` + format
			}
			status, b := postJSON(t, ts.URL+"/v1/embeddings", body+"}")
			if status != 200 {
				t.Fatalf("%s: %d %s", body, status, b)
			}
			var res embeddingsResponse
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			got := res.vectors(t)
			tokens := 0
			for i, k := range c.want {
				tokens += len(ids[k])
				if res.Data[i].Index != i || res.Data[i].Object != "embedding" {
					t.Errorf("%s: item %d: index %d, object %q", body, i, res.Data[i].Index, res.Data[i].Object)
				}
				if !equalF32(got[i], want.Vectors[k]) {
					t.Errorf("%s: vector %d differs from the engine's", body, i)
				}
			}
			if res.Object != "list" || res.Model != "bert-tiny-F32" || res.Usage.PromptTokens != tokens || res.Usage.TotalTokens != tokens {
				t.Errorf("%s: %+v", body, res)
			}
		}
	}
	// Matryoshka dimensions: truncated, then normalized.
	status, b := postJSON(t, ts.URL+"/v1/embeddings", `{"input":"Hello world","dimensions":64}`)
	var res embeddingsResponse
	json.Unmarshal(b, &res)
	if status != 200 || len(res.vectors(t)[0]) != 64 || math.Abs(norm32(res.vectors(t)[0])-1) > 1e-5 {
		t.Errorf("dimensions 64: %d %s", status, b)
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func norm32(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// TestEmbeddingsSDK embeds with the official Go client (openai-go's
// Embeddings.New) in every input shape.
func TestEmbeddingsSDK(t *testing.T) {
	ts, m := embedServer(t, "bert-tiny-F32", server.Config{})
	client := openaiClient(ts.URL)
	ctx := context.Background()
	ids, _ := m.EmbedInputs([]string{"Hello world"})
	tok := make([]int64, len(ids[0]))
	for i, id := range ids[0] {
		tok[i] = int64(id)
	}
	want, err := m.Embed(ctx, []string{"Hello world"}, engine.EmbedOptions{Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []openai.EmbeddingNewParamsInputUnion{
		{OfString: openai.String("Hello world")},
		{OfArrayOfStrings: []string{"Hello world", "the quick brown fox"}},
		{OfArrayOfTokens: tok},
		{OfArrayOfTokenArrays: [][]int64{tok, tok}},
	} {
		res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "bert-tiny-F32", Input: in})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) == 0 || res.Usage.PromptTokens < int64(len(tok)) || res.Model != "bert-tiny-F32" {
			t.Fatalf("%+v", res)
		}
		got := res.Data[0].Embedding
		if len(got) != 256 {
			t.Fatalf("%d values", len(got))
		}
		for i := range got {
			if float32(got[i]) != want.Vectors[0][i] {
				t.Fatalf("value %d: %v, the engine's %v", i, got[i], want.Vectors[0][i])
			}
		}
	}
	// base64: the SDK hands the string back in the raw JSON.
	res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "bert-tiny-F32", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("Hello world")},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64})
	if err != nil {
		t.Fatal(err)
	}
	var raw embeddingsResponse
	if err := json.Unmarshal([]byte(res.RawJSON()), &raw); err != nil {
		t.Fatal(err)
	}
	if !equalF32(raw.vectors(t)[0], want.Vectors[0]) {
		t.Error("base64 through the SDK differs")
	}
}

// TestEmbeddingsBadInput: every malformed request gets a 4xx naming what
// is wrong, and the server keeps serving.
func TestEmbeddingsBadInput(t *testing.T) {
	ts, _ := embedServer(t, "bert-tiny-F32", server.Config{})
	many := make([]string, 10000)
	for i := range many {
		many[i] = "x"
	}
	manyJSON, _ := json.Marshal(many)
	big := strings.Repeat("hello ", 166666) // 1 MB of text, under the 1 MiB body limit
	for _, c := range []struct {
		name, body string
		status     int
		says       string
	}{
		{"no input", `{"model":"bert-tiny-F32"}`, 400, "input is missing"},
		{"empty string", `{"input":""}`, 400, "empty string"},
		{"empty array", `{"input":[]}`, 400, "input is empty"},
		{"empty token array", `{"input":[[1,2],[]]}`, 400, "empty token array"},
		{"mixed array", `{"input":["a",1]}`, 400, "input must be"},
		{"object", `{"input":{"text":"a"}}`, 400, "input must be"},
		{"10,000 inputs", `{"input":` + string(manyJSON) + `}`, 400, "at most 2048"},
		{"1 MB string", `{"input":"` + big + `"}`, 400, "at most 65536"},
		{"body over 1 MiB", `{"input":"` + big + big + `"}`, 413, "larger than"},
		{"id out of range", `{"input":[1,2,100000]}`, 400, "outside the vocabulary"},
		{"negative id", `{"input":[1,-2]}`, 400, "not a token id"},
		{"huge id", `{"input":[1,1000000000000]}`, 400, "not a token id"},
		{"exponent", `{"input":[1,1e3]}`, 400, "input must be"},
		{"fractional id", `{"input":[1,2.5]}`, 400, "input must be"},
		{"too long", `{"input":[` + strings.Repeat("1,", 600) + `1]}`, 400, "truncate"},
		{"dimensions 0", `{"input":"a","dimensions":0}`, 400, "dimensions"},
		{"dimensions negative", `{"input":"a","dimensions":-3}`, 400, "dimensions"},
		{"dimensions too wide", `{"input":"a","dimensions":257}`, 400, "dimensions"},
		{"dimensions not trained", `{"input":"a","dimensions":128}`, 400, "Matryoshka"},
		{"encoding format", `{"input":"a","encoding_format":"hex"}`, 400, "encoding_format"},
		{"a client's default model name", `{"model":"text-embedding-3-small","input":"a"}`, 200, `"object":"embedding"`},
		{"not JSON", `{"input":`, 400, "not valid JSON"},
	} {
		status, b := postJSON(t, ts.URL+"/v1/embeddings", c.body)
		if status != c.status || !strings.Contains(string(b), c.says) {
			if len(b) > 300 {
				b = b[:300]
			}
			t.Errorf("%s: %d %s, want %d saying %q", c.name, status, b, c.status, c.says)
		}
	}
	// Truncation on request.
	status, b := postJSON(t, ts.URL+"/v1/embeddings", `{"input":[`+strings.Repeat("1,", 600)+`1],"truncate":true}`)
	var res embeddingsResponse
	json.Unmarshal(b, &res)
	if status != 200 || res.Usage.PromptTokens != 512 {
		t.Errorf("truncate: %d %s", status, b[:min(len(b), 200)])
	}
	if status, b := postJSON(t, ts.URL+"/v1/embeddings", `{"input":"still serving"}`); status != 200 {
		t.Errorf("after the bad requests: %d %s", status, b)
	}
}

// TestModelKinds: each endpoint refuses the models it cannot serve with a
// clear 400, and the chat model serves embeddings once given a pooling.
func TestModelKinds(t *testing.T) {
	enc, _ := embedServer(t, "bert-tiny-F32", server.Config{})
	rank, _ := embedServer(t, "bert-rank-tiny-F32", server.Config{})
	for _, c := range []struct {
		name, url, body string
		says            string
	}{
		{"chat to an encoder", enc.URL + "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, "embedding model"},
		{"completion to an encoder", enc.URL + "/v1/completions", `{"prompt":"hi"}`, "embedding model"},
		{"responses to an encoder", enc.URL + "/v1/responses", `{"input":"hi"}`, "embedding model"},
		{"embeddings of a reranker", rank.URL + "/v1/embeddings", `{"input":"hi"}`, "/v1/rerank"},
		{"rerank with an embedding model", enc.URL + "/v1/rerank", `{"query":"q","documents":["d"]}`, "not a reranker"},
	} {
		status, b := postJSON(t, c.url, c.body)
		if status != 400 || !strings.Contains(string(b), c.says) || !strings.Contains(string(b), "model_not_supported") {
			t.Errorf("%s: %d %s", c.name, status, b)
		}
	}
	path := sharedtest.Path(t, "golden-families/models/qwen3-tiny-F32.gguf")
	for _, pooling := range []string{"", "last"} {
		var opts []engine.Option
		if pooling != "" {
			opts = append(opts, engine.WithPooling(pooling))
		}
		m, err := engine.Open(path, append(opts, engine.WithThreads(2))...)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := server.FromModel(m, server.ModelOptions{Name: "qwen3"})
		ts := start(t, e, server.Config{})
		status, b := postJSON(t, ts.URL+"/v1/embeddings", `{"input":[1,2,3]}`)
		switch {
		case pooling == "" && (status != 400 || !strings.Contains(string(b), "no pooling")):
			t.Errorf("embeddings of a chat model: %d %s", status, b)
		case pooling != "" && status != 200:
			t.Errorf("embeddings of a chat model with pooling %s: %d %s", pooling, status, b)
		}
		ts.Close()
		m.Close()
	}
}

// TestRerank: the documents come back best first with the engine's
// scores, top_n and return_documents do what they say, documents may be
// objects with a text, and bad requests are refused.
func TestRerank(t *testing.T) {
	ts, m := embedServer(t, "bert-rank-tiny-F32", server.Config{})
	docs := []string{"the quick brown fox", "Hello world", "jumps over the lazy dog", "a b c"}
	want, err := m.Rerank(context.Background(), "quick fox", docs, engine.RerankOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Index          int                    `json:"index"`
		RelevanceScore float32                `json:"relevance_score"`
		Document       *struct{ Text string } `json:"document"`
	}
	var res struct {
		Model   string   `json:"model"`
		Object  string   `json:"object"`
		Results []result `json:"results"`
		Usage   struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
		// Cohere's (issue 39: @ai-sdk/cohere's rerank() needs id and meta).
		ID   string `json:"id"`
		Meta *struct {
			APIVersion struct {
				Version string `json:"version"`
			} `json:"api_version"`
			BilledUnits struct {
				SearchUnits int `json:"search_units"`
			} `json:"billed_units"`
		} `json:"meta"`
	}
	for _, path := range []string{"/v1/rerank", "/rerank", "/v1/reranking"} {
		status, b := postJSON(t, ts.URL+path, `{"model":"bert-rank-tiny-F32","query":"quick fox","documents":["the quick brown fox",{"text":"Hello world"},"jumps over the lazy dog","a b c"],"top_n":3,"return_documents":true}`)
		if status != 200 {
			t.Fatalf("%s: %d %s", path, status, b)
		}
		res.Results = nil
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Results) != 3 || res.Object != "list" || res.Model != "bert-rank-tiny-F32" || res.Usage.PromptTokens != want.Tokens {
			t.Fatalf("%s: %s", path, b)
		}
		if res.ID == "" || res.Meta == nil || res.Meta.APIVersion.Version != "2" || res.Meta.BilledUnits.SearchUnits != 1 {
			t.Errorf("%s: no Cohere id and meta: %s", path, b)
		}
		for i, r := range res.Results {
			if r.RelevanceScore != want.Scores[r.Index] || r.Document == nil || r.Document.Text != docs[r.Index] {
				t.Errorf("%s: result %d: %+v, want score %v", path, i, r, want.Scores[r.Index])
			}
			if i > 0 && r.RelevanceScore > res.Results[i-1].RelevanceScore {
				t.Errorf("%s: results not best first: %s", path, b)
			}
		}
	}
	status, b := postJSON(t, ts.URL+"/v1/rerank", `{"model":"rerank-english-v3.0","query":"q","documents":["a","b"]}`)
	res.Results = nil
	json.Unmarshal(b, &res)
	if status != 200 || len(res.Results) != 2 || res.Results[0].Document != nil {
		t.Errorf("defaults: %d %s", status, b)
	}
	many, _ := json.Marshal(make([]string, 3000))
	for _, c := range []struct{ name, body, says string }{
		{"no query", `{"documents":["a"]}`, "query is missing"},
		{"empty query", `{"query":"","documents":["a"]}`, "query is empty"},
		{"no documents", `{"query":"q"}`, "documents is missing"},
		{"empty document", `{"query":"q","documents":["a",""]}`, "document 1 is empty"},
		{"bad document", `{"query":"q","documents":[3]}`, "neither a string"},
		{"top_n 0", `{"query":"q","documents":["a"],"top_n":0}`, "top_n"},
		{"too many", `{"query":"q","documents":` + string(many) + `}`, "at most 2048"},
		{"too long", `{"query":"` + strings.Repeat("a ", 600) + `","documents":["a"]}`, "truncate"},
	} {
		status, b := postJSON(t, ts.URL+"/v1/rerank", c.body)
		if status != 400 || !strings.Contains(string(b), c.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.name, status, b[:min(len(b), 300)], c.says)
		}
	}
}

// TestEmbeddingsConcurrent: requests from many clients at once get their
// own vectors, batched together by the engine.
func TestEmbeddingsConcurrent(t *testing.T) {
	ts, m := embedServer(t, "bert-tiny-F32", server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make(chan error, 8)
	for c := range 8 {
		go func() {
			text := fmt.Sprintf("client %d says hello %s", c, strings.Repeat("again ", c))
			want, err := m.Embed(ctx, []string{text}, engine.EmbedOptions{Normalize: true})
			if err != nil {
				errs <- err
				return
			}
			body, _ := json.Marshal(map[string]any{"input": []string{text, text}})
			resp, err := http.Post(ts.URL+"/v1/embeddings", "application/json", bytes.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var res embeddingsResponse
			if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
				errs <- err
				return
			}
			if len(res.Data) != 2 {
				errs <- fmt.Errorf("client %d: %d items", c, len(res.Data))
				return
			}
			var v []float32
			json.Unmarshal(res.Data[1].Embedding, &v)
			if !equalF32(v, want.Vectors[0]) {
				errs <- fmt.Errorf("client %d: another vector", c)
				return
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestOpenAINodeEmbeddings runs e2e/embeddings.mjs: the official openai npm
// client's embeddings.create, which asks for base64 unless told otherwise,
// in float and base64, against the vectors the engine gives.
func TestOpenAINodeEmbeddings(t *testing.T) {
	node := needE2E(t, false)
	ts, m := embedServer(t, "bert-tiny-F32", server.Config{})
	want, err := m.Embed(context.Background(), []string{"Hello world", "the quick brown fox"}, engine.EmbedOptions{Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want.Vectors)
	out := runNode(t, node, "embeddings.mjs", time.Minute, "SMOLGO_URL="+ts.URL, "WANT="+string(wantJSON))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res struct {
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || !res.OK {
		t.Fatalf("embeddings.mjs output: %s", out)
	}
	t.Logf("openai npm client: %s", lines[len(lines)-1])
}

// spyEmbedder wraps a real engine, counting the documents it is asked to
// build rerank inputs of and holding the first EmbedTokens until hold is
// closed (nil: not at all).
type spyEmbedder struct {
	server.Engine
	em      server.Embedder
	docs    atomic.Int64
	calls   atomic.Int64
	started chan struct{}
	hold    chan struct{}
}

func (s *spyEmbedder) EmbedInfo() engine.EmbedInfo { return s.em.EmbedInfo() }
func (s *spyEmbedder) EmbedInputs(texts []string) ([][]int32, error) {
	return s.em.EmbedInputs(texts)
}
func (s *spyEmbedder) RerankInputs(q string, docs []string, max int) ([][]int32, error) {
	s.docs.Add(int64(len(docs)))
	return s.em.RerankInputs(q, docs, max)
}
func (s *spyEmbedder) EmbedTokens(ctx context.Context, in [][]int32, opts engine.EmbedOptions) (engine.Embeddings, error) {
	if s.hold != nil && s.calls.Add(1) == 1 {
		s.started <- struct{}{}
		<-s.hold
	}
	return s.em.EmbedTokens(ctx, in, opts)
}

func spyServer(t *testing.T, name string, cfg server.Config) (*httptest.Server, *spyEmbedder) {
	t.Helper()
	m, err := engine.Open(sharedtest.Path(t, "golden-families/models/"+name+".gguf"), engine.WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	e, err := server.FromModel(m, server.ModelOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	spy := &spyEmbedder{Engine: e, em: e.(server.Embedder)}
	ts := start(t, spy, cfg)
	t.Cleanup(func() { ts.Close(); m.Close() })
	return ts, spy
}

// Issue 39's amplification: a 410 KB body (a 400 KB query, 2,048
// one-letter documents) tokenized the query once per document, 614 M
// tokens, before the token limit was checked. Now the bytes the inputs
// would take are bounded before anything is tokenized, and the tokens as
// the inputs are built.
func TestRerankAmplification(t *testing.T) {
	ts, spy := spyServer(t, "bert-rank-tiny-F32", server.Config{})
	docs, _ := json.Marshal(slices.Repeat([]string{"x"}, 2048))
	body := `{"query":"` + strings.Repeat("a ", 200_000) + `","documents":` + string(docs) + `}`
	status, b := postJSON(t, ts.URL+"/v1/rerank", body)
	if status != 400 || !strings.Contains(string(b), "bytes") || !strings.Contains(string(b), "context_length_exceeded") {
		t.Errorf("%d %.300s, want 400 context_length_exceeded about bytes", status, b)
	}
	if n := spy.docs.Load(); n != 0 {
		t.Errorf("%d documents tokenized before the refusal", n)
	}
	// Under the byte bound, over the token bound: refused once the inputs
	// pass it.
	ts2, spy2 := spyServer(t, "bert-rank-tiny-F32", server.Config{Embed: server.EmbedLimits{MaxTokens: 1000}})
	docs, _ = json.Marshal(slices.Repeat([]string{"a b c"}, 100))
	status, b = postJSON(t, ts2.URL+"/v1/rerank", `{"query":"`+strings.Repeat("a ", 40)+`","documents":`+string(docs)+`}`)
	if status != 400 || !strings.Contains(string(b), "more than 1000 tokens") {
		t.Errorf("%d %.300s, want 400 about 1000 tokens", status, b)
	}
	if spy2.docs.Load() != 100 {
		t.Errorf("RerankInputs saw %d documents, want 100", spy2.docs.Load())
	}
	status, b = postJSON(t, ts.URL+"/v1/embeddings", `{"input":"x"}`)
	if status != 400 || !strings.Contains(string(b), "reranker") {
		t.Errorf("embeddings of a reranker: %d %s", status, b)
	}
}

// Embedding and rerank requests take a place in the queue like
// generations: with one slot and no queue, a second request while the
// first computes gets 503 queue_full.
func TestEmbedTakesASlot(t *testing.T) {
	for _, c := range []struct{ model, path, body string }{
		{"bert-rank-tiny-F32", "/v1/rerank", `{"query":"q","documents":["a","b"]}`},
		{"bert-tiny-F32", "/v1/embeddings", `{"input":"hello"}`},
	} {
		t.Run(c.path, func(t *testing.T) {
			ts, spy := spyServer(t, c.model, server.Config{Slots: 1, MaxQueue: -1})
			spy.started, spy.hold = make(chan struct{}, 1), make(chan struct{})
			first := make(chan int, 1)
			go func() {
				status, _ := postJSON(t, ts.URL+c.path, c.body)
				first <- status
			}()
			<-spy.started
			status, b := postJSON(t, ts.URL+c.path, c.body)
			if status != 503 || !strings.Contains(string(b), "queue_full") {
				t.Errorf("second request: %d %s, want 503 queue_full", status, b)
			}
			close(spy.hold)
			if s := <-first; s != 200 {
				t.Errorf("first request: %d", s)
			}
		})
	}
}
