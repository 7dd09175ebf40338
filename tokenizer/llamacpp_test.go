package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// llama.cpp's source, cloned by ../shared/tools/llamaref/build.sh, ships
// vocabulary-only GGUF files (models/ggml-vocab-*.gguf) and, for most, test
// texts (.inp) with Hugging Face's ids for them (.out).

// llamaCppDir returns the llama.cpp clone that build.sh makes
// (${SMOLGO_CACHE:-$HOME/.cache/smolgo}/llamaref/nlc-3.22.1/llama.cpp), or
// skips the test when it is absent (fails under CI=true, where .ci/run
// builds it).
func llamaCppDir(t testing.TB) string { return sharedtest.LlamaCpp(t) }

// vocabCache keeps each llama.cpp vocabulary loaded once per test binary.
var vocabCache sync.Map // name → *Tokenizer

// llamaVocab loads models/ggml-vocab-NAME.gguf from the llama.cpp clone.
func llamaVocab(t testing.TB, name string) *Tokenizer {
	t.Helper()
	p := filepath.Join(llamaCppDir(t), "models", "ggml-vocab-"+name+".gguf")
	if tok, ok := vocabCache.Load(p); ok {
		return tok.(*Tokenizer)
	}
	tok, err := LoadGGUF(p)
	if err != nil {
		t.Fatal(err)
	}
	vocabCache.Store(p, tok)
	return tok
}

type inpCase struct {
	text string
	ids  []int32
}

// readInpOut reads models/ggml-vocab-NAME.gguf.inp and .out as llama.cpp's
// tests/test-tokenizer-0.cpp does: texts separated by
// "\n__ggml_vocab_test__\n", one line of space-separated ids per text.
func readInpOut(t testing.TB, name string) []inpCase {
	t.Helper()
	base := filepath.Join(llamaCppDir(t), "models", "ggml-vocab-"+name+".gguf")
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	texts := strings.Split(strings.TrimSuffix(string(inp), sep), sep)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(texts) != len(lines) {
		t.Fatalf("%s: %d texts, %d id lines", name, len(texts), len(lines))
	}
	cases := make([]inpCase, len(texts))
	for i, txt := range texts {
		cases[i].text = txt
		cases[i].ids = []int32{}
		for _, f := range strings.Fields(lines[i]) {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", name, i+1, err)
			}
			cases[i].ids = append(cases[i].ids, int32(v))
		}
	}
	return cases
}

// TestLlamaCppReferenceCases: every shipped case, tokenized as llama.cpp's
// test does (no BOS/EOS, special tokens not parsed), gives Hugging Face's
// ids.
func TestLlamaCppReferenceCases(t *testing.T) {
	for _, name := range []string{"qwen2", "qwen35", "llama-bpe", "llama-spm", "phi-3", "gemma-4", "bert-bge",
		"gpt-2", "mpt", "starcoder", "refact", "command-r", "falcon", "deepseek-coder", "deepseek-llm"} {
		t.Run(name, func(t *testing.T) {
			tok := llamaVocab(t, name)
			cases := readInpOut(t, name)
			bad := 0
			for _, c := range cases {
				got := tok.Encode(c.text, false)
				if !slices.Equal(got, c.ids) {
					if bad++; bad <= 5 {
						t.Errorf("Encode(%q)\n got %v\nwant %v", c.text, got, c.ids)
					}
				}
			}
			t.Logf("%d/%d exact", len(cases)-bad, len(cases))
		})
	}
}

// TestLFM2PreTokenizer: LFM2 and LFM2.5 files name their pre-tokenizer
// "lfm2", which llama.cpp runs as Llama 3's (llama-vocab.cpp: the Llama 3
// split, ignore_merges, BOS added by default). llama.cpp ships no LFM2
// vocabulary, so its Llama 3 one, renamed, must still give every
// reference case, and add BOS when the file does not say.
func TestLFM2PreTokenizer(t *testing.T) {
	src, err := gguf.Open(filepath.Join(llamaCppDir(t), "models", "ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tok, err := FromGGUF(withKV(t, src.KV, gguf.KV{Key: "tokenizer.ggml.pre", Value: "lfm2"},
		gguf.KV{Key: "tokenizer.ggml.add_bos_token"}))
	if err != nil {
		t.Fatal(err)
	}
	if !tok.IgnoreMerges() || !tok.AddBOS() {
		t.Errorf("ignoreMerges %v addBOS %v, want both", tok.IgnoreMerges(), tok.AddBOS())
	}
	cases := readInpOut(t, "llama-bpe")
	for _, c := range cases {
		if got := tok.Encode(c.text, false); !slices.Equal(got, c.ids) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", c.text, got, c.ids)
		}
	}
	t.Logf("%d cases", len(cases))
}

// TestSmolLMPreTokenizer: SmolLM and SmolLM2 files name their pre-tokenizer
// "smollm", which llama.cpp splits as "starcoder" (GPT-2's regex with digits
// one by one). llama.cpp ships no SmolLM vocabulary, so its StarCoder one,
// renamed, must still give every reference case.
func TestSmolLMPreTokenizer(t *testing.T) {
	src, err := gguf.Open(filepath.Join(llamaCppDir(t), "models", "ggml-vocab-starcoder.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tok, err := FromGGUF(withKV(t, src.KV, gguf.KV{Key: "tokenizer.ggml.pre", Value: "smollm"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range readInpOut(t, "starcoder") {
		if got := tok.Encode(c.text, false); !slices.Equal(got, c.ids) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", c.text, got, c.ids)
		}
	}
}
