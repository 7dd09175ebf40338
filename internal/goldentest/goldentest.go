// Package goldentest compares a model's logits with llama.cpp's golden
// references in ../shared (golden/ and golden-families/, schema
// smolgo-golden-logits/1): the whole prompt in one pass, teacher-forced
// decode steps, then greedy decoding from the model's own argmax. The
// smollm3 and models packages' golden tests share it.
package goldentest

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

// Row is one position's reference: the token fed, llama.cpp's argmax and
// its margin over the runner-up, and the logits.
type Row struct {
	Pos    int       `json:"pos"`
	Token  int32     `json:"token"`
	Argmax int       `json:"argmax"`
	Margin float64   `json:"margin"`
	Logits []float32 `json:"logits"`
}

// Prompt is one prompt's reference: every prefill row and the decode steps.
type Prompt struct {
	Name    string  `json:"name"`
	Tokens  []int32 `json:"tokens"`
	Prefill []Row   `json:"prefill"`
	Decode  []Row   `json:"decode"`
}

// File is one model's reference logits.
type File struct {
	Schema  string   `json:"schema"`
	Model   string   `json:"model"`
	SHA256  string   `json:"model_sha256"` // of the model file llama.cpp ran
	NVocab  int      `json:"n_vocab"`
	Prompts []Prompt `json:"prompts"`
}

// Tolerance bounds the difference from the reference over a model's file.
type Tolerance struct {
	MaxAbs float64 `json:"max_abs"`
	RMS    float64 `json:"rms"`
}

var (
	selfcheckOnce sync.Once
	selfcheck     struct {
		Models map[string]struct {
			Tolerance Tolerance `json:"tolerance"`
		} `json:"models"`
	}
	selfcheckErr error
)

// SelfcheckTolerance returns golden/selfcheck.json's tolerance for a model
// of ../shared/golden (derived from llama.cpp's own self-consistency).
func SelfcheckTolerance(t testing.TB, model string) Tolerance {
	t.Helper()
	path := sharedtest.Path(t, "golden/selfcheck.json")
	selfcheckOnce.Do(func() {
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &selfcheck)
		}
		selfcheckErr = err
	})
	if selfcheckErr != nil {
		t.Fatalf("selfcheck.json: %v", selfcheckErr)
	}
	tol, ok := selfcheck.Models[model]
	if !ok || tol.Tolerance.MaxAbs <= 0 || tol.Tolerance.RMS <= 0 {
		t.Fatalf("selfcheck.json has no tolerance for %s", model)
	}
	return tol.Tolerance
}

// VisionTolerance is golden/README.md's rule applied to the logits of
// ../shared/golden-vision for a projector (a file stem: gemma3, idefics3,
// qwen2vl, qwen25vl): twice the worst difference llama.cpp showed with
// itself (golden-vision/selfcheck.json: another CPU variant) over the
// projector's runs, max and RMS each rounded up to one significant digit.
func VisionTolerance(t testing.TB, proj string) Tolerance {
	t.Helper()
	var sc struct {
		Runs map[string]struct {
			Logits [2]float64 `json:"logits"`
		} `json:"runs"`
	}
	b, err := os.ReadFile(sharedtest.Path(t, "golden-vision/selfcheck.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("golden-vision/selfcheck.json: %v", err)
	}
	var w Tolerance
	for name, r := range sc.Runs {
		if strings.HasPrefix(name, proj+"-") {
			w.MaxAbs, w.RMS = max(w.MaxAbs, r.Logits[0]), max(w.RMS, r.Logits[1])
		}
	}
	if w.MaxAbs <= 0 || w.RMS <= 0 {
		t.Fatalf("golden-vision/selfcheck.json has no logits runs of %s", proj)
	}
	up := func(x float64) float64 {
		p := math.Pow(10, math.Floor(math.Log10(x)))
		return math.Ceil(x/p-1e-9) * p
	}
	return Tolerance{MaxAbs: up(2 * w.MaxAbs), RMS: up(2 * w.RMS)}
}

// Load reads the gzip'ed reference at rel (under ../shared).
func Load(t testing.TB, rel string) File {
	t.Helper()
	return parse(t, rel, sharedtest.ReadGzip(t, rel))
}

// LoadFile reads a gzip'ed reference kept in the repository (a package's
// testdata), in the same schema.
func LoadFile(t testing.TB, path string) File {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return parse(t, path, b)
}

func parse(t testing.TB, name string, b []byte) File {
	t.Helper()
	var g File
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if g.Schema != "smolgo-golden-logits/1" || len(g.Prompts) == 0 {
		t.Fatalf("%s: schema %q, %d prompts", name, g.Schema, len(g.Prompts))
	}
	return g
}

// Diff accumulates |ours - golden| over many logits.
type Diff struct {
	MaxAbs float64
	SumSq  float64
	N      int
	Worst  string // where MaxAbs was seen
}

// Add compares got with want.
func (d *Diff) Add(where string, got, want []float32) {
	for i := range want {
		e := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if e > d.MaxAbs {
			d.MaxAbs, d.Worst = e, fmt.Sprintf("%s logit %d (got %v, want %v)", where, i, got[i], want[i])
		}
		d.SumSq += e * e
	}
	d.N += len(want)
}

// Merge adds o's counts to d.
func (d *Diff) Merge(o Diff) {
	if o.MaxAbs > d.MaxAbs {
		d.MaxAbs, d.Worst = o.MaxAbs, o.Worst
	}
	d.SumSq += o.SumSq
	d.N += o.N
}

// RMS is the root mean square of the differences.
func (d *Diff) RMS() float64 { return math.Sqrt(d.SumSq / float64(max(1, d.N))) }

// Argmax is the index of the largest value (the first of equals).
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// Open opens the model file at path with engine.Open for the test, which
// closes it at its end, and returns it with its parts (family.Of: Forward,
// the weights), failing the test when the file does not load or is not a
// llama family's.
func Open(t testing.TB, path string, opts ...engine.Option) (*engine.Model, *family.Parts) {
	t.Helper()
	m, err := engine.Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	p, ok := family.Of(m)
	if !ok {
		t.Fatalf("%s: not a llama family's model", path)
	}
	return m, p
}

// CheckPrompt runs one reference prompt through m: the whole prompt in one
// Forward (every row the reference holds: all of them, or some positions
// of a long prompt), the decode steps fed the golden tokens (teacher
// forcing), then greedy decoding from m's own argmax, which must pick
// llama.cpp's tokens for as long as every golden margin on the way exceeds
// twice the max-abs tolerance. It returns the differences of the first two.
func CheckPrompt(t testing.TB, m *family.Parts, p Prompt, tol Tolerance) Diff {
	t.Helper()
	ctx := context.Background()
	var d Diff
	cache, err := m.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	V := m.Weights().Config.Vocab
	logits, err := m.Forward(ctx, cache, p.Tokens, 0, true)
	if err != nil {
		t.Fatalf("%s prefill: %v", p.Name, err)
	}
	if len(logits) != len(p.Tokens)*V {
		t.Fatalf("%s: %d logits for %d tokens", p.Name, len(logits), len(p.Tokens))
	}
	if err := checkRows(p, V); err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	for _, r := range p.Prefill {
		row := logits[r.Pos*V : (r.Pos+1)*V]
		d.Add(fmt.Sprintf("%s prefill pos %d", p.Name, r.Pos), row, r.Logits)
		if r.Margin > 2*tol.MaxAbs && Argmax(row) != r.Argmax {
			t.Errorf("%s prefill pos %d: argmax %d, golden %d (margin %g)", p.Name, r.Pos, Argmax(row), r.Argmax, r.Margin)
		}
	}
	lastPrefill := append([]float32(nil), logits[(len(p.Tokens)-1)*V:]...)
	// A recurrent model's cache comes back here for the greedy run only
	// from a checkpoint (a no-op for attention).
	if err := cache.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Decode {
		logits, err := m.Forward(ctx, cache, []int32{r.Token}, r.Pos, false)
		if err != nil {
			t.Fatalf("%s decode pos %d: %v", p.Name, r.Pos, err)
		}
		d.Add(fmt.Sprintf("%s decode pos %d", p.Name, r.Pos), logits, r.Logits)
	}
	if d.MaxAbs > tol.MaxAbs {
		t.Logf("%s: worst at %s", p.Name, d.Worst)
	}
	// Free-running greedy decode from our own argmax, resuming from the
	// prompt with a truncated cache.
	if err := cache.Truncate(len(p.Tokens)); err != nil {
		t.Fatal(err)
	}
	prev, margin := lastPrefill, p.Prefill[len(p.Prefill)-1].Margin
	for k, r := range p.Decode {
		if margin <= 2*tol.MaxAbs {
			break // a near tie: llama.cpp's own variants may choose either way
		}
		if tok := int32(Argmax(prev)); tok != r.Token {
			t.Errorf("%s greedy step %d: token %d, golden %d (margin %g)", p.Name, k, tok, r.Token, margin)
			break
		}
		logits, err := m.Forward(ctx, cache, []int32{r.Token}, r.Pos, false)
		if err != nil {
			t.Fatal(err)
		}
		prev, margin = logits, r.Margin
	}
	return d
}

// checkRows checks that p's prefill rows are at increasing positions of
// the prompt, the last at its last token (whose row the greedy decode
// starts from): every position, or a subset of them (a long prompt's
// reference kept small, as synth_golden.py --long-stride writes); and that
// every row, decode steps included, has V logits.
func checkRows(p Prompt, V int) error {
	n := len(p.Tokens)
	if n == 0 || len(p.Prefill) == 0 || len(p.Prefill) > n {
		return fmt.Errorf("%d golden prefill rows for %d tokens", len(p.Prefill), n)
	}
	for i, r := range p.Prefill {
		if r.Pos < 0 || r.Pos >= n || (i > 0 && r.Pos <= p.Prefill[i-1].Pos) {
			return fmt.Errorf("golden prefill row %d is at position %d (prompt of %d tokens, rows in increasing order)", i, r.Pos, n)
		}
		if len(r.Logits) != V {
			return fmt.Errorf("golden prefill row at position %d has %d logits, want %d", r.Pos, len(r.Logits), V)
		}
	}
	for _, r := range p.Decode {
		if len(r.Logits) != V {
			return fmt.Errorf("golden decode row at position %d has %d logits, want %d", r.Pos, len(r.Logits), V)
		}
	}
	if last := p.Prefill[len(p.Prefill)-1].Pos; last != n-1 {
		return fmt.Errorf("the last golden prefill row is at position %d, not the prompt's last (%d)", last, n-1)
	}
	return nil
}

// CheckModel runs every prompt of g through m (CheckPrompt) but those skip
// names (nil: none), logs each prompt's and the model's differences, and
// fails the test when the model's max abs or RMS exceeds tol.
func CheckModel(t testing.TB, name string, m *family.Parts, g File, tol Tolerance, skip func(prompt string) bool) Diff {
	t.Helper()
	if got := m.Weights().Config.Vocab; got != g.NVocab {
		t.Fatalf("%s: vocab %d, golden %d", name, got, g.NVocab)
	}
	var all Diff
	for _, p := range g.Prompts {
		if skip != nil && skip(p.Name) {
			t.Logf("%s: skipped (SMOLGO_HEAVY=1 runs it)", p.Name)
			continue
		}
		d := CheckPrompt(t, m, p, tol)
		t.Logf("%-8s max abs %.4g  RMS %.3g  (%d logits)", p.Name, d.MaxAbs, d.RMS(), d.N)
		all.Merge(d)
	}
	t.Logf("%s: max abs %.4g (tolerance %g), RMS %.3g (tolerance %g)", name, all.MaxAbs, tol.MaxAbs, all.RMS(), tol.RMS)
	if all.MaxAbs > tol.MaxAbs || all.RMS() > tol.RMS {
		t.Errorf("%s: max abs %.4g / RMS %.3g exceed the tolerance %g / %g (worst at %s)", name, all.MaxAbs, all.RMS(), tol.MaxAbs, tol.RMS, all.Worst)
	}
	return all
}

// WriteSynth writes synth's preset in type typ (F32, Q8_0, Q4_K_M, ...) to
// path, and fails unless it is the file a reference was computed on (its
// SHA-256 is wantSHA): the references of the families that llamaref synth
// cannot write (testdata/synth_golden.py) are llama.cpp's logits on synth's
// files, which the tests write again.
func WriteSynth(t testing.TB, preset, typ, path, wantSHA string) {
	t.Helper()
	m, err := synth.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Mix: synth.Mix(typ)}); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(buf.Bytes()); hex.EncodeToString(sum[:]) != wantSHA {
		t.Fatalf("synth's %s %s is not the file of the reference (SHA-256 %x, want %s): regenerate the reference with internal/goldentest/testdata/synth_golden.py", preset, typ, sum, wantSHA)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// synthOnly are the tiny family models that ../shared/golden-families does
// not hold: SmolLM2's file format (a llama file with SmolLM2's
// pre-tokenizer and ChatML template), the architectures llama.cpp's
// writer has no synth for (granite, phi3, and the mixtures of experts
// mixtral, a llama file with experts, qwen2moe, granitemoe and lfm2moe;
// their golden logits are in their packages' testdata), and a
// Qwen3-Embedding file (qwen3 with pooling_type last).
var synthOnly = map[string]bool{"smollm2-tiny": true, "granite-tiny": true, "phi3-tiny": true, "qwen3-embed-tiny": true,
	"mixtral-tiny": true, "qwen2moe-tiny": true, "granitemoe-tiny": true, "lfm2moe-tiny": true}

// inNext are the tiny models of ../shared/golden-next.
var inNext = map[string]bool{"qwen3moe-tiny": true, "gptoss-tiny": true, "lfm2-tiny": true, "qwen35-tiny": true, "granitehybrid-tiny": true}

// TinyModel returns the file of a tiny family model named STEM-TYPE
// ("gemma3-tiny-Q4_K_M"): ../shared/golden-families' file, or, for the
// stems it lacks, golden-next's file (the mixtures of experts and hybrids)
// or the synth preset of that name written in that type into the test's
// temporary folder.
func TinyModel(t testing.TB, name string) string {
	t.Helper()
	cut := strings.LastIndexByte(name, '-')
	if cut < 0 {
		t.Fatalf("tiny model %q: want STEM-TYPE", name)
	}
	stem, typ := name[:cut], name[cut+1:]
	if inNext[stem] {
		return sharedtest.Path(t, "golden-next/models/"+name+".gguf")
	}
	if !synthOnly[stem] {
		return sharedtest.Path(t, "golden-families/models/"+name+".gguf")
	}
	m, err := synth.Preset(stem)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Mix: synth.Mix(typ), Workers: 2}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// selfcheckRuns is the schema of golden-next/selfcheck.json and of the
// PRESET-selfcheck.json files synth_golden.py --selfcheck writes: per model
// stem, per type, per rerun ("variant", "batch7"), per prompt, [max |diff|,
// RMS diff, decode tokens differing].
type selfcheckRuns struct {
	Models map[string]map[string]map[string][][]float64 `json:"models"`
}

// CheckSynthGolden compares the model of a synth preset with llama.cpp's
// references that testdata/synth_golden.py --moe wrote into dir (a
// family's testdata: PRESET-TYPE.json.gz and PRESET-selfcheck.json), in
// F32, Q8_0 and Q4_K_M: each file written again here byte for byte (the
// SHA-256 the reference names), then every prompt with the whole prompt in
// one pass and in batches of 7 (CheckModel), within the tolerance the
// selfcheck file sets (SelfcheckFileTolerance).
func CheckSynthGolden(t *testing.T, preset, dir string) {
	tmp := t.TempDir()
	for _, typ := range []string{"F32", "Q8_0", "Q4_K_M"} {
		name := preset + "-" + typ
		path := filepath.Join(tmp, name+".gguf")
		g := LoadFile(t, filepath.Join(dir, name+".json.gz"))
		WriteSynth(t, preset, typ, path, g.SHA256)
		tol := SelfcheckFileTolerance(t, filepath.Join(dir, preset+"-selfcheck.json"), preset, typ)
		for _, batch := range []int{1024, 7} {
			t.Run(typ+"/batch"+strconv.Itoa(batch), func(t *testing.T) {
				_, m := Open(t, path, engine.WithThreads(2), engine.WithBatchSize(batch))
				CheckModel(t, name, m, g, tol, nil)
			})
		}
	}
}

var (
	nextOnce sync.Once
	next     selfcheckRuns
	nextErr  error
)

// NextTolerance returns the tolerance of golden-next's model stem in type
// typ ("qwen3moe-tiny", "Q8_0"), by golden/README.md's rule: twice the
// worst difference llama.cpp showed with itself in golden-next/selfcheck.json
// (another CPU variant, the prompt in batches of 7; every prompt), rounded
// up to one significant digit.
func NextTolerance(t testing.TB, stem, typ string) Tolerance {
	t.Helper()
	path := sharedtest.Path(t, "golden-next/selfcheck.json")
	nextOnce.Do(func() {
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &next)
		}
		nextErr = err
	})
	if nextErr != nil {
		t.Fatalf("golden-next/selfcheck.json: %v", nextErr)
	}
	return selfcheckTolerance(t, "golden-next/selfcheck.json", next, stem, typ)
}

// SelfcheckFileTolerance returns the tolerance of model stem in type typ
// that a selfcheck file kept in the repository sets (a family's
// testdata/STEM-selfcheck.json, which testdata/synth_golden.py --selfcheck
// writes beside the references: llama.cpp's spread on those files with
// another CPU variant and with the prompt in batches of 7), by
// NextTolerance's rule.
func SelfcheckFileTolerance(t testing.TB, path, stem, typ string) Tolerance {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc selfcheckRuns
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return selfcheckTolerance(t, path, sc, stem, typ)
}

// selfcheckTolerance is twice the worst max and RMS difference of any
// rerun and prompt of stem's type typ, rounded up to one significant digit.
func selfcheckTolerance(t testing.TB, where string, sc selfcheckRuns, stem, typ string) Tolerance {
	t.Helper()
	runs, ok := sc.Models[stem][typ]
	if !ok || len(runs) == 0 {
		t.Fatalf("%s has nothing for %s %s", where, stem, typ)
	}
	var worst Tolerance
	for _, prompts := range runs {
		for _, p := range prompts {
			if len(p) >= 2 {
				worst.MaxAbs, worst.RMS = max(worst.MaxAbs, p[0]), max(worst.RMS, p[1])
			}
		}
	}
	return Tolerance{MaxAbs: roundUp1(2 * worst.MaxAbs), RMS: roundUp1(2 * worst.RMS)}
}

// roundUp1 rounds x > 0 up to one significant digit (0.0176 → 0.02).
func roundUp1(x float64) float64 {
	if x <= 0 {
		return 1e-6
	}
	e := int(math.Floor(math.Log10(x)))
	d := math.Ceil(x/math.Pow(10, float64(e)) - 1e-9)
	v, _ := strconv.ParseFloat(fmt.Sprintf("%ge%d", d, e), 64) // d·10^e without float noise
	return v
}

// ReadJSONGz decodes the gzip'ed JSON file at path (a reference in a
// package's testdata) into v.
func ReadJSONGz(t testing.TB, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.NewDecoder(zr).Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
