package tokenizer

import (
	"bufio"
	"encoding/json"
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
	tests := []struct {
		key  string
		val  any
		want string
	}{
		{"tokenizer.ggml.model", "llama", "not implemented"},
		{"tokenizer.ggml.pre", "qwen2", "not implemented"},
		{"tokenizer.ggml.pre", nil, "tokenizer.ggml.pre"},
		{"tokenizer.ggml.token_type", []int32{1, 2}, "2 entries"},
		{"tokenizer.ggml.merges", []string{"x"}, "merges[0]"},
		{"tokenizer.ggml.eos_token_id", uint32(999), "outside"},
	}
	for _, tt := range tests {
		var kv []gguf.KV
		for _, e := range src.KV {
			if e.Key != tt.key {
				kv = append(kv, e)
			}
		}
		if tt.val != nil {
			kv = append(kv, gguf.KV{Key: tt.key, Value: tt.val})
		}
		var buf strings.Builder
		if err := gguf.Write(&buf, kv, nil); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse([]byte(buf.String()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = FromGGUF(f)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s = %v: err = %v, want one mentioning %q", tt.key, tt.val, err, tt.want)
		}
	}
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
