package synth_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

// TestReproducesGoldenNextGraniteHybrid checks the granitehybrid writer
// against ../shared/golden-next's granitehybrid-tiny-F32.gguf (llamaref
// synth --arch granitehybrid --seed 35 --n-layer 2 --n-ff 256
// --attn-layers 1 --n-embd 256 --n-head 8 --n-head-kv 2, its manifest
// says) byte for byte: the same keys in the same order, tensors, shapes
// and weights.
func TestReproducesGoldenNextGraniteHybrid(t *testing.T) {
	m := synth.Model{Name: "granitehybrid-tiny-F32", Seed: 35, Shape: synth.Shape{
		Arch: synth.ArchGraniteHybrid, Layers: 2, Embd: 256, FFN: 256, Heads: 8, KVHeads: 2, Context: 4096,
		RopeBase: 10000, RMSEps: 1e-5,
		Granite: synth.GraniteScales{Embedding: 4, Residual: 0.5, Attention: 0.125, Logit: 0.25},
		Hybrid:  synth.HybridShape{AttnLayers: []int{1}, SSMConv: 4, SSMState: 64, SSMGroups: 1, SSMHeads: 16},
	}}
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Workers: 2}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(sharedtest.Path(t, "golden-next/models/granitehybrid-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		describeDiff(t, buf.Bytes(), want)
	}
	if _, err := m.Metadata(synth.MixQ8_0); err == nil {
		t.Error("a quantized granitehybrid mix: no error")
	}
}
