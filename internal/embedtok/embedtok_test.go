package embedtok

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// bytesEnc encodes each byte as its value; with parseSpecial, "<s>" is 900.
type bytesEnc struct{}

func (bytesEnc) Encode(text string, parseSpecial bool) []int32 {
	var out []int32
	for i := 0; i < len(text); i++ {
		if parseSpecial && i+3 <= len(text) && text[i:i+3] == "<s>" {
			out = append(out, 900)
			i += 2
			continue
		}
		out = append(out, int32(text[i]))
	}
	return out
}

func fileWith(t *testing.T, kv ...gguf.KV) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	tokens := make([]string, 1000) // ids up to 999 are in the vocabulary
	for i := range tokens {
		tokens[i] = fmt.Sprint("t", i)
	}
	if err := gguf.Write(&buf, append([]gguf.KV{{Key: "general.architecture", Value: "x"}, {Key: "tokenizer.ggml.tokens", Value: tokens}}, kv...), nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestInputs: the tokens around embedding and rerank inputs for each kind
// of vocabulary, llama.cpp's defaults and the keys that override them.
func TestInputs(t *testing.T) {
	for _, c := range []struct {
		name   string
		kv     []gguf.KV
		embed  []int32
		rerank []int32
	}{
		{"bert defaults", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "bert"}},
			[]int32{101, 'a', 900, 102}, []int32{101, 'q', 102, 'd', '<', 's', '>'}},
		{"bert, its ids", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "bert"}, {Key: "tokenizer.ggml.bos_token_id", Value: uint32(2)},
			{Key: "tokenizer.ggml.seperator_token_id", Value: uint32(3)}, {Key: "tokenizer.ggml.add_bos_token", Value: false}},
			[]int32{2, 'a', 900, 3}, []int32{'q', 3, 'd', '<', 's', '>'}},
		{"gpt2 without flags", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "gpt2"}, {Key: "tokenizer.ggml.pre", Value: "qwen2"},
			{Key: "tokenizer.ggml.eos_token_id", Value: uint32(7)}},
			[]int32{'a', 900}, []int32{'q', 'd', '<', 's', '>'}},
		{"gpt2 llama-bpe adds BOS", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "gpt2"}, {Key: "tokenizer.ggml.pre", Value: "llama-bpe"},
			{Key: "tokenizer.ggml.bos_token_id", Value: uint32(5)}},
			[]int32{5, 'a', 900}, []int32{5, 'q', 'd', '<', 's', '>'}},
		{"Qwen3-Embedding: add_eos", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "gpt2"}, {Key: "tokenizer.ggml.pre", Value: "qwen2"},
			{Key: "tokenizer.ggml.eos_token_id", Value: uint32(7)}, {Key: "tokenizer.ggml.add_eos_token", Value: true}},
			[]int32{'a', 900, 7}, []int32{'q', 7, 'd', '<', 's', '>', 7}},
		// llama2.c's converter: 0xFFFFFFFF for none, kept at the default as
		// llama.cpp does, as is an id past the vocabulary.
		{"ids outside the vocabulary", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "bert"}, {Key: "tokenizer.ggml.seperator_token_id", Value: uint32(0xFFFFFFFF)},
			{Key: "tokenizer.ggml.bos_token_id", Value: uint32(1000)}},
			[]int32{101, 'a', 900, 102}, []int32{101, 'q', 102, 'd', '<', 's', '>'}},
		{"llama, separator 0xFFFFFFFF", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "llama"}, {Key: "tokenizer.ggml.seperator_token_id", Value: uint32(0xFFFFFFFF)}},
			[]int32{1, 'a', 900}, []int32{1, 'q', 'd', '<', 's', '>'}},
		{"rerank template", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "gpt2"}, {Key: "tokenizer.chat_template.rerank", Value: "<s>Q:{query} D:{document}"}},
			[]int32{'a', 900}, append([]int32{900}, bytesEnc{}.Encode("Q:q D:d<s>", true)[0:]...)},
	} {
		sp, err := Read(fileWith(t, c.kv...))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := sp.Embed(bytesEnc{}, "a<s>"); !slices.Equal(got, c.embed) {
			t.Errorf("%s: embed %v, want %v", c.name, got, c.embed)
		}
		if got := sp.RerankInput(bytesEnc{}, "q", "d<s>"); !slices.Equal(got, c.rerank) {
			t.Errorf("%s: rerank %v, want %v", c.name, got, c.rerank)
		}
	}
	if _, err := Read(fileWith(t)); err == nil {
		t.Error("a file without tokenizer.ggml.model: no error")
	}
	if _, err := Read(fileWith(t, gguf.KV{Key: "tokenizer.ggml.model", Value: "bert"}, gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: "x"})); err == nil {
		t.Error("a string BOS id: no error")
	}
}

// countEnc counts the bytes it encodes.
type countEnc struct{ bytes *int }

func (c countEnc) Encode(text string, parseSpecial bool) []int32 {
	*c.bytes += len(text)
	return bytesEnc{}.Encode(text, parseSpecial)
}

// Reranker encodes the query once for all documents (a long query with many
// documents was tokenized once per document) and builds the inputs
// RerankInput builds.
func TestRerankerEncodesQueryOnce(t *testing.T) {
	sp, err := Read(fileWith(t, gguf.KV{Key: "tokenizer.ggml.model", Value: "bert"}))
	if err != nil {
		t.Fatal(err)
	}
	query := string(bytes.Repeat([]byte("q"), 1000))
	var n int
	r := sp.Reranker(countEnc{&n}, query)
	for i := range 100 {
		doc := fmt.Sprint("doc ", i)
		if got, want := r(doc), sp.RerankInput(bytesEnc{}, query, doc); !slices.Equal(got, want) {
			t.Fatalf("document %d: %v, RerankInput %v", i, got, want)
		}
	}
	if n > len(query)+100*len("doc 99") {
		t.Errorf("encoded %d bytes for a %d-byte query and 100 short documents", n, len(query))
	}
}
