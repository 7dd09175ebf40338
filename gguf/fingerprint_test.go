package gguf_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// The fingerprint depends on the contents only: a copy under another name
// has the same, a file with one weight byte changed has another.
func TestFingerprint(t *testing.T) {
	src := filepath.Join("..", "testdata", "smollm3-tinyq-Q4_K_M.gguf")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Skip(err)
	}
	open := func(data []byte) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return f.Fingerprint()
	}
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	want := f.Fingerprint()
	first := f.DataOffset + f.Tensors[0].Offset
	f.Close()
	if len(want) != 64 {
		t.Fatalf("fingerprint %q", want)
	}
	if got := open(data); got != want {
		t.Errorf("a copy: %s, the original %s", got, want)
	}
	changed := append([]byte(nil), data...)
	changed[first] ^= 1
	if got := open(changed); got == want {
		t.Error("a changed weight keeps the fingerprint")
	}
}
