package tokenizer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// llama3Pattern is the split regex of Llama 3 (and SmolLM3), the only one
// this package implements.
const llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// LoadJSON reads a Hugging Face tokenizer.json file, plain or gzipped.
func LoadJSON(path string, opts ...Option) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	defer f.Close()
	t, err := ReadJSON(f, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ReadJSON reads a Hugging Face tokenizer.json (gzip is detected and
// unpacked). It accepts exactly the pipeline SmolLM3 and Llama 3 use — no
// normalizer, a Split with the Llama-3 pattern (Isolated) followed by a
// ByteLevel pre-tokenizer without its own regex, a BPE model without unknown
// token, byte fallback, dropout or affixes, a byte-level decoder and a
// post-processor that adds nothing — and returns an error naming the first
// component it does not implement, rather than tokenize differently.
//
// A tokenizer.json names no BOS or EOS token (those live in
// tokenizer_config.json); BOS and EOS report false unless set with options.
func ReadJSON(r io.Reader, opts ...Option) (*Tokenizer, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("tokenizer.json: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	var doc struct {
		AddedTokens []struct {
			ID         int32  `json:"id"`
			Content    string `json:"content"`
			SingleWord bool   `json:"single_word"`
			LStrip     bool   `json:"lstrip"`
			RStrip     bool   `json:"rstrip"`
			Normalized bool   `json:"normalized"`
			Special    bool   `json:"special"`
		} `json:"added_tokens"`
		Normalizer    json.RawMessage `json:"normalizer"`
		PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Decoder       json.RawMessage `json:"decoder"`
		Model         struct {
			Type                    string           `json:"type"`
			Dropout                 *float64         `json:"dropout"`
			UnkToken                *string          `json:"unk_token"`
			ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
			EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
			ByteFallback            bool             `json:"byte_fallback"`
			IgnoreMerges            bool             `json:"ignore_merges"`
			Vocab                   map[string]int32 `json:"vocab"`
			Merges                  json.RawMessage  `json:"merges"`
		} `json:"model"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	m := doc.Model
	switch {
	case m.Type != "BPE":
		return nil, fmt.Errorf("tokenizer.json: model type %q is not implemented (only BPE)", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, fmt.Errorf("tokenizer.json: BPE dropout %v is not implemented", *m.Dropout)
	case m.UnkToken != nil:
		return nil, fmt.Errorf("tokenizer.json: BPE unk_token %q is not implemented (byte-level BPE needs none)", *m.UnkToken)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return nil, fmt.Errorf("tokenizer.json: BPE continuing_subword_prefix is not implemented")
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, fmt.Errorf("tokenizer.json: BPE end_of_word_suffix is not implemented")
	case m.ByteFallback:
		return nil, fmt.Errorf("tokenizer.json: BPE byte_fallback is not implemented")
	}
	if !isNull(doc.Normalizer) {
		return nil, fmt.Errorf("tokenizer.json: normalizer %s is not implemented (only null)", brief(doc.Normalizer))
	}
	if err := checkPreTokenizer(doc.PreTokenizer); err != nil {
		return nil, err
	}
	if err := checkPostProcessor(doc.PostProcessor); err != nil {
		return nil, err
	}
	if err := checkDecoder(doc.Decoder); err != nil {
		return nil, err
	}
	merges, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}

	n := 0
	for tok, id := range m.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer.json: vocab entry %q has negative id %d", tok, id)
		}
		n = max(n, int(id)+1)
	}
	for _, a := range doc.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("tokenizer.json: added token %q has negative id %d", a.Content, a.ID)
		}
		n = max(n, int(a.ID)+1)
	}
	if n > 1<<24 {
		return nil, fmt.Errorf("tokenizer.json: id %d is implausibly large", n-1)
	}
	s := spec{
		tokens:       make([]string, n),
		kinds:        make([]Kind, n),
		merges:       merges,
		pre:          "llama3",
		ignoreMerges: m.IgnoreMerges,
		bos:          -1,
		eos:          -1,
		eot:          -1,
		unk:          -1,
		sep:          -1,
		model:        "gpt2",
	}
	filled := make([]bool, n)
	for tok, id := range m.Vocab {
		if filled[id] {
			return nil, fmt.Errorf("tokenizer.json: id %d is used by two vocab entries", id)
		}
		s.tokens[id], filled[id] = tok, true
	}
	for _, a := range doc.AddedTokens {
		if a.SingleWord || a.LStrip || a.RStrip {
			return nil, fmt.Errorf("tokenizer.json: added token %d %q uses single_word/lstrip/rstrip, which are not implemented", a.ID, a.Content)
		}
		if filled[a.ID] && s.tokens[a.ID] != a.Content {
			return nil, fmt.Errorf("tokenizer.json: added token %d %q collides with vocab entry %q", a.ID, a.Content, s.tokens[a.ID])
		}
		s.tokens[a.ID], filled[a.ID] = a.Content, true
		s.kinds[a.ID] = UserDefined
		if a.Special {
			s.kinds[a.ID] = Special
		}
	}
	for id, ok := range filled {
		if !ok {
			return nil, fmt.Errorf("tokenizer.json: no token has id %d (ids must be dense)", id)
		}
	}
	o := collect(opts)
	o.apply(&s)
	t, err := build(s)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	return t, nil
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

func brief(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

type component struct {
	Type          string            `json:"type"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Pattern       struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
	Single         []struct {
		Sequence     *json.RawMessage `json:"Sequence"`
		SpecialToken *json.RawMessage `json:"SpecialToken"`
	} `json:"single"`
}

func checkPreTokenizer(raw json.RawMessage) error {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil || c.Type != "Sequence" || len(c.Pretokenizers) != 2 {
		return fmt.Errorf("tokenizer.json: pre_tokenizer %s is not implemented (only Sequence[Split(Llama-3 pattern), ByteLevel])", brief(raw))
	}
	var split, bl component
	if err := json.Unmarshal(c.Pretokenizers[0], &split); err != nil || split.Type != "Split" ||
		split.Pattern.Regex == nil || *split.Pattern.Regex != llama3Pattern || split.Behavior != "Isolated" || split.Invert {
		return fmt.Errorf("tokenizer.json: pre_tokenizer split %s is not implemented (only the Llama-3 pattern, Isolated, not inverted)", brief(c.Pretokenizers[0]))
	}
	if err := json.Unmarshal(c.Pretokenizers[1], &bl); err != nil || bl.Type != "ByteLevel" || bl.AddPrefixSpace || bl.UseRegex == nil || *bl.UseRegex {
		return fmt.Errorf("tokenizer.json: pre_tokenizer %s is not implemented (only ByteLevel with add_prefix_space and use_regex false)", brief(c.Pretokenizers[1]))
	}
	return nil
}

func checkPostProcessor(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err == nil {
		switch c.Type {
		case "ByteLevel":
			return nil
		case "TemplateProcessing":
			if len(c.Single) == 1 && c.Single[0].Sequence != nil {
				return nil
			}
		}
	}
	return fmt.Errorf("tokenizer.json: post_processor %s is not implemented (only ones that add no tokens)", brief(raw))
}

func checkDecoder(raw json.RawMessage) error {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil || c.Type != "ByteLevel" {
		return fmt.Errorf("tokenizer.json: decoder %s is not implemented (only ByteLevel)", brief(raw))
	}
	return nil
}

// parseMerges accepts both merge formats: ["a b", ...] and [["a","b"], ...].
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("tokenizer.json: model.merges is neither a list of pairs nor of strings: %w", err)
	}
	return splitMerges(lines, "tokenizer.json: model.merges")
}

// splitMerges splits "left right" merge lines at the first space after the
// first character.
func splitMerges(lines []string, where string) ([][2]string, error) {
	pairs := make([][2]string, len(lines))
	for i, l := range lines {
		k := -1
		if len(l) > 1 {
			k = strings.IndexByte(l[1:], ' ')
		}
		if k < 0 {
			return nil, fmt.Errorf("%s[%d] = %q is not two tokens separated by a space", where, i, l)
		}
		pairs[i] = [2]string{l[:k+1], l[k+2:]}
	}
	return pairs, nil
}

// Option changes how a tokenizer is loaded.
type Option func(*options)

type options struct {
	ignoreMerges *bool
	bos, eos     *int32
}

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

func (o options) apply(s *spec) {
	if o.ignoreMerges != nil {
		s.ignoreMerges = *o.ignoreMerges
	}
	if o.bos != nil {
		s.bos = *o.bos
	}
	if o.eos != nil {
		s.eos = *o.eos
	}
}

// WithIgnoreMerges overrides whether a pre-token that is a vocabulary entry
// is emitted whole without merging (see the package documentation: the
// default follows Hugging Face; WithIgnoreMerges(false) on a smaug-bpe GGUF
// reproduces llama.cpp).
func WithIgnoreMerges(on bool) Option { return func(o *options) { o.ignoreMerges = &on } }

// WithBOS sets the beginning-of-sequence id.
func WithBOS(id int32) Option { return func(o *options) { o.bos = &id } }

// WithEOS sets the end-of-sequence id (also counted as end of generation).
func WithEOS(id int32) Option { return func(o *options) { o.eos = &id } }
