// Package refvocab builds the reference vocabularies the tokenizer's tests
// and its reference generator (gen_llamaref.go) share.
package refvocab

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smolgo/smolgo/gguf"
)

// Gemma3FromGemma4 writes the vocabulary of llama.cpp's
// ggml-vocab-gemma-4.gguf (at path gemma4) as a Gemma 3 style
// SentencePiece GGUF (model "llama", add_space_prefix false, each merge
// result scored by its merge's rank), as convert_hf_to_gguf.py writes Gemma
// 3: no Gemma 3 vocabulary ships with llama.cpp. The bytes are
// deterministic; the reference data stores their SHA-256.
func Gemma3FromGemma4(gemma4 string) ([]byte, error) {
	f, err := gguf.Open(gemma4)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, err
	}
	types, err := f.Int32s("tokenizer.ggml.token_type")
	if err != nil {
		return nil, err
	}
	merges, err := f.Strings("tokenizer.ggml.merges")
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(tokens))
	for i, t := range tokens {
		index[t] = i
	}
	scores := make([]float32, len(tokens))
	for i := range scores {
		scores[i] = -float32(len(merges) + i)
	}
	for rank := len(merges) - 1; rank >= 0; rank-- { // the first merge making a token gives its score
		m := merges[rank]
		k := strings.IndexByte(m[min(1, len(m)):], ' ')
		if k < 0 {
			continue
		}
		if id, ok := index[m[:k+1]+m[k+2:]]; ok {
			scores[id] = -float32(rank)
		}
	}
	kv := []gguf.KV{
		{Key: "general.architecture", Value: "gemma3"},
		{Key: "general.name", Value: "gemma3-synth"},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.pre", Value: "default"},
		{Key: "tokenizer.ggml.tokens", Value: slices.Clone(tokens)},
		{Key: "tokenizer.ggml.scores", Value: scores},
		{Key: "tokenizer.ggml.token_type", Value: slices.Clone(types)},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(2)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(1)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(3)},
		{Key: "tokenizer.ggml.padding_token_id", Value: uint32(0)},
		{Key: "tokenizer.ggml.add_bos_token", Value: true},
		{Key: "tokenizer.ggml.add_eos_token", Value: false},
		{Key: "tokenizer.ggml.add_space_prefix", Value: false},
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, nil); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WithPre copies a vocabulary-only GGUF file (such as llama.cpp's
// models/ggml-vocab-qwen2.gguf) with tokenizer.ggml.pre set to pre and
// general.name to name: the same tokens and merges under another
// pre-tokenizer. It checks a pre-tokenizer whose vocabulary llama.cpp does
// not ship (gpt-4o: Phi-4-mini's o200k vocabulary) on a real byte-level BPE
// vocabulary of another family. The bytes are deterministic.
func WithPre(path, pre, name string) ([]byte, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if len(f.Tensors) > 0 {
		return nil, fmt.Errorf("refvocab: %s has tensors; only vocabulary-only files are copied", path)
	}
	kv := make([]gguf.KV, 0, len(f.KV))
	seen := map[string]bool{}
	for _, e := range f.KV {
		switch e.Key {
		case "tokenizer.ggml.pre":
			e.Value = pre
		case "general.name":
			e.Value = name
		}
		seen[e.Key] = true
		kv = append(kv, e)
	}
	if !seen["tokenizer.ggml.pre"] {
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.pre", Value: pre})
	}
	if !seen["general.name"] {
		kv = append(kv, gguf.KV{Key: "general.name", Value: name})
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, nil); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Synth builds the synthetic reference vocabulary called name from
// llama.cpp's models folder: "gemma3-synth" (Gemma3FromGemma4 of
// ggml-vocab-gemma-4.gguf) or "gpt-4o-synth" (WithPre of
// ggml-vocab-qwen2.gguf with pre "gpt-4o": Qwen2's 151,665 byte-level BPE
// tokens and merges under the o200k split, since llama.cpp ships no
// gpt-4o vocabulary). ok is false for any other name: a vocabulary
// llama.cpp ships as models/ggml-vocab-NAME.gguf.
func Synth(models, name string) (b []byte, ok bool, err error) {
	switch name {
	case "gemma3-synth":
		b, err = Gemma3FromGemma4(filepath.Join(models, "ggml-vocab-gemma-4.gguf"))
	case "gpt-4o-synth":
		b, err = WithPre(filepath.Join(models, "ggml-vocab-qwen2.gguf"), "gpt-4o", name)
	default:
		return nil, false, nil
	}
	return b, true, err
}
