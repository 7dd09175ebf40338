package models_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

// synthOnly are the tiny models of families that ../shared/golden-families
// does not hold (llama.cpp's writer has no such architecture): the tests
// write them with package synth, from the preset of the stem, into one
// directory per test binary. Their golden logits live beside their family
// (granite/testdata).
var synthOnly = map[string]bool{"granite-tiny": true}

var (
	tinyDirOnce sync.Once
	tinyDir     string
	tinyDirErr  error
	tinyMu      sync.Mutex
)

// tinyModel returns the path of a tiny family model named STEM-TYPE
// (qwen3-tiny-Q4_K_M): ../shared's file, or synth's for synthOnly stems.
func tinyModel(t *testing.T, name string) string {
	t.Helper()
	cut := strings.LastIndexByte(name, '-')
	stem, typ := name[:cut], name[cut+1:]
	if !synthOnly[stem] {
		return sharedtest.Path(t, "golden-families/models/"+name+".gguf")
	}
	tinyDirOnce.Do(func() { tinyDir, tinyDirErr = os.MkdirTemp("", "smolgo-models-test-") })
	if tinyDirErr != nil {
		t.Fatal(tinyDirErr)
	}
	tinyMu.Lock()
	defer tinyMu.Unlock()
	path := filepath.Join(tinyDir, name+".gguf")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	m, err := synth.Preset(stem)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Mix: synth.Mix(typ)}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tinyDir != "" {
		os.RemoveAll(tinyDir)
	}
	os.Exit(code)
}
