package quant

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// TestQuantizeGolden quantizes every tensor of the F32 golden source to the
// type the same tensor has in each llama.cpp-quantized golden model and
// requires byte-identical blocks: llama-quantize ran ggml's reference
// quantizers (no importance matrix), and so do we.
func TestQuantizeGolden(t *testing.T) {
	ref := goldenF32Source(t)
	identical := map[gguf.Type]int{}
	for _, model := range quantizedGoldenModels(readGoldenDequant(t)) {
		t.Run(model, func(t *testing.T) {
			f := openGolden(t, model)
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				want := f.TensorData(ti)
				got := make([]byte, len(want))
				if err := Quantize(ti.Type, ref[ti.Name], got); err != nil {
					t.Errorf("%s: %v", ti.Name, err)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s (%v): %s", ti.Name, ti.Type, firstBlockDiff(ti.Type, got, want))
					continue
				}
				identical[ti.Type]++
			}
		})
	}
	t.Logf("byte-identical tensors per type: %v", identical)
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ4_0, gguf.TypeQ4_1,
		gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0, gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		if identical[typ] == 0 && !t.Failed() {
			t.Errorf("no golden tensor of type %v was checked", typ)
		}
	}
}

// firstBlockDiff describes where two encodings first differ and how many
// blocks differ.
func firstBlockDiff(typ gguf.Type, got, want []byte) string {
	bb := typ.BlockBytes()
	first, n := -1, 0
	for i := 0; i+bb <= len(want); i += bb {
		if !bytes.Equal(got[i:i+bb], want[i:i+bb]) {
			if first < 0 {
				first = i / bb
			}
			n++
		}
	}
	if first < 0 {
		return "lengths differ"
	}
	off := first * bb
	k := 0
	for got[off+k] == want[off+k] {
		k++
	}
	return fmt.Sprintf("%d of %d blocks differ; first block %d at byte %d: got % x, want % x",
		n, len(want)/bb, first, k, got[off:off+bb], want[off:off+bb])
}
