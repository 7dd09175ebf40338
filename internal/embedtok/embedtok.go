// Package embedtok puts the special tokens around embedding and rerank
// inputs that llama.cpp puts there, read from a GGUF file's tokenizer keys
// with llama.cpp's defaults for each kind of vocabulary. Packages bert and
// family share it for their formats (engine.EmbedFormat).
//
// An embedding input is llama_tokenize(text, add_special=true,
// parse_special=true), as llama-server tokenizes /v1/embeddings inputs:
// for WordPiece (BERT) always [CLS] text [SEP]; for the other vocabularies
// BOS first when add_bos_token, EOS last when add_eos_token.
//
// A rerank input is llama-server's format_prompt_rerank: the file's rerank
// template (tokenizer.chat_template.rerank, with {query} and {document}
// replaced; Qwen3-Reranker has one) tokenized without added tokens and with
// special tokens parsed; else BOS (add_bos) query EOS (add_eos; the
// separator when there is no EOS) SEP (add_sep) document EOS (add_eos),
// the query and the document tokenized as plain text. For BERT that is
// [CLS] query [SEP] document.
package embedtok

import (
	"errors"
	"fmt"
	"strings"

	"github.com/smolgo/smolgo/gguf"
)

// Encoder is the tokenizer's part that is needed: text to ids with no
// tokens added, special tokens written in the text parsed or not.
type Encoder interface {
	Encode(text string, parseSpecial bool) []int32
}

// Special is what a vocabulary adds around inputs.
type Special struct {
	Model                  string // tokenizer.ggml.model
	BOS, EOS, SEP          int32  // -1: none
	AddBOS, AddEOS, AddSEP bool
	// Rerank is the file's rerank template ("" when none).
	Rerank string
}

// llama.cpp's pre-tokenizers that turn add_bos on for a byte-level BPE
// vocabulary without an add_bos_token key.
var bosPre = map[string]bool{"llama3": true, "llama-v3": true, "llama-bpe": true, "falcon3": true,
	"falcon-h1": true, "pixtral": true, "midm-2.0": true, "lfm2": true, "jina-v5-nano": true, "tekken": true, "chameleon": true}

// Read reads f's special tokens and flags: the tokenizer.ggml.* keys, with
// llama.cpp's defaults where they are missing.
func Read(f *gguf.File) (Special, error) {
	s := Special{BOS: -1, EOS: -1, SEP: -1}
	model, err := f.String("tokenizer.ggml.model")
	if err != nil {
		return s, fmt.Errorf("embedtok: %w", err)
	}
	s.Model = model
	switch model {
	case "bert":
		s.BOS, s.SEP = 101, 102
		s.AddBOS, s.AddSEP = true, true
	case "llama":
		s.BOS, s.EOS = 1, 2
		s.AddBOS = true
	case "gpt2":
		s.BOS, s.EOS = 11, 11
		pre, _ := f.String("tokenizer.ggml.pre")
		s.AddBOS = bosPre[pre]
	case "t5":
		s.EOS = 1
		s.AddEOS = true
	}
	// As llama.cpp does, a default outside the vocabulary is none, and an
	// id the file gives outside it leaves the default (llama2.c's converter
	// writes 0xFFFFFFFF for the ids it has none for).
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return s, fmt.Errorf("embedtok: %w", err)
	}
	n := int64(len(tokens))
	for _, k := range []struct {
		key string
		dst *int32
	}{{"tokenizer.ggml.bos_token_id", &s.BOS}, {"tokenizer.ggml.eos_token_id", &s.EOS}, {"tokenizer.ggml.seperator_token_id", &s.SEP}} {
		if int64(*k.dst) >= n {
			*k.dst = -1
		}
		v, err := f.Uint32(k.key)
		switch {
		case err == nil:
			if int64(v) < n {
				*k.dst = int32(v)
			}
		case !errors.Is(err, gguf.ErrKeyNotFound):
			return s, fmt.Errorf("embedtok: %w", err)
		}
	}
	for _, k := range []struct {
		key string
		dst *bool
	}{{"tokenizer.ggml.add_bos_token", &s.AddBOS}, {"tokenizer.ggml.add_eos_token", &s.AddEOS}, {"tokenizer.ggml.add_sep_token", &s.AddSEP}} {
		v, err := f.Bool(k.key)
		switch {
		case err == nil:
			*k.dst = v
		case !errors.Is(err, gguf.ErrKeyNotFound):
			return s, fmt.Errorf("embedtok: %w", err)
		}
	}
	if t, err := f.String("tokenizer.chat_template.rerank"); err == nil {
		s.Rerank = t
	} else if !errors.Is(err, gguf.ErrKeyNotFound) {
		return s, fmt.Errorf("embedtok: %w", err)
	}
	return s, nil
}

// Embed tokenizes an embedding input (see the package documentation).
func (s Special) Embed(tok Encoder, text string) []int32 {
	var out []int32
	if s.Model == "bert" {
		if s.BOS >= 0 {
			out = append(out, s.BOS)
		}
		out = append(out, tok.Encode(text, true)...)
		if s.SEP >= 0 {
			out = append(out, s.SEP)
		}
		return out
	}
	if s.AddBOS && s.BOS >= 0 {
		out = append(out, s.BOS)
	}
	out = append(out, tok.Encode(text, true)...)
	if s.AddEOS && s.EOS >= 0 {
		out = append(out, s.EOS)
	}
	return out
}

// RerankInput tokenizes a query and a document as one rerank input (see
// the package documentation).
func (s Special) RerankInput(tok Encoder, query, doc string) []int32 {
	return s.Reranker(tok, query)(doc)
}

// Reranker returns a function that builds the rerank input of query with
// each document, the same as RerankInput: in llama-server's default layout
// the query is tokenized once, here, and copied into each input; with a
// rerank template each input is the whole template tokenized, since the
// query's tokens there may depend on the text around it.
func (s Special) Reranker(tok Encoder, query string) func(doc string) []int32 {
	if s.Rerank != "" {
		return func(doc string) []int32 {
			p := strings.ReplaceAll(s.Rerank, "{query}", query)
			p = strings.ReplaceAll(p, "{document}", doc)
			return tok.Encode(p, true)
		}
	}
	eos := s.EOS
	if eos < 0 {
		eos = s.SEP
	}
	var head []int32
	if s.AddBOS && s.BOS >= 0 {
		head = append(head, s.BOS)
	}
	head = append(head, tok.Encode(query, false)...)
	if s.AddEOS && eos >= 0 {
		head = append(head, eos)
	}
	if s.AddSEP && s.SEP >= 0 {
		head = append(head, s.SEP)
	}
	return func(doc string) []int32 {
		out := append(make([]int32, 0, len(head)+len(doc)/3+2), head...)
		out = append(out, tok.Encode(doc, false)...)
		if s.AddEOS && eos >= 0 {
			out = append(out, eos)
		}
		return out
	}
}
