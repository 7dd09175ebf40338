// Package refvocab builds the reference vocabularies the tokenizer's tests
// and its reference generator (gen_llamaref.go) share.
package refvocab

import (
	"bytes"
	"encoding/json"
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

// HFOptions say what FromTokenizerJSON writes besides the vocabulary.
type HFOptions struct {
	// Arch and Name are general.architecture and general.name.
	Arch, Name string
	// Pre is tokenizer.ggml.pre, which convert_hf_to_gguf.py finds by
	// hashing the tokenizer's ids for a test text ("gpt-4o" for o200k).
	Pre string
	// VocabSize is the model's vocab_size (its config.json): ids that the
	// tokenizer lacks up to it become unused [PADn] tokens, as the
	// converter pads them. 0 means the tokenizer's largest id plus one.
	VocabSize int
}

// FromTokenizerJSON writes a Hugging Face byte-level BPE tokenizer
// (tokenizer.json, and tokenizer_config.json for its special tokens) as a
// vocabulary-only GGUF, the way llama.cpp's convert_hf_to_gguf.py writes a
// "gpt2" vocabulary (get_vocab_base and gguf-py's SpecialVocab): every id
// below the vocabulary size in order, the added tokens as control tokens
// when special and user-defined otherwise, the merges as "a b" strings,
// and the ids of the bos, eos, unk, sep and pad tokens the config names
// (with add_bos_token and add_eos_token where it sets them). It is how the
// tests check vocabularies llama.cpp does not ship, such as gpt-oss's
// o200k_harmony. The bytes are deterministic.
func FromTokenizerJSON(tokenizerJSON, configJSON []byte, o HFOptions) ([]byte, error) {
	var tj struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Type   string          `json:"type"`
			Vocab  map[string]int  `json:"vocab"`
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(tokenizerJSON, &tj); err != nil {
		return nil, fmt.Errorf("refvocab: tokenizer.json: %w", err)
	}
	if tj.Model.Type != "BPE" {
		return nil, fmt.Errorf("refvocab: tokenizer.json: model type %q, not BPE", tj.Model.Type)
	}
	byID := map[int]string{}
	maxID := -1
	for tok, id := range tj.Model.Vocab {
		byID[id] = tok
		maxID = max(maxID, id)
	}
	added := map[int]bool{} // id → special
	byContent := map[string]int{}
	for _, a := range tj.AddedTokens {
		byID[a.ID] = a.Content
		added[a.ID] = a.Special
		byContent[a.Content] = a.ID
		maxID = max(maxID, a.ID)
	}
	n := o.VocabSize
	if n == 0 {
		n = maxID + 1
	}
	if maxID >= n {
		return nil, fmt.Errorf("refvocab: token id %d is beyond the vocabulary size %d", maxID, n)
	}
	tokens := make([]string, n)
	types := make([]int32, n)
	for i := range n {
		tok, ok := byID[i]
		special, isAdded := added[i]
		switch {
		case !ok:
			tokens[i], types[i] = fmt.Sprintf("[PAD%d]", i), 5 // UNUSED
		case isAdded && special:
			tokens[i], types[i] = tok, 3 // CONTROL
		case isAdded:
			tokens[i], types[i] = strings.ReplaceAll(tok, "\u2581", " "), 4 // USER_DEFINED
		default:
			tokens[i], types[i] = tok, 1 // NORMAL
		}
	}
	var merges []string
	if err := json.Unmarshal(tj.Model.Merges, &merges); err != nil {
		var pairs [][]string
		if err := json.Unmarshal(tj.Model.Merges, &pairs); err != nil {
			return nil, fmt.Errorf("refvocab: tokenizer.json: merges are neither strings nor pairs")
		}
		merges = make([]string, len(pairs))
		for i, p := range pairs {
			merges[i] = strings.Join(p, " ")
		}
	}
	kv := []gguf.KV{
		{Key: "general.architecture", Value: o.Arch},
		{Key: "general.name", Value: o.Name},
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Value: o.Pre},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.merges", Value: merges},
	}
	var cfg map[string]json.RawMessage
	if len(configJSON) > 0 {
		if err := json.Unmarshal(configJSON, &cfg); err != nil {
			return nil, fmt.Errorf("refvocab: tokenizer_config.json: %w", err)
		}
	}
	for _, s := range []struct{ typ, key string }{
		{"bos", "bos_token_id"}, {"eos", "eos_token_id"}, {"unk", "unknown_token_id"},
		{"sep", "seperator_token_id"}, {"pad", "padding_token_id"},
	} {
		raw, ok := cfg[s.typ+"_token"]
		if !ok {
			continue
		}
		var content string
		if json.Unmarshal(raw, &content) != nil {
			var obj struct {
				Content string `json:"content"`
			}
			if json.Unmarshal(raw, &obj) != nil {
				continue
			}
			content = obj.Content
		}
		if id, ok := byContent[content]; ok {
			kv = append(kv, gguf.KV{Key: "tokenizer.ggml." + s.key, Value: uint32(id)})
		}
	}
	for _, k := range []string{"add_bos_token", "add_eos_token"} {
		var b bool
		if raw, ok := cfg[k]; ok && json.Unmarshal(raw, &b) == nil {
			kv = append(kv, gguf.KV{Key: "tokenizer.ggml." + k, Value: b})
		}
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, nil); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
