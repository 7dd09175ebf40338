// Package sharedtest finds the project's reference data for tests.
//
// Golden models, llama.cpp's logits and the real SmolLM3 tokenizer live in a
// folder named shared beside the repository (../shared from the module root);
// they are read in place and never copied into the tree. When the folder is
// absent, a test that needs it skips with a message, except under CI
// (CI=true), where a missing folder fails the test: CI must not pass by
// testing nothing. SMOLGO_SHARED overrides the location.
package sharedtest

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
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
	t.Skipf("reference data not found, skipping: %s (place the shared folder beside the repository or set SMOLGO_SHARED)", why)
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
