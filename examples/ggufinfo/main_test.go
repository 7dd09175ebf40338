package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

func runInfo(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestQ4KMCounts(t *testing.T) {
	path := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	code, out, errOut := runInfo(t, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`TENSOR TYPES \(74 tensors\)`,
		`\nq4_K +48 tensors`,
		`\nq6_K +9 tensors`,
		`\nf32 +17 tensors`,
		`\narch +smollm3\n`,
		`\nlayers +8\n`,
		`\nheads / kv heads +4 / 2 \(head dim 64\)`,
		`\ncontext +4096\n`,
		`\nNoPE layers +3 7\n`,
		`\ntied embeddings +yes`,
		`\ntokenizer.ggml.tokens +\[\]string +\["!" .* \.\.\. \(337 elements\)`,
		`\ntoken_embd.weight +q6_K +\[256 337\] +70770 +1024\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output does not match %s", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

func TestJSON(t *testing.T) {
	path := sharedtest.Path(t, "golden/models/smollm3-tinyq-Q4_K_M.gguf")
	code, out, errOut := runInfo(t, "-json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range r.Types {
		got[c.Type] = c.Count
	}
	if r.NTensors != 74 || len(r.Tensors) != 74 || got["q4_K"] != 48 || got["q6_K"] != 9 || got["f32"] != 17 || len(got) != 3 {
		t.Errorf("%d tensors (%d listed), types %v", r.NTensors, len(r.Tensors), got)
	}
	if r.Arch == nil || r.Arch.Layers != 8 || r.Arch.TiedEmbeddings == nil || !*r.Arch.TiedEmbeddings || len(r.Arch.NoPELayers) != 2 {
		t.Errorf("architecture %+v", r.Arch)
	}
}

func TestUntiedLlama(t *testing.T) {
	code, out, errOut := runInfo(t, "-tensors=false", sharedtest.Path(t, "golden/models/llama-tiny-F32.gguf"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`\nNoPE layers +none\n`, `\ntied embeddings +no \(output.weight\)\n`, `TENSOR TYPES \(30 tensors\)`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output does not match %s", want)
		}
	}
	if strings.Contains(out, "\nTENSORS\n") {
		t.Error("-tensors=false still lists tensors")
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.gguf")
	if err := os.WriteFile(junk, []byte("this is not a model, just text"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{junk}, 1, "not a GGUF file"},
		{[]string{filepath.Join(dir, "missing.gguf")}, 1, "no such file"},
		{nil, 2, "usage"},
		{[]string{"-nope", junk}, 2, "flag provided but not defined"},
	} {
		code, out, errOut := runInfo(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", tc.args, code, errOut, out, tc.code, tc.want)
		}
	}
}

func TestLongStringCutOnRune(t *testing.T) {
	long := strings.Repeat("─", 100)
	got := formatValue(metaEntry{Key: "k", Type: "string", Value: long})
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "... (300 bytes)") {
		t.Errorf("formatValue = %q", got)
	}
}

// TestDemoModel runs on the repository's own demo model, without ../shared.
func TestDemoModel(t *testing.T) {
	code, out, errOut := runInfo(t, "-tensors=false", "../../testdata/smollm3-tinyq-Q4_K_M.gguf")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`TENSOR TYPES \(74 tensors\)`, `\nq4_K +48 tensors`, `\nq6_K +9 tensors`, `\nf32 +17 tensors`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output does not match %s", want)
		}
	}
}
