//go:build ignore

// gen_llamaref writes testdata/llamaref.json.gz, the reference ids that
// TestLlamaRef compares this package with: llama.cpp's tokenization
// (through ../../shared/tools/llamaref, which it builds) of a fuzz set of
// texts under several vocabularies, with and without special tokens, and
// the SHA-256 of the ids of ../../shared/tokenizer/bench_en_1mb.txt.
//
// For the pre-tokenizers in splitPres it also records llama.cpp's pieces
// themselves, which ids show only where the vocabulary has a token across
// a boundary: it compiles a small C++ driver (splitDriver) against the
// shipped libllama, whose unicode_regex_split is exported, and runs it with
// the regex list that llama-vocab.cpp gives the pre-tokenizer (read from
// the cloned source) on the fuzz set and the bench text.
//
// The vocabularies are llama.cpp's models/ggml-vocab-*.gguf and two that
// llama.cpp does not ship, built by refvocab.Synth: "gemma3-synth", Gemma
// 4's 262,144 tokens written as a SentencePiece vocabulary the way
// convert_hf_to_gguf.py writes Gemma 3 (model "llama", add_space_prefix
// false), with each merge result scored by its merge's rank; and
// "gpt-4o-synth", Qwen2's byte-level BPE vocabulary with tokenizer.ggml.pre
// "gpt-4o" (Phi-4-mini's split pattern on another model's tokens). The
// SHA-256 of each built file is stored so that the test can tell.
//
// Usage (from this folder; about a minute): go run gen_llamaref.go
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/smolgo/smolgo/tokenizer/internal/refvocab"
)

// vocabs are the vocabularies checked: the fuzz set goes through all of
// them, the bench text through those marked.
var vocabs = []struct {
	name  string
	bench bool
}{
	{"qwen2", true}, {"qwen35", false}, {"gpt-2", false}, {"mpt", false}, {"starcoder", false}, {"refact", false},
	{"command-r", false}, {"falcon", false}, {"deepseek-coder", false}, {"deepseek-llm", false},
	{"llama-spm", true}, {"phi-3", false}, {"baichuan", false}, {"gemma3-synth", true}, {"gemma-4", true}, {"bert-bge", true},
	{"gpt-4o-synth", true},
}

// Reference is the file's content.
type Reference struct {
	Note   string            `json:"note"`
	Synth  map[string]string `json:"synth_sha256"` // built vocabulary → SHA-256 of its bytes
	Texts  [][]byte          `json:"texts"`        // base64
	Vocabs []VocabRef        `json:"vocabs"`
	Bench  map[string]Hash   `json:"bench"` // vocabulary → ids of bench_en_1mb.txt
	Splits []SplitRef        `json:"splits"`
}

// SplitRef holds llama.cpp's pre-tokenizer pieces for one tokenizer.ggml.pre:
// the byte length of each piece of every text (after llama.cpp's reading of
// invalid UTF-8), and the hash of the piece lengths of the bench text.
type SplitRef struct {
	Pre     string   `json:"pre"`
	Regexes []string `json:"regexes"` // as llama-vocab.cpp lists them
	Pieces  [][]int  `json:"pieces"`
	Bench   Hash     `json:"bench"`
}

// splitPres are the pre-tokenizers whose pieces are recorded, each with the
// llama-vocab.cpp case label its regex list is under.
var splitPres = []struct{ pre, label string }{
	{"gpt-4o", "LLAMA_VOCAB_PRE_TYPE_GPT4O"},
}

// VocabRef holds llama.cpp's ids for every text, without special tokens
// (Plain: add_special and parse_special off, as llama.cpp's own tokenizer
// tests) and with them (Special: both on, what llama-cli does to a prompt).
type VocabRef struct {
	Name    string    `json:"name"`
	Plain   [][]int32 `json:"plain"`
	Special [][]int32 `json:"special"`
}

// Hash identifies a list of ids (or piece lengths): their count and the
// SHA-256 of them as little-endian int32s.
type Hash struct {
	N      int    `json:"n"`
	SHA256 string `json:"sha256"`
}

func main() {
	out, err := exec.Command("bash", "../../shared/tools/llamaref/build.sh").Output()
	if err != nil {
		log.Fatalf("building llamaref: %v", err)
	}
	bin := strings.TrimSpace(string(out))
	models := filepath.Join(filepath.Dir(filepath.Dir(bin)), "llama.cpp", "models")
	tmp, err := os.MkdirTemp("", "gen_llamaref")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	ref := Reference{
		Note:  "made by gen_llamaref.go with llama.cpp " + version(bin) + "; do not edit",
		Synth: map[string]string{},
		Texts: fuzzTexts(),
		Bench: map[string]Hash{},
	}
	records := filepath.Join(tmp, "texts.bin")
	var rec bytes.Buffer
	for _, t := range ref.Texts {
		binary.Write(&rec, binary.LittleEndian, uint32(len(t)))
		rec.Write(t)
	}
	if err := os.WriteFile(records, rec.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	for _, v := range vocabs {
		path := filepath.Join(models, "ggml-vocab-"+v.name+".gguf")
		if b, ok, err := refvocab.Synth(models, v.name); err != nil {
			log.Fatal(err)
		} else if ok {
			path = filepath.Join(tmp, v.name+".gguf")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				log.Fatal(err)
			}
			sum := sha256.Sum256(b)
			ref.Synth[v.name] = hex.EncodeToString(sum[:])
		}
		vr := VocabRef{Name: v.name}
		vr.Plain = tokenizeMany(bin, path, records, len(ref.Texts))
		vr.Special = tokenizeMany(bin, path, records, len(ref.Texts), "--special", "--add-special")
		ref.Vocabs = append(ref.Vocabs, vr)
		if v.bench {
			ids := tokenizeFile(bin, path, "../../shared/tokenizer/bench_en_1mb.txt")
			ref.Bench[v.name] = hashIDs(ids)
		}
		log.Printf("%s done", v.name)
	}
	driver := buildSplitDriver(bin, tmp)
	bench, err := os.ReadFile("../../shared/tokenizer/bench_en_1mb.txt")
	if err != nil {
		log.Fatal(err)
	}
	for _, sp := range splitPres {
		res := regexList(filepath.Join(filepath.Dir(models), "src", "llama-vocab.cpp"), sp.label)
		all := runSplit(driver, res, append(slices.Clone(ref.Texts), bench))
		var lens []int32
		for _, n := range all[len(all)-1] {
			lens = append(lens, int32(n))
		}
		ref.Splits = append(ref.Splits, SplitRef{Pre: sp.pre, Regexes: res, Pieces: all[:len(all)-1], Bench: hashIDs(lens)})
		log.Printf("%s pieces done", sp.pre)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	enc := json.NewEncoder(zw)
	if err := enc.Encode(ref); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("testdata/llamaref.json.gz", buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote testdata/llamaref.json.gz: %d texts, %d vocabularies, %d bytes", len(ref.Texts), len(ref.Vocabs), buf.Len())
}

// splitDriver is a C++ program that prints the pieces llama.cpp's
// unicode_regex_split makes of each text record on stdin (4-byte
// little-endian length, bytes), given the regexes as arguments: one line
// of space-separated byte lengths per record.
const splitDriver = `#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>
std::vector<std::string> unicode_regex_split(const std::string & text, const std::vector<std::string> & regex_exprs, bool byte_encode);
int main(int argc, char ** argv) {
    std::vector<std::string> exprs(argv + 1, argv + argc);
    uint32_t n;
    while (fread(&n, 4, 1, stdin) == 1) {
        std::string s(n, ' ');
        if (n > 0 && fread(&s[0], 1, n, stdin) != n) return 1;
        std::vector<std::string> pieces = unicode_regex_split(s, exprs, false);
        for (size_t i = 0; i < pieces.size(); i++) printf(i ? " %zu" : "%zu", pieces[i].size());
        putchar('\n');
    }
    return 0;
}
`

// buildSplitDriver compiles splitDriver with g++ against the libllama that
// llamaref links (the npm package's shipped library) and returns its path.
func buildSplitDriver(bin, dir string) string {
	libDir := filepath.Join(filepath.Dir(filepath.Dir(bin)), "npm", "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
	libs, _ := filepath.Glob(filepath.Join(libDir, "libllama.v*.so"))
	if len(libs) != 1 {
		log.Fatalf("want one libllama.v*.so in %s, found %v", libDir, libs)
	}
	src := filepath.Join(dir, "split.cc")
	if err := os.WriteFile(src, []byte(splitDriver), 0o644); err != nil {
		log.Fatal(err)
	}
	out := filepath.Join(dir, "split")
	cmd := exec.Command("g++", "-O1", "-o", out, src, "-L"+libDir, "-l:"+filepath.Base(libs[0]), "-Wl,-rpath,"+libDir)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("compiling the split driver: %v", err)
	}
	return out
}

// regexList reads the regex list that llama-vocab.cpp assigns under a case
// label: the string literals of the regex_exprs = { ... } that follows it,
// comment lines skipped.
func regexList(vocabCpp, label string) []string {
	src, err := os.ReadFile(vocabCpp)
	if err != nil {
		log.Fatal(err)
	}
	k := bytes.Index(src, []byte("case "+label+":"))
	if k < 0 {
		log.Fatalf("%s: no case %s", vocabCpp, label)
	}
	var res []string
	in := false
	for _, line := range strings.Split(string(src[k:]), "\n")[1:] {
		l := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(l, "regex_exprs = {"):
			in = true
		case !in || strings.HasPrefix(l, "//"):
		case strings.HasPrefix(l, "};"):
			if len(res) == 0 {
				log.Fatalf("%s: no regexes under %s", vocabCpp, label)
			}
			return res
		case strings.HasPrefix(l, `"`):
			re, err := strconv.Unquote(strings.TrimSuffix(l, ","))
			if err != nil {
				log.Fatalf("%s: %s: %v", vocabCpp, l, err)
			}
			res = append(res, re)
		default:
			log.Fatalf("%s: unexpected line under %s: %s", vocabCpp, label, l)
		}
	}
	log.Fatalf("%s: regex list under %s does not end", vocabCpp, label)
	return nil
}

// runSplit runs the split driver on texts and returns each one's piece
// lengths.
func runSplit(driver string, regexes []string, texts [][]byte) [][]int {
	var rec bytes.Buffer
	for _, t := range texts {
		binary.Write(&rec, binary.LittleEndian, uint32(len(t)))
		rec.Write(t)
	}
	cmd := exec.Command(driver, regexes...)
	cmd.Stdin = &rec
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("split driver: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		log.Fatalf("split driver: %d results for %d texts", len(lines), len(texts))
	}
	all := make([][]int, len(lines))
	for i, line := range lines {
		all[i] = []int{}
		for _, f := range strings.Fields(line) {
			n, err := strconv.Atoi(f)
			if err != nil {
				log.Fatalf("split driver: %q", line)
			}
			all[i] = append(all[i], n)
		}
	}
	return all
}

func version(bin string) string {
	out, _ := exec.Command(bin, "help").Output()
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// tokenizeMany runs llamaref tokenize --texts and returns one id list per text.
func tokenizeMany(bin, model, records string, n int, flags ...string) [][]int32 {
	cmd := exec.Command(bin, append([]string{"tokenize", "--model", model, "--texts", records}, flags...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("%s %v: %v", model, flags, err)
	}
	var all [][]int32
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var line struct {
			Tokens []int32 `json:"tokens"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			log.Fatalf("%s: %v", model, err)
		}
		if line.Tokens == nil {
			line.Tokens = []int32{}
		}
		all = append(all, line.Tokens)
	}
	if len(all) != n {
		log.Fatalf("%s: %d results for %d texts", model, len(all), n)
	}
	return all
}

// tokenizeFile runs llamaref tokenize --text-file (no special tokens).
func tokenizeFile(bin, model, file string) []int32 {
	out, err := exec.Command(bin, "tokenize", "--model", model, "--text-file", file).Output()
	if err != nil {
		log.Fatalf("%s: %v", model, err)
	}
	var r struct {
		Tokens []int32 `json:"tokens"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		log.Fatalf("%s: %v", model, err)
	}
	return r.Tokens
}

func hashIDs(ids []int32) Hash {
	h := sha256.New()
	binary.Write(h, binary.LittleEndian, ids)
	return Hash{N: len(ids), SHA256: hex.EncodeToString(h.Sum(nil))}
}

// fuzzTexts returns the fuzz set that gen_llamaref.go tokenizes with
// llama.cpp: random Unicode from many scripts and classes (letters of
// Unicode 15.1 and 16.0, marks, unassigned code points, emoji, private
// use), runs of every kind of white space, numbers, code, the special-token
// strings of the vocabularies under test mixed with text, contractions and
// a few invalid UTF-8 byte sequences. It is deterministic; the reference
// file stores the texts themselves, so a change here only matters when the
// file is made again.
func fuzzTexts() [][]byte {
	rng := rand.New(rand.NewPCG(20261127, 151936))
	var texts [][]byte
	add := func(s string) { texts = append(texts, []byte(s)) }

	for _, s := range []string{"", " ", "  ", "\n", "\t", "\r\n", "a", "▁", " ▁ ", "##ing", "'s", "Hello world", " Hello world",
		"Hello  world", "hello\n\nworld", "  leading and trailing  ", "ALL CAPS 'S 'LL 'Re n'T", "don't we'll they're I've you'd",
		"'ſ 'K 'İ", "ﬁne ﬀ Ⅻ ½ ² ³ ¹", "Ünïcödé nâïve café résumé", "İstanbul ß ΣΑΣ Straße", "e\u0301 a\u0308 o\u0303\u0323"} {
		add(s)
	}

	// Random characters from weighted ranges.
	ranges := [][2]rune{
		{0x20, 0x7E}, {0x20, 0x7E}, {0x20, 0x7E}, {0x30, 0x39}, {0xA0, 0xFF}, {0x100, 0x24F}, {0x250, 0x2FF},
		{0x300, 0x36F}, {0x370, 0x3FF}, {0x400, 0x4FF}, {0x530, 0x58F}, {0x590, 0x5FF}, {0x600, 0x6FF},
		{0x900, 0x97F}, {0xE00, 0xE7F}, {0x1100, 0x11FF}, {0x1C80, 0x1C8F}, {0x1E00, 0x1EFF}, {0x2000, 0x206F},
		{0x2070, 0x209F}, {0x20A0, 0x20CF}, {0x2100, 0x218F}, {0x2190, 0x22FF}, {0x2500, 0x257F}, {0x2FF0, 0x2FFF},
		{0x3000, 0x303F}, {0x3040, 0x30FF}, {0x31E0, 0x31EF}, {0x4E00, 0x9FFF}, {0xA7C0, 0xA7DF}, {0xAC00, 0xD7A3},
		{0xE000, 0xE0FF}, {0xF900, 0xFAFF}, {0xFB00, 0xFB4F}, {0xFE00, 0xFE0F}, {0xFF00, 0xFFEF}, {0xFFF0, 0xFFFD},
		{0x10000, 0x1007F}, {0x10D40, 0x10D8F}, {0x1D400, 0x1D7FF}, {0x1F300, 0x1F6FF}, {0x1F900, 0x1FAFF},
		{0x20000, 0x2A6DF}, {0x2EBF0, 0x2EE5F}, {0xE0000, 0xE007F}, {0x10FFF0, 0x10FFFF},
	}
	randRune := func() rune {
		r := ranges[rng.IntN(len(ranges))]
		return r[0] + rune(rng.IntN(int(r[1]-r[0]+1)))
	}
	for range 90 {
		var sb strings.Builder
		for range 1 + rng.IntN(40) {
			if rng.IntN(6) == 0 {
				sb.WriteByte(' ')
			}
			sb.WriteRune(randRune())
		}
		add(sb.String())
	}

	// Words and runs of white space.
	spaces := []string{" ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\u00a0", "\u3000",
		"\u2028", "\u2009", "\u200b", "\u0085", "\v", "\f", " \t \n", "\n    ", "        "}
	words := []string{"the", "The", "quick", "brown", "fox", "jumps", "über", "naïve", "東京", "서울", "мир", "λόγος",
		"😀", "🚀🔥", "co-operate", "e-mail", "C++", "x_y", "_init_", "ok?!", "...", "—", "«quote»", "3.14", "2024"}
	for range 60 {
		var sb strings.Builder
		for range 1 + rng.IntN(10) {
			if rng.IntN(2) == 0 {
				sb.WriteString(spaces[rng.IntN(len(spaces))])
			}
			sb.WriteString(words[rng.IntN(len(words))])
		}
		if rng.IntN(3) == 0 {
			sb.WriteString(spaces[rng.IntN(len(spaces))])
		}
		add(sb.String())
	}

	// Numbers.
	digitSets := []string{"0123456789", "٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９", "²³¹⁴⁵", "ⅠⅡⅢⅣⅫ", "①②③"}
	for range 30 {
		var sb strings.Builder
		for range 1 + rng.IntN(5) {
			set := []rune(digitSets[rng.IntN(len(digitSets))])
			if rng.IntN(3) > 0 {
				set = []rune(digitSets[0])
			}
			for range 1 + rng.IntN(12) {
				sb.WriteRune(set[rng.IntN(len(set))])
			}
			sb.WriteString([]string{" ", ",", ".", "", " + ", "x", "-", "e"}[rng.IntN(8)])
		}
		add(sb.String())
	}

	// Code.
	for _, s := range []string{
		"func main() {\n\tfmt.Println(\"hi\")\n}\n",
		"def f(x):\n    return x**2  # square\n",
		"for (int i = 0; i < n; ++i) { a[i] += b[i] * 2; }",
		"if x != nil && len(y) >= 3 || z == '\\n' {",
		"SELECT * FROM t WHERE id = 42 AND name LIKE '%a_b%';",
		"<html><body class=\"x\">&nbsp;&lt;tag&gt;</body></html>",
		"const re = /^[a-z0-9_-]{3,16}$/gi; // regex",
		"x = {'a': [1, 2.5e-3, None], \"b\": (True, False)}",
		"    \n\t\t  \r\n// end\n\n\n",
		"#include <stdio.h>\nint main(void){return 0;}",
		"$ echo $HOME | grep -v '^#' > /dev/null 2>&1",
		"λx.λy.x y ≠ ∀x∃y: x ≤ y → ¬(y < x)",
		"```go\nvar s = `raw`\n```",
	} {
		add(s)
	}

	// Special-token strings of the vocabularies under test, with text.
	specials := []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "<unk>", "[CLS]", "[SEP]",
		"[UNK]", "[MASK]", "[PAD]", "<bos>", "<eos>", "<pad>", "<mask>", "<|turn>", "<turn|>", "<|tool_call>", "<|channel>",
		"<fim_prefix>", "<fim_middle>", "<|user|>", "<|assistant|>", "<|end|>", "[PAD151646]", "[PAD32011]",
		"<BOS_TOKEN>", "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<0x41>", "<unused5>", "<|im_", "|>",
		"<|im_start|>|>", "<s><s>", "</s></s>", "[CLS][SEP]", "<|endoftext|><|endoftext|>", "<|\"|>", "<|think|>"}
	for range 60 {
		var sb strings.Builder
		for range 1 + rng.IntN(6) {
			switch rng.IntN(3) {
			case 0:
				sb.WriteString(specials[rng.IntN(len(specials))])
			case 1:
				sb.WriteString(spaces[rng.IntN(len(spaces))])
				sb.WriteString(words[rng.IntN(len(words))])
			default:
				sb.WriteString(specials[rng.IntN(len(specials))])
				sb.WriteString(spaces[rng.IntN(3)])
			}
		}
		add(sb.String())
	}

	// Invalid UTF-8 (llama.cpp reads a byte it cannot decode as U+FFFD).
	for _, s := range []string{"\xff", "a\x80b", "\xc3", "\xe2\x82", "caf\xc3", "\xf0\x9f\x98", "x\xfe\xffy",
		"\xc3\xa9\xa9", "ok \xe4\xb8 done", "\x80\x80\x80 \xbf"} {
		add(s)
	}

	// Long texts (the long-chunk code paths).
	for range 6 {
		var sb strings.Builder
		for sb.Len() < 600+rng.IntN(1500) {
			switch rng.IntN(4) {
			case 0:
				sb.WriteRune(randRune())
			case 1:
				sb.WriteString(spaces[rng.IntN(len(spaces))])
			default:
				sb.WriteString(words[rng.IntN(len(words))])
			}
		}
		add(sb.String())
	}
	add(strings.Repeat("a", 300))
	add(strings.Repeat(" ", 200) + "x")
	add(strings.Repeat("ab", 150))
	add(strings.Repeat("😀", 80))
	add(strings.Repeat("東京", 100))

	// The o200k (gpt-4o) pattern's corners: words by case (A-Z, a-z and
	// letters outside ASCII, which count as both), contractions after
	// words, marks, runs of three digits, slashes after punctuation and
	// newlines, and Phi-4-mini's chat markers.
	for _, s := range []string{
		"HelloWorld XMLHttpRequest iPhone McDonald's", "ÀBC ÉCOLE École éCOLE ÀbC aÀB", "HELLOé'S CAFÉ's ΑΒΓ δ ΣΑΣ σας",
		"ǅemal ǈ ǋ ᾈ Ⅻx xⅫ", "ʰʲ ʰA Aʰ aʰB", "I'M I'm YOU'LL you'Ll WE'VE they'RE it'S 'tis 's' ''", "x'ſ X'ſ é's É'S 東京's",
		"e\u0301 E\u0301X a\u0308\u0304b \u0301x ́", "1234567 12 3 ١٢٣٤ ²³⁴⁵ 1.5e-10", "a/b //c \n/x !\n/\n/y :/\r\n/ ///\n",
		"http://example.com/a/b?q=1 /usr/bin/ ~/.config/", "  /x\t/y\n\n/z", "<|system|>Hi<|end|><|user|>Q<|end|><|assistant|>",
		"<|tool|>[]<|/tool|> <|tool_call|>[{\"name\": \"f\"}]<|/tool_call|> <|tool_response|>",
		"ΆΈ άέ Ωmega ωMEGA Ωω ωΩ", "ÄÖÜäöüß ẞ İı", "ひらがなカタカナ 漢字ABC abc漢字 한국어Text",
		"\u00a0word \u3000word \u2028x \u0085y \v\fz", "a\u200bb \u200dc d\ufeffe", "'\n'", "A'", "É'", "A'B", "AB'LL",
	} {
		add(s)
	}
	return texts
}
