package qwen35_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
	"github.com/smolgo/smolgo/llama"
	_ "github.com/smolgo/smolgo/models/qwen35"
	_ "github.com/smolgo/smolgo/models/qwen35moe"
)

// mtpReference is testdata/qwen35-mtp-tiny.json.gz, llama.cpp's MTP head
// on the tiny Qwen3.5 file with an MTP block (internal/mtpref/golden.sh).
type mtpReference struct {
	SHA256  string `json:"model_sha256"`
	Prompts []struct {
		Name       string      `json:"name"`
		Tokens     []int32     `json:"tokens"`
		TargetNext int32       `json:"target_next"`
		Prefill    [][]float32 `json:"prefill"`
		Drafts     []struct {
			Token  int32     `json:"token"`
			Pos    int       `json:"pos"`
			Logits []float32 `json:"logits"`
		} `json:"drafts"`
	} `json:"prompts"`
	Selfcheck goldentest.Tolerance `json:"selfcheck"`
}

// writeMTPFile writes the F32 file src with the MTP block synth.WriteMTP
// adds (seed 1) and returns its path and SHA-256.
func writeMTPFile(t testing.TB, src string) (string, string) {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if err := synth.WriteMTP(&buf, f, 1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mtp-F32.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return path, hex.EncodeToString(sum[:])
}

// tinyMTPFile returns the F32 file of arch's MTP reference
// (internal/mtpref/golden.sh) and its SHA-256: golden-next's qwen35-tiny, or
// the qwen35moe-tiny file llamaref synth writes, with the block added.
func tinyMTPFile(t testing.TB, arch string) (string, string) {
	t.Helper()
	if arch == "qwen35" {
		return writeMTPFile(t, sharedtest.Path(t, "golden-next/models/qwen35-tiny-F32.gguf"))
	}
	src := filepath.Join(t.TempDir(), "qwen35moe-tiny-F32.gguf")
	if b, err := exec.Command(sharedtest.Llamaref(t), "synth", "--out", src, "--arch", "qwen35moe", "--seed", "34", "--n-layer", "4", "--n-embd", "256",
		"--n-head", "8", "--n-head-kv", "2", "--ssm-heads", "4", "--ssm-groups", "2", "--n-expert", "4", "--n-expert-used", "2",
		"--n-ff-exp", "128").CombinedOutput(); err != nil {
		t.Fatalf("llamaref synth: %v\n%s", err, b)
	}
	return writeMTPFile(t, src)
}

// openMTP opens path on the CPU and returns the model's backend and its
// MTP block's.
func openMTP(t testing.TB, path string) (backend.Backend, backend.Backend) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cfg, arch, err := family.Describe(f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.LoadWeights(f, cfg, arch)
	if err != nil {
		t.Fatal(err)
	}
	b, err := llama.NewBackend(w, llama.Options{Threads: 2, Context: 256})
	if err != nil {
		t.Fatal(err)
	}
	nn, ok := b.(backend.NextNer)
	if !ok {
		t.Fatalf("the CPU backend (%T) has no NextN", b)
	}
	h, err := nn.NextN()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.(interface{ Close() error }).Close()
		b.(interface{ Close() error }).Close()
	})
	return b, h
}

// TestMTPLogitsMatchLlamaCpp checks the MTP head's logits against
// llama.cpp's on the tiny Qwen3.5 and Qwen3.5-MoE files with an MTP block
// (the MoE one's block has the model's experts and shared expert): over each
// prompt (token p with the model's hidden state at p-1, zeros at 0, in one
// step), then for four drafts, each fed the head's own greedy token and
// hidden state. The tolerance is golden-next's rule (twice llama.cpp's
// spread with itself, rounded up), with the spread the larger of the
// model's own on golden-next's prompts (qwen35-tiny F32) and the head's
// across CPU backends.
func TestMTPLogitsMatchLlamaCpp(t *testing.T) {
	for _, arch := range []string{"qwen35", "qwen35moe"} {
		t.Run(arch, func(t *testing.T) { checkMTPLogits(t, arch) })
	}
}

func checkMTPLogits(t *testing.T, arch string) {
	path, sha := tinyMTPFile(t, arch)
	var ref mtpReference
	raw, err := os.ReadFile("testdata/" + arch + "-mtp-tiny.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(zr).Decode(&ref); err != nil {
		t.Fatal(err)
	}
	if sha != ref.SHA256 {
		t.Fatalf("the file synth.WriteMTP wrote has SHA-256 %s, the reference's %s: rerun internal/mtpref/golden.sh", sha, ref.SHA256)
	}
	tol := goldentest.NextTolerance(t, "qwen35-tiny", "F32")
	tol.MaxAbs = max(tol.MaxAbs, 2*ref.Selfcheck.MaxAbs)
	tol.RMS = max(tol.RMS, 2*ref.Selfcheck.RMS)

	model, head := openMTP(t, path)
	V, E := model.Vocab(), 256
	ctx := context.Background()
	var all goldentest.Diff
	for _, p := range ref.Prompts {
		n := len(p.Tokens)
		mc, err := model.NewCache()
		if err != nil {
			t.Fatal(err)
		}
		logits, hidden := make([]float32, V), make([]float32, n*E)
		if err := model.Step(ctx, []backend.Seq{{Cache: mc, Tokens: p.Tokens, Logits: logits, Hidden: hidden}}); err != nil {
			t.Fatal(err)
		}
		if got := int32(goldentest.Argmax(logits)); got != p.TargetNext {
			t.Errorf("%s: the model's next token is %d, llama.cpp's %d", p.Name, got, p.TargetNext)
		}
		hc, err := head.NewCache()
		if err != nil {
			t.Fatal(err)
		}
		in := append(make([]float32, E), hidden[:(n-1)*E]...) // h of the position before each token
		out := make([]float32, n*V)
		if err := head.Step(ctx, []backend.Seq{{Cache: hc, Tokens: p.Tokens, Embeds: in, Logits: out}}); err != nil {
			t.Fatal(err)
		}
		var d goldentest.Diff
		for i, want := range p.Prefill {
			d.Add(fmt.Sprintf("%s prefill row %d", p.Name, i), out[i*V:(i+1)*V], want)
		}
		tok, h := p.TargetNext, append([]float32(nil), hidden[(n-1)*E:]...)
		for k, want := range p.Drafts {
			if tok != want.Token || hc.Len() != want.Pos {
				t.Fatalf("%s draft %d: token %d at %d, llama.cpp's %d at %d", p.Name, k, tok, hc.Len(), want.Token, want.Pos)
			}
			row, next := make([]float32, V), make([]float32, E)
			if err := head.Step(ctx, []backend.Seq{{Cache: hc, Tokens: []int32{tok}, Embeds: h, Logits: row, Hidden: next}}); err != nil {
				t.Fatal(err)
			}
			d.Add(fmt.Sprintf("%s draft %d", p.Name, k), row, want.Logits)
			tok, h = int32(goldentest.Argmax(row)), next
		}
		t.Logf("%s: max %.2g RMS %.2g (%s)", p.Name, d.MaxAbs, d.RMS(), d.Worst)
		all.Merge(d)
	}
	if all.MaxAbs > tol.MaxAbs || all.RMS() > tol.RMS {
		t.Errorf("MTP logits: max %.3g RMS %.3g, tolerance %.3g / %.3g; worst at %s", all.MaxAbs, all.RMS(), tol.MaxAbs, tol.RMS, all.Worst)
	}
}

// A model without an MTP block has no NextN, and the block refuses a step
// without the model's hidden states, naming what is wrong.
func TestMTPRefusals(t *testing.T) {
	f, err := gguf.Open(sharedtest.Path(t, "golden-next/models/qwen35-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, arch, err := family.Describe(f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.LoadWeights(f, cfg, arch)
	if err != nil {
		t.Fatal(err)
	}
	b, err := llama.NewBackend(w, llama.Options{Threads: 1, Context: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer b.(interface{ Close() error }).Close()
	if _, err := b.(backend.NextNer).NextN(); err == nil || !strings.Contains(err.Error(), "no multi-token-prediction block") {
		t.Errorf("NextN of a file without the block: %v", err)
	}

	path, _ := tinyMTPFile(t, "qwen35")
	_, head := openMTP(t, path)
	c, err := head.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		seq  backend.Seq
		want string
	}{
		{backend.Seq{Cache: c, Tokens: []int32{1, 2}, Embeds: make([]float32, 256)}, "256 hidden values for 2 tokens"},
		{backend.Seq{Cache: c, Tokens: []int32{1}}, "0 hidden values"},
		{backend.Seq{Cache: c, Tokens: []int32{400}, Embeds: make([]float32, 256)}, "outside the vocabulary"},
	} {
		if err := head.Step(context.Background(), []backend.Seq{c.seq}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Step(%d tokens, %d hidden values): %v, want an error with %q", len(c.seq.Tokens), len(c.seq.Embeds), err, c.want)
		}
	}
	if c.Len() != 0 {
		t.Errorf("refused steps left the cache at %d", c.Len())
	}
}
