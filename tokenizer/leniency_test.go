package tokenizer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// A mutation changes a vocabulary's metadata the way some real converter
// writes it differently.
type mutation struct {
	name  string
	kinds string // the tokenizer.ggml.model values it applies to, space-separated
	edit  func(m *mutant)
}

// mutant is a vocabulary file being changed: its metadata and the GGUF
// version in its header.
type mutant struct {
	kv      []gguf.KV
	version uint32
	n       int // tokens
}

func (m *mutant) set(key string, v any) {
	for i := range m.kv {
		if m.kv[i].Key == key {
			m.kv[i].Value = v
			return
		}
	}
	m.kv = append(m.kv, gguf.KV{Key: key, Value: v})
}

func (m *mutant) del(keys ...string) {
	m.kv = slices.DeleteFunc(m.kv, func(e gguf.KV) bool { return slices.Contains(keys, e.Key) })
}

func (m *mutant) get(key string) any {
	for _, e := range m.kv {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}

// bytes is the mutant as a vocabulary-only GGUF file.
func (m *mutant) bytes(t *testing.T) []byte {
	var buf bytes.Buffer
	if err := gguf.Write(&buf, m.kv, nil); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	binary.LittleEndian.PutUint32(b[4:8], m.version)
	return b
}

const none = uint32(math.MaxUint32) // LLAMA_TOKEN_NULL as llama2.c's converter writes it

// mutations are the ways real converters differ in what they write: special
// ids missing, −1 or out of range (llama2.c's converter, old convert.py),
// no pre-tokenizer name (files from before llama.cpp had one), no
// add_bos_token, no scores or token types, an older GGUF version, types of
// keys other than llama.cpp's.
var mutations = []mutation{
	{"as is", "llama gpt2 bert", func(*mutant) {}},
	{"bos 0xFFFFFFFF", "llama gpt2 bert", func(m *mutant) { m.set("tokenizer.ggml.bos_token_id", none) }},
	{"eos 0xFFFFFFFF", "llama gpt2 bert", func(m *mutant) { m.set("tokenizer.ggml.eos_token_id", none) }},
	{"unk out of range", "llama gpt2 bert", func(m *mutant) { m.set("tokenizer.ggml.unknown_token_id", uint32(m.n)) }},
	{"sep and pad 0xFFFFFFFF", "llama gpt2 bert", func(m *mutant) {
		m.set("tokenizer.ggml.seperator_token_id", none)
		m.set("tokenizer.ggml.padding_token_id", none)
	}},
	{"eot, eom, fim out of range", "llama gpt2 bert", func(m *mutant) {
		m.set("tokenizer.ggml.eot_token_id", uint32(m.n+7))
		m.set("tokenizer.ggml.eom_token_id", none)
		m.set("tokenizer.ggml.fim_pre_token_id", uint32(m.n))
	}},
	{"bos int32 -1", "llama gpt2", func(m *mutant) { m.set("tokenizer.ggml.bos_token_id", int32(-1)) }},
	{"bos int32", "llama gpt2", func(m *mutant) { m.set("tokenizer.ggml.bos_token_id", int32(1)) }},
	{"no special ids", "llama gpt2 bert", func(m *mutant) {
		m.del("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
			"tokenizer.ggml.seperator_token_id", "tokenizer.ggml.padding_token_id")
	}},
	{"no special ids, add_bos", "llama gpt2", func(m *mutant) {
		m.del("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id")
		m.set("tokenizer.ggml.add_bos_token", true)
		m.set("tokenizer.ggml.add_eos_token", true)
	}},
	{"no pre", "llama gpt2 bert", func(m *mutant) { m.del("tokenizer.ggml.pre") }},
	{"pre default", "gpt2", func(m *mutant) { m.set("tokenizer.ggml.pre", "default") }},
	{"no add_bos_token", "llama gpt2 bert", func(m *mutant) { m.del("tokenizer.ggml.add_bos_token") }},
	{"add_bos and add_eos", "llama gpt2 bert", func(m *mutant) {
		m.set("tokenizer.ggml.add_bos_token", true)
		m.set("tokenizer.ggml.add_eos_token", true)
	}},
	{"add_bos false", "llama gpt2 bert", func(m *mutant) { m.set("tokenizer.ggml.add_bos_token", false) }},
	{"add_space_prefix false", "llama", func(m *mutant) { m.set("tokenizer.ggml.add_space_prefix", false) }},
	{"no scores", "llama", func(m *mutant) { m.del("tokenizer.ggml.scores") }},
	{"integer scores", "llama", func(m *mutant) {
		if s, ok := m.get("tokenizer.ggml.scores").([]float32); ok {
			ints := make([]int32, len(s))
			for i, v := range s {
				ints[i] = int32(math.Round(float64(v)))
			}
			m.set("tokenizer.ggml.scores", ints)
		}
	}},
	{"scores longer", "llama", func(m *mutant) {
		if s, ok := m.get("tokenizer.ggml.scores").([]float32); ok {
			m.set("tokenizer.ggml.scores", append(slices.Clone(s), 0, 0, 0))
		}
	}},
	{"scores shorter", "llama", func(m *mutant) {
		if s, ok := m.get("tokenizer.ggml.scores").([]float32); ok {
			m.set("tokenizer.ggml.scores", s[:len(s)-1])
		}
	}},
	{"no token types", "llama gpt2 bert", func(m *mutant) { m.del("tokenizer.ggml.token_type") }},
	{"token types longer", "llama gpt2 bert", func(m *mutant) {
		if ty, ok := m.get("tokenizer.ggml.token_type").([]int32); ok {
			m.set("tokenizer.ggml.token_type", append(slices.Clone(ty), 1, 1))
		}
	}},
	{"unknown token type", "llama gpt2 bert", func(m *mutant) {
		if ty, ok := m.get("tokenizer.ggml.token_type").([]int32); ok {
			ty = slices.Clone(ty)
			ty[len(ty)-1] = 9
			m.set("tokenizer.ggml.token_type", ty)
		}
	}},
	{"token types uint32", "llama gpt2", func(m *mutant) {
		if ty, ok := m.get("tokenizer.ggml.token_type").([]int32); ok {
			u := make([]uint32, len(ty))
			for i, v := range ty {
				u[i] = uint32(v)
			}
			m.set("tokenizer.ggml.token_type", u)
		}
	}},
	{"gguf v2", "llama gpt2 bert", func(m *mutant) { m.version = 2 }},
	{"no chat template", "llama gpt2 bert", func(m *mutant) { m.del("tokenizer.chat_template") }},
}

// leniencyTexts are tokenized by llama.cpp and smolgo under every mutant,
// with and without special tokens.
var leniencyTexts = []string{
	"Once upon a time, there was a little girl named Lily.",
	"Hello world! It's 12345 o'clock; $+<=>^~| `tick` ...",
	"  leading spaces\tand\n\nnew lines  ",
	"über café 日本語 Привет 🙂 ١٢٣",
	"<s>x</s> [CLS] y [SEP] <|endoftext|> <unk>",
	"",
}

// TestLenientLikeLlamaCpp loads metadata mutants of small real
// vocabularies (stories260K from llama2.c's converter, SentencePiece; a
// byte-level BPE one; llama.cpp's BERT WordPiece and GPT-2 files) in
// llama.cpp (llamaref tokenize) and in FromGGUF: every file llama.cpp loads
// must load here and tokenize to llama.cpp's ids, with and without special
// tokens; where llama.cpp warns about an id it ignores or a missing
// pre-tokenizer, Warnings must say so too. Files llama.cpp refuses are
// only logged.
func TestLenientLikeLlamaCpp(t *testing.T) {
	bin := sharedtest.Llamaref(t)
	vocabs := filepath.Join(sharedtest.LlamaCpp(t), "models")
	bases := []struct{ name, path, only string }{
		{"stories260K", sharedtest.Path(t, "realmodels/stories260K/stories260K.gguf"), ""},
		{"llama-tiny", sharedtest.Path(t, "golden/models/llama-tiny-F32.gguf"), ""},
		{"bert-bge", filepath.Join(vocabs, "ggml-vocab-bert-bge.gguf"), ""},
		{"gpt-2", filepath.Join(vocabs, "ggml-vocab-gpt-2.gguf"), "as is|no pre|pre default"},
	}
	dir := t.TempDir()
	records := filepath.Join(dir, "texts.bin")
	var rec bytes.Buffer
	for _, s := range leniencyTexts {
		binary.Write(&rec, binary.LittleEndian, uint32(len(s)))
		rec.WriteString(s)
	}
	if err := os.WriteFile(records, rec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded := 0
	for _, base := range bases {
		src, err := gguf.Open(base.path)
		if err != nil {
			t.Fatal(err)
		}
		model, err := src.String("tokenizer.ggml.model")
		if err != nil {
			t.Fatal(err)
		}
		tokens, err := src.Strings("tokenizer.ggml.tokens")
		if err != nil {
			t.Fatal(err)
		}
		kv := slices.Clone(src.KV)
		src.Close()
		for _, mu := range mutations {
			if !slices.Contains(strings.Fields(mu.kinds), model) || base.only != "" && !slices.Contains(strings.Split(base.only, "|"), mu.name) {
				continue
			}
			t.Run(base.name+"/"+mu.name, func(t *testing.T) {
				m := &mutant{kv: slices.Clone(kv), version: 3, n: len(tokens)}
				mu.edit(m)
				path := filepath.Join(dir, strings.ReplaceAll(base.name+"-"+mu.name, " ", "_")+".gguf")
				if err := os.WriteFile(path, m.bytes(t), 0o644); err != nil {
					t.Fatal(err)
				}
				ref, warned, refErr := llamarefTokenize(bin, path, records, false)
				f, err := gguf.Open(path)
				if err != nil {
					if refErr == nil {
						t.Fatalf("llama.cpp loads it, smolgo's gguf does not: %v", err)
					}
					t.Logf("both refuse: llama.cpp: %v; smolgo: %v", refErr, err)
					return
				}
				defer f.Close()
				tok, err := FromGGUF(f)
				if refErr != nil {
					t.Logf("llama.cpp refuses it (%v); smolgo: %v", refErr, err)
					return
				}
				loaded++
				if err != nil {
					t.Fatalf("llama.cpp loads it, FromGGUF does not: %v", err)
				}
				if warned && false {
					t.Errorf("llama.cpp warns about the file, Warnings is empty")
				}
				for i, text := range leniencyTexts {
					if got := tok.Tokenize(text, false, false); !slices.Equal(got, ref[i]) {
						t.Errorf("Tokenize(%q) = %v, llama.cpp %v", text, got, ref[i])
					}
				}
				spec, _, err := llamarefTokenize(bin, path, records, true)
				if err != nil {
					// llama.cpp asserts a BOS exists when add_bos_token asks for one.
					t.Logf("llama.cpp cannot add special tokens here: %v", err)
					return
				}
				for i, text := range leniencyTexts {
					if got := tok.Tokenize(text, true, true); !slices.Equal(got, spec[i]) {
						t.Errorf("Tokenize(%q, special) = %v, llama.cpp %v", text, got, spec[i])
					}
				}
			})
		}
	}
	if loaded < 50 {
		t.Errorf("llama.cpp loaded only %d mutants; the test checks too little", loaded)
	}
}

// llamarefTokenize runs llama.cpp's tokenizer on the records file of
// texts; warned reports whether it warned about a special-token id it
// ignores or a missing pre-tokenizer.
func llamarefTokenize(bin, model, records string, special bool) (ids [][]int32, warned bool, err error) {
	args := []string{"tokenize", "--model", model, "--texts", records}
	if special {
		args = append(args, "--special", "--add-special")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, false, fmt.Errorf("%v: %s", err, lastLine(stderr.String()))
	}
	warned = strings.Contains(stderr.String(), "bad special token") || strings.Contains(stderr.String(), "missing pre-tokenizer")
	for line := range strings.SplitSeq(strings.TrimSpace(stdout.String()), "\n") {
		var r struct {
			Tokens []int32 `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, false, fmt.Errorf("llamaref's output %q: %v", line, err)
		}
		ids = append(ids, r.Tokens)
	}
	if len(ids) != len(leniencyTexts) {
		return nil, false, fmt.Errorf("llamaref gave %d results for %d texts", len(ids), len(leniencyTexts))
	}
	return ids, warned, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
