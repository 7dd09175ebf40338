package synth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

// The demo model in testdata/ must be exactly what the synthesizer writes, so
// anyone can regenerate it, and that must equal llama.cpp's own Q4_K_M
// quantization of the same weights (the golden file).
func TestTestdataModelIsReproducible(t *testing.T) {
	const name = "smollm3-tinyq-Q4_K_M.gguf"
	committed, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := synth.Preset("tinyq")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, spec, synth.Options{Mix: synth.MixQ4_K_M}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), committed) {
		t.Fatalf("testdata/%s differs from a fresh synth run (%d vs %d bytes): regenerate it (see testdata/README.md)", name, len(committed), buf.Len())
	}
	if _, err := gguf.Parse(committed); err != nil {
		t.Fatalf("testdata/%s: %v", name, err)
	}
	golden, err := os.ReadFile(sharedtest.Path(t, "golden/models/"+name))
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(golden) != sha256.Sum256(committed) {
		t.Fatalf("testdata/%s is not byte-identical to llama.cpp's quantization in shared/golden", name)
	}
}
