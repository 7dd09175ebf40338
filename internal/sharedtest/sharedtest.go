// Package sharedtest finds the project's reference data for tests.
//
// Golden models, llama.cpp's logits and the real SmolLM3 tokenizer live in a
// folder named shared beside the repository (../shared from the module root);
// they are read in place and never copied into the tree. When the folder is
// absent, a test that needs it skips with a message, except under CI
// (CI=true), where a missing folder fails the test: CI must not pass by
// testing nothing. SMOLGO_SHARED overrides the location.
//
// A skip alone would go unseen: `go test ./...` prints nothing but "ok" for a
// package that passes, discarding whatever its tests wrote to stdout and
// stderr (only -v, -json and `go test` in one package's folder show it). So
// the first skip in each test binary also writes one line to the terminal
// (/dev/tty, or stderr where there is none):
//
//	smolgo: github.com/smolgo/smolgo/llama: reference data not found (../shared); tests that need it are skipped (set SMOLGO_SHARED)
//
// A cached result prints nothing again, as go test replays only "ok (cached)".
package sharedtest

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Dir returns the shared reference folder, or skips (fails under CI=true)
// when it cannot be found.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := find()
	if err != nil {
		missing(t, err.Error())
	}
	return dir
}

// Path returns the path of a file inside the shared folder, such as
// "golden/models/smollm3-tinyq-Q4_K_M.gguf", skipping (failing under CI) when
// it is absent.
func Path(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Dir(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		missing(t, "shared file "+rel+": "+err.Error())
	}
	return p
}

// Gunzip unpacks the gzip file rel (inside the shared folder) into the test's
// temporary folder once per test and returns the unpacked file's path.
func Gunzip(t testing.TB, rel string) string {
	t.Helper()
	src := Path(t, rel)
	dst := filepath.Join(t.TempDir(), filepath.Base(src[:len(src)-len(filepath.Ext(src))]))
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// ReadGzip returns the unpacked contents of a gzip file inside the shared folder.
func ReadGzip(t testing.TB, rel string) []byte {
	t.Helper()
	f, err := os.Open(Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return b
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("reference data missing under CI: %s (CI must have ../shared beside the repository)", why)
	}
	noticeOnce.Do(func() { notice() })
	t.Skipf("reference data not found, skipping: %s (place the shared folder beside the repository or set SMOLGO_SHARED)", why)
}

// noticeOnce makes the terminal notice one line per test binary.
var noticeOnce sync.Once

// notice tells the person running the tests, once, that some were skipped.
func notice() {
	w := io.Writer(os.Stderr)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		w = tty
	}
	wd, _ := os.Getwd()
	writeNotice(w, packageOf(wd))
}

// writeNotice writes the skip notice for the package pkg.
func writeNotice(w io.Writer, pkg string) {
	where := "../shared"
	if d := os.Getenv("SMOLGO_SHARED"); d != "" {
		where = "SMOLGO_SHARED=" + d
	}
	fmt.Fprintf(w, "smolgo: %s: reference data not found (%s); tests that need it are skipped (set SMOLGO_SHARED)\n", pkg, where)
}

// packageOf names the package whose folder is dir (go test runs a test
// binary there): its import path when dir lies in a module, else dir.
func packageOf(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			rel, err := filepath.Rel(d, dir)
			if err != nil {
				return dir
			}
			return filepath.ToSlash(filepath.Join(modulePath(b), rel))
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// modulePath returns the path on the module line of a go.mod file.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return "?"
}

var (
	findOnce sync.Once
	found    string
	findErr  error
)

func find() (string, error) {
	findOnce.Do(func() {
		if d := os.Getenv("SMOLGO_SHARED"); d != "" {
			found, findErr = d, checkDir(d)
			return
		}
		wd, err := os.Getwd()
		if err != nil {
			findErr = err
			return
		}
		// Walk up to the module root (the folder holding go.mod), then look beside it.
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				found = filepath.Join(filepath.Dir(d), "shared")
				findErr = checkDir(found)
				return
			}
			if filepath.Dir(d) == d {
				findErr = os.ErrNotExist
				return
			}
		}
	})
	return found, findErr
}

func checkDir(d string) error {
	_, err := os.Stat(filepath.Join(d, "golden", "README.md"))
	return err
}

// LlamaCpp returns the folder of llama.cpp's source that
// ../shared/tools/llamaref/build.sh clones
// (${SMOLGO_CACHE:-$HOME/.cache/smolgo}/llamaref/nlc-3.22.1/llama.cpp):
// its models/ggml-vocab-*.gguf are real vocabularies. It skips when the
// clone is absent, and fails under CI=true, where .ci/run makes it.
func LlamaCpp(t testing.TB) string {
	t.Helper()
	cache := os.Getenv("SMOLGO_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "smolgo")
	}
	dir := filepath.Join(cache, "llamaref", "nlc-3.22.1", "llama.cpp")
	if _, err := os.Stat(filepath.Join(dir, "models", "ggml-vocab-qwen2.gguf")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("llama.cpp's source is missing under CI (%v): .ci/run must run ../shared/tools/llamaref/build.sh first", err)
		}
		t.Skipf("llama.cpp's source not found (%v); run bash ../shared/tools/llamaref/build.sh", err)
	}
	return dir
}

// Llamaref returns the llamaref binary that ../shared/tools/llamaref/build.sh
// builds: $SMOLGO_LLAMAREF, or the build's place under
// ${SMOLGO_CACHE:-$HOME/.cache/smolgo}. Tests that run llama.cpp itself
// through it skip when it is absent, and fail under CI=true, where .ci/run
// builds it.
func Llamaref(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("SMOLGO_LLAMAREF"); bin != "" {
		return bin
	}
	cache := os.Getenv("SMOLGO_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "smolgo")
	}
	bin := filepath.Join(cache, "llamaref", "nlc-3.22.1", "bin", "llamaref")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("llamaref is missing under CI (%v): .ci/run must run ../shared/tools/llamaref/build.sh first", err)
		}
		t.Skipf("llamaref not found (%v); run bash ../shared/tools/llamaref/build.sh or set SMOLGO_LLAMAREF", err)
	}
	return bin
}

// LlamarefLogits runs llama.cpp (llamaref logits, found by Llamaref) on the
// model at path with the prompt tokens and any further llamaref flags
// (--force, --kv-type, --threads ...), and returns its logits: one row per
// prompt position, then one per decode step.
func LlamarefLogits(t testing.TB, path string, tokens []int32, flags ...string) (prefill, decode [][]float32) {
	t.Helper()
	bin := Llamaref(t)
	ids := make([]string, len(tokens))
	for i, id := range tokens {
		ids[i] = fmt.Sprint(id)
	}
	out := filepath.Join(t.TempDir(), "ref.json")
	args := append([]string{"logits", "--model", path, "--tokens", strings.Join(ids, ","), "--out", out}, flags...)
	if b, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("llamaref %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Prefill, Decode []struct {
			Logits []float32 `json:"logits"`
		}
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatalf("llamaref's output: %v", err)
	}
	for _, r := range ref.Prefill {
		prefill = append(prefill, r.Logits)
	}
	for _, r := range ref.Decode {
		decode = append(decode, r.Logits)
	}
	return prefill, decode
}
