package tokenizer

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// ggufCache keeps the tokenizers loaded without options, one per file, for
// the tests of this binary (loading one takes a moment).
var ggufCache sync.Map // path → *Tokenizer

func loadGGUF(t *testing.T, rel string, opts ...Option) *Tokenizer {
	t.Helper()
	p := sharedtest.Path(t, rel)
	if len(opts) == 0 {
		if tok, ok := ggufCache.Load(p); ok {
			return tok.(*Tokenizer)
		}
	}
	tok, err := LoadGGUF(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) == 0 {
		ggufCache.Store(p, tok)
	}
	return tok
}

// The GGUF files hold the same tokenizer as tokenizer.json; every reference
// file must come out the same through them.
func TestGGUFMatchesReference(t *testing.T) {
	for _, rel := range []string{"tokenizer/smollm3-vocab.gguf", "golden/realvocab/smollm3-realvocab-F16.gguf"} {
		t.Run(rel, func(t *testing.T) {
			tok := loadGGUF(t, rel)
			if tok.Len() != 128256 || tok.Pre() != "smaug-bpe" || !tok.IgnoreMerges() || tok.AddBOS() {
				t.Errorf("len %d pre %q ignoreMerges %v addBOS %v", tok.Len(), tok.Pre(), tok.IgnoreMerges(), tok.AddBOS())
			}
			if bos, _ := tok.BOS(); bos != 128000 {
				t.Errorf("BOS %d, want 128000", bos)
			}
			if eos, _ := tok.EOS(); eos != 128012 {
				t.Errorf("EOS %d, want 128012", eos)
			}
			if eog := tok.EndOfGeneration(); !slices.Equal(eog, []int32{128001, 128008, 128009, 128012}) {
				t.Errorf("EndOfGeneration %v", eog)
			}
			for _, f := range []string{"tokenizer_cases.jsonl", "tokenizer_fuzz.jsonl", "ignore_merges_cases.jsonl", "unicode_version_cases.jsonl"} {
				t.Run(f, func(t *testing.T) { checkCases(t, tok, readCases(t, "tokenizer/"+f), refIDs) })
			}
			t.Run("bench_en_1mb.txt", func(t *testing.T) { checkBench(t, tok) })
		})
	}
}

// WithIgnoreMerges(false) reproduces llama.cpp's smaug-bpe on the 588 words
// where it differs from Hugging Face.
func TestGGUFLlamaCppMerges(t *testing.T) {
	tok := loadGGUF(t, "tokenizer/smollm3-vocab.gguf", WithIgnoreMerges(false))
	checkCases(t, tok, readCases(t, "tokenizer/ignore_merges_cases.jsonl"), func(c refCase) []int32 { return c.IDsNoIgnore })
}

// The tiny golden models' 337-token vocabulary (GPT-2 byte order, smaug-bpe):
// llama.cpp's ids for the text12 prompt, with special parsing.
func TestGGUFTinyGolden(t *testing.T) {
	tok := loadGGUF(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	if tok.Len() != 337 {
		t.Fatalf("vocabulary of %d tokens, want 337", tok.Len())
	}
	const text = "<|begin_of_text|>The quick brown fox jumps over the lazy dog.\n"
	want := []int32{331, 296, 308, 311, 313, 318, 320, 262, 323, 325, 13, 198}
	got := tok.Encode(text, true)
	if !slices.Equal(got, want) {
		t.Errorf("Encode(%q) = %v, want %v", text, got, want)
	}
	if back, err := tok.Decode(got, false); err != nil || back != text {
		t.Errorf("Decode = %q, %v", back, err)
	}
	if eos, _ := tok.EOS(); eos != 334 || !tok.IsEndOfGeneration(334) {
		t.Errorf("EOS %d", eos)
	}
}

func TestFromGGUFRejects(t *testing.T) {
	src, err := gguf.Open(sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	nan := float32(math.NaN())
	scores := make([]float32, 337)
	badScores := slices.Clone(scores)
	badScores[7] = nan
	tests := []struct {
		name string
		kv   []gguf.KV // set (a nil Value deletes the key)
		want []string  // all must appear in the error
	}{
		{"unknown model", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "t5"}},
			[]string{`tokenizer.ggml.model "t5" is not supported`, "supported: bert, gemma4, gpt2, llama)"}},
		{"unknown pre", []gguf.KV{{Key: "tokenizer.ggml.pre", Value: "chatglm-bpe"}},
			[]string{`tokenizer.ggml.pre "chatglm-bpe" is not supported`, "command-r", "qwen2", "smollm", "smaug-bpe"}},
		{"short token types", []gguf.KV{{Key: "tokenizer.ggml.token_type", Value: []int32{1, 2}}}, []string{"2 entries"}},
		{"tokens not strings", []gguf.KV{{Key: "tokenizer.ggml.tokens", Value: []int32{1, 2}}}, []string{"tokenizer.ggml.tokens"}},
		{"no tokens", []gguf.KV{{Key: "tokenizer.ggml.tokens"}}, []string{"tokenizer.ggml.tokens"}},
		{"bad merge line", []gguf.KV{{Key: "tokenizer.ggml.merges", Value: []string{"x"}}}, []string{"merges[0]"}},
		{"merge of unknown tokens", []gguf.KV{{Key: "tokenizer.ggml.merges", Value: []string{"qq zz"}}}, []string{"merge 0", "not in the vocabulary"}},
		{"spm score NaN", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "llama"}, {Key: "tokenizer.ggml.scores", Value: badScores}},
			[]string{"score of token 7", "not a finite number"}},
		{"pre not a string", []gguf.KV{{Key: "tokenizer.ggml.pre", Value: uint32(3)}}, []string{"tokenizer.ggml.pre"}},
		{"eos not an integer", []gguf.KV{{Key: "tokenizer.ggml.eos_token_id", Value: "2"}}, []string{"tokenizer.ggml.eos_token_id"}},
		{"spm scores short", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "llama"}, {Key: "tokenizer.ggml.scores", Value: scores[:3]}},
			[]string{"tokenizer.ggml.scores has 3 entries for 337 tokens"}},
		{"spm scores not floats", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "llama"}, {Key: "tokenizer.ggml.scores", Value: []string{"a"}}},
			[]string{"tokenizer.ggml.scores"}},
		{"gemma4 without merges", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "gemma4"}, {Key: "tokenizer.ggml.merges"}},
			[]string{"tokenizer.ggml.merges"}},
		{"bert lowercase not bool", []gguf.KV{{Key: "tokenizer.ggml.model", Value: "bert"}, {Key: "tokenizer.ggml.normalizer.lowercase", Value: "yes"}},
			[]string{"tokenizer.ggml.normalizer.lowercase"}},
		{"empty vocabulary", []gguf.KV{{Key: "tokenizer.ggml.tokens", Value: []string{}}, {Key: "tokenizer.ggml.token_type"},
			{Key: "tokenizer.ggml.bos_token_id"}, {Key: "tokenizer.ggml.eos_token_id"}, {Key: "tokenizer.ggml.padding_token_id"}}, []string{"empty vocabulary"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := withKV(t, src.KV, tt.kv...)
			_, err := FromGGUF(f)
			if err == nil {
				t.Fatalf("no error, want one mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want one mentioning %q", err, w)
				}
			}
		})
	}
}

// FromGGUF passes over what llama.cpp passes over, with a warning that
// names the key (TestLenientLikeLlamaCpp checks the same against llama.cpp
// itself on many more files).
func TestFromGGUFWarns(t *testing.T) {
	src, err := gguf.Open(sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	clean, err := FromGGUF(src)
	if err != nil {
		t.Fatal(err)
	}
	if w := clean.Warnings(); w != nil {
		t.Fatalf("a clean file warns: %q", w)
	}
	eos, _ := clean.EOS()
	tests := []struct {
		name  string
		kv    []gguf.KV
		want  string // in a warning
		check func(*Tokenizer) bool
	}{
		{"eos out of range", []gguf.KV{{Key: "tokenizer.ggml.eos_token_id", Value: uint32(999)}}, "tokenizer.ggml.eos_token_id = 999",
			func(tok *Tokenizer) bool { id, ok := tok.EOS(); return ok && id == 11 }}, // llama.cpp's BPE default
		{"huge eot", []gguf.KV{{Key: "tokenizer.ggml.eot_token_id", Value: uint32(1 << 31)}}, "eot_token_id = 2147483648",
			func(tok *Tokenizer) bool { return tok.IsEndOfGeneration(eos) }},
		{"no pre", []gguf.KV{{Key: "tokenizer.ggml.pre"}}, "tokenizer.ggml.pre is missing",
			func(tok *Tokenizer) bool { return tok.Pre() == "default" }},
		{"unknown token type", []gguf.KV{{Key: "tokenizer.ggml.token_type", Value: append(make([]int32, 336), 9)}}, "token_type[336] = 9",
			func(tok *Tokenizer) bool { return tok.Len() == 337 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := FromGGUF(withKV(t, src.KV, tt.kv...))
			if err != nil {
				t.Fatal(err)
			}
			if w := tok.Warnings(); !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, tt.want) }) {
				t.Errorf("Warnings() = %q, want one mentioning %q", w, tt.want)
			}
			if !tt.check(tok) {
				t.Errorf("the tokenizer is not what llama.cpp makes of the file")
			}
		})
	}
}

// withKV returns a vocabulary-only GGUF with the metadata kv, changed by
// set (a KV with a nil Value deletes the key).
func withKV(t testing.TB, kv []gguf.KV, set ...gguf.KV) *gguf.File {
	t.Helper()
	var out []gguf.KV
	for _, e := range kv {
		if !slices.ContainsFunc(set, func(s gguf.KV) bool { return s.Key == e.Key }) {
			out = append(out, e)
		}
	}
	for _, s := range set {
		if s.Value != nil {
			out = append(out, s)
		}
	}
	var buf strings.Builder
	if err := gguf.Write(&buf, out, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse([]byte(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Decoding llama.cpp's greedy tokens on the realvocab model gives Hugging
// Face's text, with and without special tokens.
func TestGGUFDecodeRealvocab(t *testing.T) {
	tok := loadGGUF(t, "golden/realvocab/smollm3-realvocab-F16.gguf")
	f, err := os.Open(sharedtest.Path(t, "golden/realvocab/cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	n := 0
	for sc.Scan() {
		var c struct {
			Name            string  `json:"name"`
			Generated       []int32 `json:"generated"`
			Text            string  `json:"text"`
			TextSkipSpecial string  `json:"text_skip_special"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		for _, skip := range []bool{false, true} {
			want := c.Text
			if skip {
				want = c.TextSkipSpecial
			}
			got, err := tok.Decode(c.Generated, skip)
			if err != nil || got != want {
				t.Errorf("%s: Decode(skip=%v) = %q, %v; want %q", c.Name, skip, got, err, want)
			}
			d := tok.NewStreamDecoder(skip)
			var sb strings.Builder
			for _, id := range c.Generated {
				p, _ := d.Push(id)
				sb.WriteString(p)
			}
			if sb.WriteString(d.Flush()); sb.String() != want {
				t.Errorf("%s: stream decode (skip=%v) = %q, want %q", c.Name, skip, sb.String(), want)
			}
		}
		n++
	}
	if n != 6 {
		t.Errorf("%d realvocab cases, want 6", n)
	}
}

func TestSupportedLists(t *testing.T) {
	if got := SupportedModels(); !slices.Equal(got, []string{"bert", "gemma4", "gpt2", "llama"}) {
		t.Errorf("SupportedModels() = %v", got)
	}
	pre := SupportedPreTokenizers()
	if !slices.IsSorted(pre) {
		t.Errorf("SupportedPreTokenizers() is not sorted: %v", pre)
	}
	for _, want := range []string{"qwen2", "smollm", "llama-bpe", "smaug-bpe", "gpt-2", "starcoder", "deepseek-llm"} {
		if !slices.Contains(pre, want) {
			t.Errorf("SupportedPreTokenizers() lacks %q", want)
		}
	}
}
