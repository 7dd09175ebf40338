package sharedtest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestPackageOf(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("// comment\nmodule example.com/m\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{root: "example.com/m", sub: "example.com/m/a/b"} {
		if got := packageOf(dir); got != want {
			t.Errorf("packageOf(%s) = %q, want %q", dir, got, want)
		}
	}
	if wd, _ := os.Getwd(); packageOf(wd) != "github.com/smolgo/smolgo/internal/sharedtest" {
		t.Errorf("packageOf(%s) = %q", wd, packageOf(wd))
	}
}

func TestNoticeLine(t *testing.T) {
	t.Setenv("SMOLGO_SHARED", "")
	var b bytes.Buffer
	writeNotice(&b, "example.com/m/a")
	want := "smolgo: example.com/m/a: reference data not found (../shared); tests that need it are skipped (set SMOLGO_SHARED)\n"
	if b.String() != want {
		t.Errorf("notice %q, want %q", b.String(), want)
	}
	t.Setenv("SMOLGO_SHARED", "/nowhere")
	b.Reset()
	writeNotice(&b, "p")
	if want := "smolgo: p: reference data not found (SMOLGO_SHARED=/nowhere); tests that need it are skipped (set SMOLGO_SHARED)\n"; b.String() != want {
		t.Errorf("notice %q, want %q", b.String(), want)
	}
}
