package granite_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	_ "github.com/smolgo/smolgo/granite"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/synth"
)

// TestGoldenLogits compares Granite's block with llama.cpp on the synth
// preset granite-tiny (all four multipliers, an attention scale of
// 1/HeadDim instead of 1/√HeadDim) in F32, Q8_0 and Q4_K_M: prefill at
// every position, teacher-forced and greedy decode steps, and the prompt
// again in batches of 7. The references are testdata/*.json.gz, written by
// testdata/golden.py with llama.cpp (llamaref logits) on the files synth
// writes here byte for byte (their SHA-256 is in each reference). The
// tolerances are ../shared/golden/selfcheck.json's for SmolLM3 of the same
// type; golden.py --selfcheck measured llama.cpp's own spread on these
// files far inside them (max 1.2e-5 in F32, 0.008 in Q4_K_M).
func TestGoldenLogits(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []string{"F32", "Q8_0", "Q4_K_M"} {
		path := filepath.Join(dir, "granite-tiny-"+typ+".gguf")
		g := goldentest.LoadFile(t, "testdata/granite-tiny-"+typ+".json.gz")
		writeTiny(t, typ, path, g.SHA256)
		tol := goldentest.SelfcheckTolerance(t, "smollm3-tinyq-"+typ)
		for _, batch := range []int{1024, 7} {
			t.Run(typ+"/batch"+map[int]string{1024: "1024", 7: "7"}[batch], func(t *testing.T) {
				m, err := family.Load(path, engine.WithThreads(2), engine.WithBatchSize(batch))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				goldentest.CheckModel(t, "granite-tiny-"+typ, m, g, tol, nil)
			})
		}
	}
}

// writeTiny writes the preset granite-tiny as typ and checks that it is the
// file the reference was computed on.
func writeTiny(t *testing.T, typ, path, wantSHA string) {
	t.Helper()
	m, err := synth.Preset("granite-tiny")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Mix: synth.Mix(typ)}); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(buf.Bytes()); hex.EncodeToString(sum[:]) != wantSHA {
		t.Fatalf("synth's granite-tiny %s is not the file of testdata's reference (SHA-256 %x, want %s): regenerate it with testdata/golden.py", typ, sum, wantSHA)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
