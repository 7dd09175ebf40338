package granitehybrid_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/synth"
	_ "github.com/smolgo/smolgo/models/granitehybrid"
)

// moeTiny is the file of testdata/moe_golden.py's FLAGS, as internal/synth
// writes it (byte for byte llamaref's): 3 blocks (Mamba-2, attention,
// Mamba-2), Mamba-2 with 2 groups and a state of 48, 4 experts of width
// 128 (2 used) and a shared expert of width 256.
var moeTiny = synth.Model{Name: "granitehybrid-moe-tiny-F32", Seed: 40, Shape: synth.Shape{
	Arch: synth.ArchGraniteHybrid, Layers: 3, Embd: 256, FFN: 128, Heads: 8, KVHeads: 2, Context: 4096,
	RopeBase: 10000, RMSEps: 1e-5,
	Granite: synth.GraniteScales{Embedding: 4, Residual: 0.5, Attention: 0.125, Logit: 0.25},
	Hybrid: synth.HybridShape{AttnLayers: []int{1}, SSMConv: 4, SSMState: 48, SSMGroups: 2, SSMHeads: 16,
		Experts: 4, ExpertsUsed: 2, SharedFFN: 256},
}}

// TestMoEGoldenLogits compares Granite 4.0-H's block with experts and a
// shared expert (and Mamba-2 with two groups and a state size with a
// tail) with llama.cpp on moeTiny: prefill at every position,
// teacher-forced and greedy decode, with the whole prompt in one pass and
// in batches of 7. The reference is testdata/granitehybrid-moe-tiny-F32.json.gz
// (llama.cpp's AVX2 backend), the tolerance twice llama.cpp's own spread on
// the file (testdata/*.selfcheck.json), both written by
// testdata/moe_golden.py.
func TestMoEGoldenLogits(t *testing.T) {
	g := goldentest.LoadFile(t, "testdata/granitehybrid-moe-tiny-F32.json.gz")
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, moeTiny, synth.Options{Workers: 2}); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(buf.Bytes()); hex.EncodeToString(sum[:]) != g.SHA256 {
		t.Fatalf("synth's %s is not the file of the reference (SHA-256 %x, want %s)", moeTiny.Name, sum, g.SHA256)
	}
	path := filepath.Join(t.TempDir(), moeTiny.Name+".gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/granitehybrid-moe-tiny-F32.selfcheck.json")
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Tolerance goldentest.Tolerance `json:"tolerance"`
	}
	if err := json.Unmarshal(raw, &sc); err != nil || sc.Tolerance.MaxAbs <= 0 || sc.Tolerance.RMS <= 0 {
		t.Fatalf("selfcheck: %v %+v", err, sc)
	}
	for _, batch := range []int{1024, 7} {
		t.Run("batch"+strconv.Itoa(batch), func(t *testing.T) {
			_, m := goldentest.Open(t, path, engine.WithThreads(2), engine.WithBatchSize(batch))
			if f := m.Weights().Arch.Features(); !contains(f, "mamba2") || !contains(f, "shared expert") {
				t.Fatalf("features %v: not a Mamba-2 hybrid with a shared expert", f)
			}
			goldentest.CheckModel(t, moeTiny.Name, m, g, sc.Tolerance, nil)
		})
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
