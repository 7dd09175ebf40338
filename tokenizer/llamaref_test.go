package tokenizer

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/tokenizer/internal/refvocab"
)

// llamaRef is testdata/llamaref.json.gz, written by gen_llamaref.go:
// llama.cpp's ids for a fuzz set of texts under 17 vocabularies, and the
// SHA-256 of its ids for the 1 MB bench text.
type llamaRef struct {
	Synth  map[string]string `json:"synth_sha256"`
	Texts  [][]byte          `json:"texts"`
	Vocabs []struct {
		Name    string    `json:"name"`
		Plain   [][]int32 `json:"plain"`
		Special [][]int32 `json:"special"`
	} `json:"vocabs"`
	Bench  map[string]refHash `json:"bench"`
	Splits []struct {
		Pre     string   `json:"pre"`
		Regexes []string `json:"regexes"`
		Pieces  [][]int  `json:"pieces"`
		Bench   refHash  `json:"bench"`
	} `json:"splits"`
}

// refHash is a count of ids (or piece lengths) and the SHA-256 of them as
// little-endian int32s.
type refHash struct {
	N      int    `json:"n"`
	SHA256 string `json:"sha256"`
}

var (
	refOnce sync.Once
	refData llamaRef
	refErr  error
)

func readLlamaRef(t testing.TB) *llamaRef {
	t.Helper()
	refOnce.Do(func() {
		var raw []byte
		if raw, refErr = os.ReadFile("testdata/llamaref.json.gz"); refErr != nil {
			return
		}
		var zr *gzip.Reader
		if zr, refErr = gzip.NewReader(bytes.NewReader(raw)); refErr != nil {
			return
		}
		refErr = json.NewDecoder(zr).Decode(&refData)
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return &refData
}

// refVocab loads a vocabulary of the reference file: one of llama.cpp's, or
// one that refvocab.Synth builds ("gemma3-synth", "gpt-4o-synth"), built in
// memory exactly as gen_llamaref.go wrote it.
func refVocab(t testing.TB, name string) *Tokenizer {
	t.Helper()
	if tok, ok := vocabCache.Load(name); ok {
		return tok.(*Tokenizer)
	}
	b, ok, err := refvocab.Synth(filepath.Join(llamaCppDir(t), "models"), name)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return llamaVocab(t, name)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != readLlamaRef(t).Synth[name] {
		t.Fatalf("refvocab.Synth builds other bytes for %s than gen_llamaref.go did (SHA-256 %x)", name, sum)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	vocabCache.Store(name, tok)
	return tok
}

// TestLlamaRef: on every text of the fuzz set, Tokenize gives llama.cpp's
// ids, without special tokens (Tokenize(s, false, false)) and with them
// (Tokenize(s, true, true), llama_tokenize with add_special and
// parse_special); and decoding gives the text back where the vocabulary
// can (valid UTF-8 without U+2581; not WordPiece, which normalizes, nor a
// vocabulary without a token for every byte, which drops them).
func TestLlamaRef(t *testing.T) {
	ref := readLlamaRef(t)
	for _, v := range ref.Vocabs {
		t.Run(v.Name, func(t *testing.T) {
			tok := refVocab(t, v.Name)
			bad := 0
			for i, text := range ref.Texts {
				for _, c := range []struct {
					special bool
					want    []int32
				}{{false, v.Plain[i]}, {true, v.Special[i]}} {
					got := tok.Tokenize(string(text), c.special, c.special)
					if !slices.Equal(got, c.want) {
						if bad++; bad <= 5 {
							t.Errorf("text %d %q, special %v:\n got %v\nwant %v", i, text, c.special, got, c.want)
						}
					}
				}
				if tok.Model() == "bert" || tok.missingBytes || !utf8.Valid(text) || tok.Model() != "gpt2" && bytes.Contains(text, []byte(spaceMark)) {
					continue // WordPiece normalizes; Falcon has no token for \v; U+2581 in the text decodes as a space
				}
				if back, err := tok.Decode(v.Plain[i], false); err != nil || back != string(text) {
					if bad++; bad <= 5 {
						t.Errorf("text %d %q: Decode gives %q, %v", i, text, back, err)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d mismatches over %d texts", bad, len(ref.Texts))
			}
			// The set exercises special tokens: parsing them changes the ids
			// of many texts beyond the BOS/EOS around them.
			if !slices.Contains([]string{"qwen2", "llama-spm", "gemma-4", "bert-bge"}, v.Name) {
				return
			}
			changed := 0
			for i := range ref.Texts {
				inner := tok.Tokenize(string(ref.Texts[i]), false, true)
				if !slices.Equal(inner, v.Plain[i]) {
					changed++
				}
			}
			if changed < 5 {
				t.Errorf("special tokens change only %d texts' ids", changed)
			}
		})
	}
}

// TestLlamaRefBench: the 1 MB bench text gives llama.cpp's ids (compared
// through their SHA-256) for one vocabulary of each kind, and decodes back.
func TestLlamaRefBench(t *testing.T) {
	ref := readLlamaRef(t)
	text, err := os.ReadFile(sharedtest.Path(t, "tokenizer/bench_en_1mb.txt"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(ref.Bench))
	for name := range ref.Bench {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		want := ref.Bench[name]
		t.Run(name, func(t *testing.T) {
			tok := refVocab(t, name)
			ids := tok.Tokenize(string(text), false, false)
			h := sha256.New()
			binary.Write(h, binary.LittleEndian, ids)
			if got := hex.EncodeToString(h.Sum(nil)); len(ids) != want.N || got != want.SHA256 {
				t.Errorf("%d ids with SHA-256 %s; llama.cpp gives %d with %s", len(ids), got, want.N, want.SHA256)
			}
			if tok.Model() == "bert" {
				return
			}
			if back, err := tok.Decode(ids, false); err != nil || back != string(text) {
				t.Errorf("decoding does not give the text back (%v)", err)
			}
		})
	}
}

// TestLlamaRefSplits: for the pre-tokenizers whose pieces the reference
// records (llama.cpp's own unicode_regex_split, run by gen_llamaref.go), the
// pre-tokenizer cuts every text of the fuzz set and the 1 MB bench text into
// the same pieces. Ids cannot show every boundary: two splits give the same
// ids wherever the vocabulary has no token across the boundary.
func TestLlamaRefSplits(t *testing.T) {
	ref := readLlamaRef(t)
	if len(ref.Splits) == 0 {
		t.Fatal("the reference records no pieces")
	}
	text, err := os.ReadFile(sharedtest.Path(t, "tokenizer/bench_en_1mb.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lengths := func(stages []pattern, s string) []int {
		n := []int{}
		splitWith(stages, llamaSanitize(s), func(p string) { n = append(n, len(p)) })
		return n
	}
	for _, sp := range ref.Splits {
		t.Run(sp.Pre, func(t *testing.T) {
			stages := preTokenizers[sp.Pre].split
			if stages == nil {
				t.Fatalf("%s has no split patterns", sp.Pre)
			}
			bad := 0
			for i, want := range sp.Pieces {
				if got := lengths(stages, string(ref.Texts[i])); !slices.Equal(got, want) {
					if bad++; bad <= 5 {
						t.Errorf("text %d %q:\n got %v\nwant %v", i, ref.Texts[i], got, want)
					}
				}
			}
			if len(sp.Pieces) != len(ref.Texts) || bad > 0 {
				t.Errorf("%d of %d texts differ (%d recorded)", bad, len(ref.Texts), len(sp.Pieces))
			}
			var lens []int32
			for _, n := range lengths(stages, string(text)) {
				lens = append(lens, int32(n))
			}
			h := sha256.New()
			binary.Write(h, binary.LittleEndian, lens)
			if got := hex.EncodeToString(h.Sum(nil)); len(lens) != sp.Bench.N || got != sp.Bench.SHA256 {
				t.Errorf("bench text: %d pieces with SHA-256 %s; llama.cpp gives %d with %s", len(lens), got, sp.Bench.N, sp.Bench.SHA256)
			}
		})
	}
}

func BenchmarkEncodeKinds(b *testing.B) {
	text, err := os.ReadFile(sharedtest.Path(b, "tokenizer/bench_en_1mb.txt"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(text)
	for _, name := range []string{"qwen2", "llama-spm", "gemma3-synth", "gemma-4", "bert-bge"} {
		b.Run(name, func(b *testing.B) {
			tok := refVocab(b, name)
			dst := make([]int32, 0, 400000)
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				dst = tok.AppendEncode(dst[:0], s, false)
			}
		})
	}
}

// TestLlamaRefLive (SMOLGO_HEAVY=1) runs llama.cpp itself, through
// llamaref, on 2,000 fresh random texts under 17 vocabularies, with and without
// special tokens. SMOLGO_SEED picks another set.
func TestLlamaRefLive(t *testing.T) {
	if os.Getenv("SMOLGO_HEAVY") != "1" {
		t.Skip("set SMOLGO_HEAVY=1 to compare with llama.cpp on fresh random texts")
	}
	bin := filepath.Join(filepath.Dir(llamaCppDir(t)), "bin", "llamaref")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("llamaref: %v (run bash ../shared/tools/llamaref/build.sh)", err)
	}
	seed := uint64(1)
	if s := os.Getenv("SMOLGO_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	texts := randomTexts(seed, 2000)
	dir := t.TempDir()
	records := filepath.Join(dir, "texts.bin")
	var rec bytes.Buffer
	for _, s := range texts {
		binary.Write(&rec, binary.LittleEndian, uint32(len(s)))
		rec.WriteString(s)
	}
	if err := os.WriteFile(records, rec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"qwen2", "qwen35", "gpt-2", "mpt", "starcoder", "refact", "command-r",
		"falcon", "deepseek-coder", "deepseek-llm", "llama-spm", "phi-3", "baichuan", "gemma3-synth", "gemma-4", "bert-bge",
		"gpt-4o-synth"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(llamaCppDir(t), "models", "ggml-vocab-"+name+".gguf")
			if b, ok, err := refvocab.Synth(filepath.Dir(path), name); err != nil {
				t.Fatal(err)
			} else if ok {
				path = filepath.Join(dir, name+".gguf")
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tok := refVocab(t, name)
			for _, special := range []bool{false, true} {
				args := []string{"tokenize", "--model", path, "--texts", records}
				if special {
					args = append(args, "--special", "--add-special")
				}
				out, err := exec.Command(bin, args...).Output()
				if err != nil {
					t.Fatalf("llamaref %v: %v", args, err)
				}
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				if len(lines) != len(texts) {
					t.Fatalf("llamaref gave %d results for %d texts", len(lines), len(texts))
				}
				bad := 0
				for i, line := range lines {
					var r struct {
						Tokens []int32 `json:"tokens"`
					}
					if err := json.Unmarshal([]byte(line), &r); err != nil {
						t.Fatal(err)
					}
					if got := tok.Tokenize(texts[i], special, special); !slices.Equal(got, r.Tokens) && len(got)+len(r.Tokens) > 0 {
						if bad++; bad <= 5 {
							t.Errorf("special %v: %q\n got %v\nwant %v", special, texts[i], got, r.Tokens)
						}
					}
				}
				if bad > 0 {
					t.Errorf("special %v: %d of %d texts differ", special, bad, len(texts))
				}
			}
		})
	}
}

// randomTexts makes n texts of random characters from many scripts and
// classes, white space runs, digits, special-token strings and stray bytes
// (invalid UTF-8, or overlong forms and surrogates by chance).
func randomTexts(seed uint64, n int) []string {
	rng := rand.New(rand.NewPCG(seed, 42))
	ranges := [][2]rune{{0x20, 0x7E}, {0x20, 0x7E}, {0x20, 0x7E}, {0x9, 0xD}, {0x30, 0x39}, {0xA0, 0x2FF},
		{0x300, 0x36F}, {0x370, 0x52F}, {0x590, 0x6FF}, {0x900, 0xDFF}, {0xE00, 0xFFF}, {0x1000, 0x1FFF},
		{0x2000, 0x2BFF}, {0x2E80, 0x33FF}, {0x3400, 0x9FFF}, {0xA000, 0xD7FF}, {0xE000, 0xFFFD},
		{0x10000, 0x1FFFF}, {0x20000, 0x2FFFF}, {0x30000, 0x10FFFF}}
	specials := []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "<unk>", "[CLS]", "[SEP]",
		"[UNK]", "<bos>", "<eos>", "<|turn>", "<turn|>", "<fim_prefix>", "<|end|>", "<|user|>", "<0x41>", "▁", "  ", "\n\n"}
	texts := make([]string, n)
	for i := range texts {
		var sb strings.Builder
		for range rng.IntN(60) {
			switch k := rng.IntN(20); {
			case k == 0:
				sb.WriteString(specials[rng.IntN(len(specials))])
			case k == 1 && rng.IntN(4) == 0:
				sb.WriteByte(byte(0x80 + rng.IntN(0x80))) // invalid UTF-8, mostly
			case k < 3:
				sb.WriteString(strings.Repeat(" ", 1+rng.IntN(5)))
			default:
				r := ranges[rng.IntN(len(ranges))]
				c := r[0] + rune(rng.IntN(int(r[1]-r[0]+1)))
				if c >= 0xD800 && c <= 0xDFFF {
					c = 'x'
				}
				sb.WriteRune(c)
			}
		}
		texts[i] = sb.String()
	}
	return texts
}
