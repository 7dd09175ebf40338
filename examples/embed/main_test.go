package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
)

// TestSearch runs the example on a folder of three files with the golden
// BERT model (random weights, so the ranking means nothing, but every file
// is embedded and scored, best first, and a file identical to the query
// comes first with a similarity of 1).
func TestSearch(t *testing.T) {
	model := sharedtest.Path(t, "golden-families/models/bert-tiny-F32.gguf")
	dir := t.TempDir()
	files := map[string]string{
		"fox.txt":   "the quick brown fox jumps over the lazy dog",
		"hello.md":  "Hello world",
		"other.txt": "something else entirely, " + strings.Repeat("long text ", 400),
		"skip.go":   "package skip",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-model", model, "-dir", dir, "-top", "3", "Hello", "world"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "1.0000  ") || !strings.HasSuffix(lines[0], "hello.md") {
		t.Fatalf("output:\n%s", out.String())
	}
	if err := run(context.Background(), []string{"-model", model, "-dir", t.TempDir(), "q"}, &out); err == nil {
		t.Error("an empty folder: no error")
	}
	if err := run(context.Background(), []string{"-model", model}, &out); err == nil {
		t.Error("no query: no error")
	}
}
