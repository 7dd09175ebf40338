package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/smolgo/smolgo/gguf"
)

// models lists the tokenizer.ggml.model values FromGGUF implements.
var models = map[string]modelKind{
	"gpt2":   byteBPE,       // byte-level BPE; see preTokenizers
	"gemma4": charBPE,       // Gemma 4
	"llama":  sentencePiece, // SentencePiece: Llama 2, Gemma 3, Phi-3, ...
	"bert":   wordPiece,     // WordPiece: BERT, bge, ...
}

// preSpec is how llama.cpp runs one tokenizer.ggml.pre of a "gpt2"
// vocabulary (llama-vocab.cpp).
type preSpec struct {
	// split is the pre-tokenizer's patterns, applied in turn; nil means
	// Llama 3's pattern as Hugging Face runs it (matchAt).
	split []pattern
	// llama: llama.cpp's Unicode 15.1 tables, its reading of invalid
	// UTF-8 and its order for cutting out added tokens. The Llama-3 family
	// follows Hugging Face instead (see the package documentation).
	llama bool
	// ignoreMerges: a piece that is a token is that token.
	ignoreMerges bool
	// addBOS is the default when the file has no add_bos_token.
	addBOS bool
}

var (
	splitQwen2     = []pattern{matchQwen2}
	splitQwen35    = []pattern{matchQwen35}
	splitGPT2      = []pattern{matchGPT2}
	splitStarCoder = []pattern{matchDigit, matchGPT2}
)

// preTokenizers lists the tokenizer.ggml.pre values FromGGUF implements for
// "gpt2" vocabularies. Each is checked against llama.cpp on a vocabulary of
// its family (llama.cpp's models/ggml-vocab-*.gguf); names that llama.cpp
// treats identically share an entry.
var preTokenizers = map[string]preSpec{
	// Llama 3 and 3.x, SmolLM3: ignore_merges on, as in Hugging Face.
	"llama-bpe": {ignoreMerges: true, addBOS: true},
	"llama3":    {ignoreMerges: true, addBOS: true},
	"llama-v3":  {ignoreMerges: true, addBOS: true},
	"smaug-bpe": {ignoreMerges: true},
	// LFM2 and LFM2.5: llama.cpp runs them as Llama 3 (llama-vocab.cpp),
	// BOS on by default.
	"lfm2": {ignoreMerges: true, addBOS: true},
	// Qwen2, Qwen2.5, Qwen3: Llama 3's pattern with single digits.
	"qwen2":            {split: splitQwen2, llama: true},
	"deepseek-r1-qwen": {split: splitQwen2, llama: true},
	"qwen35":           {split: splitQwen35, llama: true},
	// OpenAI's o200k pattern (Phi-4-mini, Llama 4, MiniMax-M2, Kanana 2),
	// which llama.cpp runs with std::regex (pretokenize_gpt4o.go).
	// llama.cpp ships no such vocabulary: checked on Qwen2's tokens under
	// pre "gpt-4o", and piece by piece against llama.cpp's own split.
	"gpt-4o":     {split: splitGPT4o, llama: true},
	"llama4":     {split: splitGPT4o, llama: true},
	"minimax-m2": {split: splitGPT4o, llama: true},
	"kanana2":    {split: splitGPT4o, llama: true},
	"talkie":     {split: splitGPT4o, llama: true},
	// GPT-2's pattern.
	"gpt-2": {split: splitGPT2, llama: true},
	"phi-2": {split: splitGPT2, llama: true},
	"mpt":   {split: splitGPT2, llama: true},
	// Digits one by one, then GPT-2's pattern (SmolLM, SmolLM2, StarCoder).
	"smollm":    {split: splitStarCoder, llama: true},
	"starcoder": {split: splitStarCoder, llama: true},
	"refact":    {split: splitStarCoder, llama: true},
	"command-r": {split: splitStarCoder, llama: true},
	// Regex lists that llama.cpp runs with std::regex.
	"falcon":         {split: splitFalcon, llama: true},
	"deepseek-coder": {split: splitDeepSeekCoder, llama: true},
	"deepseek-llm":   {split: splitDeepSeekLLM, llama: true},
	// llama.cpp's default, for a file that names none (with a warning) or
	// names "default".
	"default": {split: splitDefault, llama: true},
}

// keys returns a table's keys, sorted.
func keys[V any](table map[string]V) []string {
	k := make([]string, 0, len(table))
	for name := range table {
		k = append(k, name)
	}
	slices.Sort(k)
	return k
}

// supported lists a table's keys for error messages, so that they stay true
// as the tables grow.
func supported[V any](table map[string]V) string { return strings.Join(keys(table), ", ") }

// SupportedModels returns the tokenizer.ggml.model values FromGGUF reads,
// sorted.
func SupportedModels() []string { return keys(models) }

// SupportedPreTokenizers returns the tokenizer.ggml.pre values FromGGUF
// reads for "gpt2" (byte-level BPE) vocabularies, sorted. SentencePiece,
// WordPiece and Gemma 4 vocabularies ignore the key, as llama.cpp does.
func SupportedPreTokenizers() []string { return keys(preTokenizers) }

// GGUF token types (tokenizer.ggml.token_type).
const (
	ggufUndefined   = 0
	ggufNormal      = 1
	ggufUnknown     = 2
	ggufControl     = 3
	ggufUserDefined = 4
	ggufUnused      = 5
	ggufByte        = 6
)

// LoadGGUF opens a GGUF file, reads its tokenizer and closes it. A
// vocabulary-only file (llama.cpp's models/ggml-vocab-*.gguf, which hold
// no tensors) works as well as a model.
func LoadGGUF(path string, opts ...Option) (*Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := FromGGUF(f, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// FromGGUF reads the tokenizer stored in a GGUF file's metadata, the way
// llama.cpp's llama_vocab::load does:
//
//   - tokenizer.ggml.model picks the algorithm: "gpt2" (byte-level BPE,
//     with tokenizer.ggml.pre naming the pre-tokenizer and
//     tokenizer.ggml.merges), "llama" (SentencePiece, with
//     tokenizer.ggml.scores), "gemma4" (BPE over characters) or "bert"
//     (WordPiece). SupportedModels and SupportedPreTokenizers list what is
//     implemented; anything else is an error that names what the file has.
//   - tokenizer.ggml.tokens and token_type: CONTROL and UNKNOWN tokens
//     become Special, USER_DEFINED ones UserDefined, UNUSED ones Unused.
//     As in llama.cpp, tokens with the conventional end-of-turn and
//     fill-in-the-middle names (<|im_end|>, </s>, <|fim_pad|>, ...) count as
//     control tokens whatever their type.
//   - the optional bos/eos/eot/eom/unknown/separator ids (with llama.cpp's
//     defaults for SentencePiece and WordPiece), add_bos_token,
//     add_eos_token, add_space_prefix and the WordPiece normalizer's
//     lowercase and strip_accents.
//
// The tokenizer copies what it needs; f may be closed afterwards. What
// llama.cpp passes over with a warning is passed over here too, and listed
// by Tokenizer.Warnings: a special-token id outside the vocabulary (the
// default id is kept), a "gpt2" file without tokenizer.ggml.pre (llama.cpp's
// default pre-tokenizer), a token type it does not know (UNDEFINED);
// integer scores and score or type arrays longer than the vocabulary are
// read as llama.cpp reads them. A malformed vocabulary (a score or type
// array shorter than the vocabulary, a merge of unknown tokens, a score
// that is not a finite number, a key of the wrong type) is an error naming
// the key.
//
// For the Llama-3 pre-tokenizers ignore_merges is on (see the package
// documentation); WithIgnoreMerges(false) gives llama.cpp's smaug-bpe.
func FromGGUF(f *gguf.File, opts ...Option) (*Tokenizer, error) {
	model, err := f.String("tokenizer.ggml.model")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	kind, ok := models[model]
	if !ok {
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.model %q is not supported (supported: %s)", model, supported(models))
	}
	s := spec{kind: kind, model: model, bos: -1, eos: -1, eot: -1, unk: -1, sep: -1}
	pre, preErr := f.String("tokenizer.ggml.pre")
	var dflt struct{ bos, eos, unk, sep int32 }
	dflt.bos, dflt.eos, dflt.unk, dflt.sep = -1, -1, -1, -1
	s.pre = "default"
	if preErr == nil {
		s.pre = pre
	}
	switch kind {
	case byteBPE:
		dflt.bos, dflt.eos = 11, 11 // llama.cpp's defaults for BPE
		switch {
		case errors.Is(preErr, gguf.ErrKeyNotFound):
			pre = "default"
			s.warn("tokenizer.ggml.pre is missing: using llama.cpp's default pre-tokenizer, as llama.cpp does (it warns that generation quality will be degraded)")
		case preErr != nil:
			return nil, fmt.Errorf("tokenizer: %w", preErr)
		}
		s.pre = pre
		ps, ok := preTokenizers[pre]
		if !ok {
			return nil, fmt.Errorf("tokenizer: tokenizer.ggml.pre %q is not supported (supported: %s)", pre, supported(preTokenizers))
		}
		s.split, s.llama, s.ignoreMerges, s.addBOS = ps.split, ps.llama, ps.ignoreMerges, ps.addBOS
	case charBPE:
		s.pre, s.llama = "gemma4", true // llama.cpp ignores the file's
	case sentencePiece:
		s.llama, s.addBOS, s.spacePrefix = true, true, true
		dflt.bos, dflt.eos, dflt.unk = 1, 2, 0
	case wordPiece:
		s.llama, s.addBOS = true, true
		dflt.bos, dflt.unk, dflt.sep = 101, 100, 102
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	s.tokens = slices.Clone(tokens)
	n := len(tokens)
	if kind == byteBPE || kind == charBPE {
		lines, err := f.Strings("tokenizer.ggml.merges")
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		if s.merges, err = splitMerges(lines, "tokenizer.ggml.merges"); err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	if kind == sentencePiece {
		if s.scores, err = readScores(f, n); err != nil {
			return nil, err
		}
	}
	if err := readTypes(f, &s); err != nil {
		return nil, err
	}
	ids := []struct {
		key  string
		dst  *int32
		dflt int32
	}{
		{"tokenizer.ggml.bos_token_id", &s.bos, dflt.bos},
		{"tokenizer.ggml.eos_token_id", &s.eos, dflt.eos},
		{"tokenizer.ggml.eot_token_id", &s.eot, -1},
		{"tokenizer.ggml.unknown_token_id", &s.unk, dflt.unk},
		{"tokenizer.ggml.seperator_token_id", &s.sep, dflt.sep},
	}
	for _, k := range ids {
		if id, ok, err := readID(f, &s, k.key); err != nil {
			return nil, err
		} else if ok {
			*k.dst = id
		} else if int(k.dflt) < n {
			*k.dst = k.dflt
		}
	}
	if err := byName(f, &s); err != nil {
		return nil, err
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{
		{"tokenizer.ggml.add_bos_token", &s.addBOS},
		{"tokenizer.ggml.add_eos_token", &s.addEOS},
		{"tokenizer.ggml.add_space_prefix", &s.spacePrefix},
	} {
		v, err := f.Bool(b.key)
		switch {
		case errors.Is(err, gguf.ErrKeyNotFound):
		case err != nil:
			return nil, fmt.Errorf("tokenizer: %w", err)
		default:
			*b.dst = v
		}
	}
	switch kind {
	case byteBPE:
		s.addBOS = s.addBOS && s.bos >= 0
		s.spacePrefix = false
	case charBPE:
		s.addBOS = s.bos >= 0 // llama.cpp forces add_bos for Gemma 4
		s.spacePrefix = false
	case wordPiece:
		s.lower, s.stripAccents = true, true
		if v, err := f.Bool("tokenizer.ggml.normalizer.lowercase"); err == nil {
			s.lower, s.stripAccents = v, v
		} else if !errors.Is(err, gguf.ErrKeyNotFound) {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		if v, err := f.Bool("tokenizer.ggml.normalizer.strip_accents"); err == nil {
			s.stripAccents = v
		} else if !errors.Is(err, gguf.ErrKeyNotFound) {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	collect(opts).apply(&s)
	return build(s)
}

// readScores reads the optional tokenizer.ggml.scores of a SentencePiece
// vocabulary (nil when absent: every score 0, as llama.cpp takes it). As in
// llama.cpp, integer scores are accepted, and an array longer than the
// vocabulary is used for its first entries; a shorter one is an error.
func readScores(f *gguf.File, n int) ([]float32, error) {
	const key = "tokenizer.ggml.scores"
	scores, err := f.Float32s(key)
	if errors.Is(err, gguf.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		ints, ierr := f.Int32s(key)
		if ierr != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		scores = make([]float32, len(ints))
		for i, v := range ints {
			scores[i] = float32(v)
		}
	}
	if len(scores) < n {
		return nil, fmt.Errorf("tokenizer: %s has %d entries for %d tokens", key, len(scores), n)
	}
	return slices.Clone(scores[:n]), nil
}

// readTypes reads tokenizer.ggml.token_type into s.kinds (and
// s.byteTokens). As in llama.cpp, an array longer than the vocabulary is
// used for its first entries (a shorter one is an error), and a type it
// does not know counts as UNDEFINED.
func readTypes(f *gguf.File, s *spec) error {
	n := len(s.tokens)
	s.kinds = make([]Kind, n)
	types, err := f.Int32s("tokenizer.ggml.token_type")
	switch {
	case errors.Is(err, gguf.ErrKeyNotFound):
		return nil // every token is normal
	case err != nil:
		return fmt.Errorf("tokenizer: %w", err)
	case len(types) < n:
		return fmt.Errorf("tokenizer: tokenizer.ggml.token_type has %d entries for %d tokens", len(types), n)
	}
	unknown := 0
	for id, ty := range types[:n] {
		if ty < ggufUndefined || ty > ggufByte {
			if unknown++; unknown == 1 {
				s.warn("tokenizer.ggml.token_type[%d] = %d is not a known token type; it and any other such token count as UNDEFINED, as in llama.cpp", id, ty)
			}
			ty = ggufUndefined
		}
		switch ty {
		case ggufNormal:
		case ggufUndefined:
			if s.llama || s.kind != byteBPE {
				s.kinds[id] = Unused // llama.cpp neither matches nor renders it
			}
		case ggufByte:
			if s.byteTokens == nil {
				s.byteTokens = make([]bool, n)
			}
			s.byteTokens[id] = true
		case ggufControl, ggufUnknown:
			s.kinds[id] = Special
		case ggufUserDefined:
			s.kinds[id] = UserDefined
		case ggufUnused:
			s.kinds[id] = Unused
		}
	}
	return nil
}

// readID reads an optional token id. An id outside the vocabulary is
// treated as absent, with a warning, as llama.cpp does ("bad special
// token ... using default id"): llama2.c's converter writes 0xFFFFFFFF
// (LLAMA_TOKEN_NULL as a uint32) for the ids it has none for. A value that
// is not an integer is an error.
func readID(f *gguf.File, s *spec, key string) (int32, bool, error) {
	id, err := f.Uint32(key)
	switch {
	case errors.Is(err, gguf.ErrKeyNotFound):
		return -1, false, nil
	case err != nil:
		return -1, false, fmt.Errorf("tokenizer: %w", err)
	case int(id) >= len(s.tokens):
		s.warn("%s = %d is outside the %d-token vocabulary: using the default id, as llama.cpp does", key, id, len(s.tokens))
		return -1, false, nil
	}
	return int32(id), true, nil
}

// Token names llama.cpp recognizes (llama-vocab.cpp), when the file does
// not give the id, for end of turn, end of message and fill-in-the-middle.
var (
	eotNames = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomNames    = []string{"<|eom_id|>"}
	fimPreNames = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufNames = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidNames = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}
	fimPadNames = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepNames = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepNames = []string{"<|file_sep|>"}
)

// byName applies llama.cpp's rules that go by token text: the special
// tokens found by name become control tokens (and the FIM pad, repo and
// separator tokens end generation), every token named like an end of turn
// becomes a control token, GPT-OSS's channel markers become user-defined,
// the exceptions for GPT-OSS's <|end|> and Gemma 4's </s> apply, and a few
// models' added tokens strip the white space beside them.
func byName(f *gguf.File, s *spec) error {
	byText := make(map[string]int32, len(s.tokens))
	for id, tok := range s.tokens {
		if _, dup := byText[tok]; !dup {
			byText[tok] = int32(id)
		}
	}
	find := func(names []string) int32 {
		best := int32(-1)
		for _, name := range names {
			if id, ok := byText[name]; ok && (best < 0 || id < best) {
				best = id
			}
		}
		return best
	}
	control := func(id int32) {
		if id >= 0 {
			s.kinds[id] = Special
		}
	}
	fromKey := func(key string) (int32, bool, error) { return readID(f, s, key) }
	for _, c := range []struct {
		key   string
		names []string
		eog   bool
		dst   *int32
	}{
		{"tokenizer.ggml.eot_token_id", eotNames, false, &s.eot},
		{"tokenizer.ggml.eom_token_id", eomNames, true, nil},
		{"tokenizer.ggml.fim_pre_token_id", fimPreNames, false, nil},
		{"tokenizer.ggml.fim_suf_token_id", fimSufNames, false, nil},
		{"tokenizer.ggml.fim_mid_token_id", fimMidNames, false, nil},
		{"tokenizer.ggml.fim_pad_token_id", fimPadNames, true, nil},
		{"tokenizer.ggml.fim_rep_token_id", fimRepNames, true, nil},
		{"tokenizer.ggml.fim_sep_token_id", fimSepNames, true, nil},
	} {
		id, ok, err := fromKey(c.key)
		if err != nil {
			return err
		}
		if !ok {
			id = find(c.names)
			control(id)
		}
		if c.dst != nil {
			*c.dst = id
		}
		if c.eog && id >= 0 {
			s.extraEOG = append(s.extraEOG, id)
		}
	}
	for id, tok := range s.tokens {
		if eogNames[tok] {
			control(int32(id))
		}
	}
	for _, name := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := byText[name]; ok {
			s.kinds[id] = UserDefined
		}
	}
	// GPT-OSS: <|end|> does not end the generation when <|return|> and
	// <|call|> exist (or <|calls|> and <|flush|>).
	has := func(name string) bool { _, ok := byText[name]; return ok }
	if end, ok := byText["<|end|>"]; ok && (has("<|return|>") && has("<|call|>") || (has("<|call|>") || has("<|calls|>")) && has("<|flush|>")) {
		s.kinds[end] = UserDefined
		s.dropEOG = append(s.dropEOG, end)
	}
	// Gemma 4: </s> is an ordinary token there.
	if sID, ok := byText["</s>"]; ok && has("<|tool_response>") {
		s.kinds[sID] = Normal
		s.dropEOG = append(s.dropEOG, sID)
	}
	// White-space stripping that llama.cpp sets by model name.
	name, _ := f.String("general.name")
	name = strings.ToLower(name)
	arch, _ := f.String("general.architecture")
	pre, _ := f.String("tokenizer.ggml.pre")
	switch {
	case strings.Contains(pre, "jina-v2-de") || strings.Contains(pre, "jina-v2-es") || strings.Contains(pre, "jina-v2-code") ||
		strings.Contains(arch, "nomic-bert-moe") || strings.Contains(arch, "jina-bert-v3"):
		if id, ok := byText["<mask>"]; ok {
			s.lstrip = append(s.lstrip, id)
		}
	case strings.Contains(name, "phi-3") || strings.Contains(name, "phi3"):
		keep := map[string]bool{"<unk>": true, "<s>": true, "<|endoftext|>": true}
		for id, k := range s.kinds {
			if (k == Special || k == UserDefined) && !keep[s.tokens[id]] {
				s.rstrip = append(s.rstrip, int32(id))
			}
		}
		if id, ok := byText["</s>"]; ok {
			s.rstrip = append(s.rstrip, id)
		}
	case strings.Contains(name, "modern-bert"):
		if id, ok := byText["[MASK]"]; ok {
			s.lstrip = append(s.lstrip, id)
		}
	}
	return nil
}
