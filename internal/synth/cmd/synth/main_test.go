package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

func TestWritesTinyModel(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tiny.gguf")
	var log bytes.Buffer
	if code := run(context.Background(), []string{"-preset", "tinyq", "-type", "q4_k_m", "-o", out}, &log); code != 0 {
		t.Fatalf("exit %d: %s", code, log.String())
	}
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ft, err := f.Uint32("general.file_type"); err != nil || ft != 15 || len(f.Tensors) != 74 {
		t.Errorf("file type %d (%v), %d tensors", ft, err, len(f.Tensors))
	}
	if !strings.Contains(log.String(), "msg=done") {
		t.Errorf("log lacks the done line:\n%s", log.String())
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		ctx  context.Context
		args []string
		code int
		want string
	}{
		{context.Background(), nil, 2, "usage"},
		{context.Background(), []string{"-preset", "huge", "-o", filepath.Join(dir, "x.gguf")}, 1, "unknown preset"},
		{context.Background(), []string{"-type", "Q1", "-o", filepath.Join(dir, "x.gguf")}, 1, "unknown type"},
		{context.Background(), []string{"-o", filepath.Join(dir, "no", "such", "dir.gguf")}, 1, "no such file"},
		{ctx, []string{"-o", filepath.Join(dir, "c.gguf")}, 1, "cancelled"},
	} {
		var log bytes.Buffer
		code := run(tc.ctx, tc.args, &log)
		if code != tc.code || !strings.Contains(log.String(), tc.want) {
			t.Errorf("%v: exit %d, log %q; want %d and %q", tc.args, code, log.String(), tc.code, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}
