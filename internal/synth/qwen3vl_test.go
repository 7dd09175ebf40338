package synth_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/synth"
)

// openBytes writes b to a temporary file and opens it.
func openBytes(t *testing.T, b []byte) *gguf.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestQwen3VLText: the tiny qwen3vl file has qwen3's tensors under the
// qwen3vl architecture, its sections and deepstack count, and the image
// delimiters as user-defined tokens after the built-in vocabulary; shapes
// that cannot be one are refused.
func TestQwen3VLText(t *testing.T) {
	var buf bytes.Buffer
	if err := synth.WriteQwen3VLText(context.Background(), &buf, synth.Qwen3VLTextTiny()); err != nil {
		t.Fatal(err)
	}
	f := openBytes(t, buf.Bytes())
	if a, _ := f.Architecture(); a != "qwen3vl" {
		t.Fatalf("architecture %q", a)
	}
	if s, err := f.Int32s("qwen3vl.rope.dimension_sections"); err != nil || !slices.Equal(s, []int32{6, 5, 5, 0}) {
		t.Errorf("sections %v, %v", s, err)
	}
	if n, err := f.Uint32("qwen3vl.n_deepstack_layers"); err != nil || n != 2 {
		t.Errorf("n_deepstack_layers %d, %v", n, err)
	}
	if n, err := f.Uint32("qwen3vl.block_count"); err != nil || n != 3 {
		t.Errorf("block_count %d, %v", n, err)
	}
	for _, kv := range f.KV {
		if strings.HasPrefix(kv.Key, "qwen3.") {
			t.Errorf("key %s left under qwen3", kv.Key)
		}
	}
	if _, ok := f.Tensor("blk.2.attn_q_norm.weight"); !ok {
		t.Error("no Q norm in block 2")
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	types, _ := f.Int32s("tokenizer.ggml.token_type")
	if len(toks) != synth.BuiltinVocabSize+2 || toks[337] != "<|vision_start|>" || toks[338] != "<|vision_end|>" || types[338] != synth.TokenUserDefined {
		t.Errorf("%d tokens, ending %q", len(toks), toks[len(toks)-2:])
	}
	for _, c := range []struct {
		name string
		edit func(*synth.Qwen3VLText)
		want string
	}{
		{"not qwen3", func(m *synth.Qwen3VLText) { m.Model.Shape.Arch = synth.ArchQwen2 }, "from a qwen3 shape"},
		{"deepstack past the blocks", func(m *synth.Qwen3VLText) { m.Deepstack = 4 }, "4 deepstack layers for 3 blocks"},
		{"sections too wide", func(m *synth.Qwen3VLText) { m.Sections = [4]int32{8, 8, 8, 0} }, "do not fit 16 rotated pairs"},
		{"token already there", func(m *synth.Qwen3VLText) { m.AddTokens = []string{"<think>"} }, "already in the vocabulary"},
	} {
		m := synth.Qwen3VLTextTiny()
		c.edit(&m)
		var b bytes.Buffer
		if err := synth.WriteQwen3VLText(context.Background(), &b, m); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestQwen3VLMmproj: the tiny projector has the keys and tensors
// clip.cpp's qwen3vl loader reads, deepstack mergers where the key says,
// and bad shapes are refused.
func TestQwen3VLMmproj(t *testing.T) {
	var buf bytes.Buffer
	p := synth.Qwen3VLMmprojTiny()
	if err := synth.WriteQwen3VLMmproj(&buf, p); err != nil {
		t.Fatal(err)
	}
	f := openBytes(t, buf.Bytes())
	if s, _ := f.String("clip.projector_type"); s != "qwen3vl_merger" {
		t.Errorf("projector type %q", s)
	}
	for _, name := range []string{"v.patch_embd.weight", "v.patch_embd.weight.1", "v.patch_embd.bias", "v.position_embd.weight",
		"v.blk.2.attn_qkv.weight", "v.blk.2.attn_qkv.bias", "v.post_ln.bias", "mm.0.weight", "mm.2.bias",
		"v.deepstack.0.norm.weight", "v.deepstack.1.fc2.weight"} {
		if _, ok := f.Tensor(name); !ok {
			t.Errorf("tensor %s is missing", name)
		}
	}
	if _, ok := f.Tensor("v.deepstack.2.fc1.weight"); ok {
		t.Error("a deepstack merger on block 2, which the key says has none")
	}
	if ti, _ := f.Tensor("v.position_embd.weight"); !slices.Equal(ti.Dims, []uint64{64, 64}) {
		t.Errorf("positions %v", ti.Dims)
	}
	for i, edit := range []func(*synth.Qwen3VLMmproj){
		func(p *synth.Qwen3VLMmproj) { p.Deepstack = p.Deepstack[:2] },
		func(p *synth.Qwen3VLMmproj) { p.Heads = 3 },
		func(p *synth.Qwen3VLMmproj) { p.FFN = p.Embd },
		func(p *synth.Qwen3VLMmproj) { p.ImageSize = 60 },
	} {
		q := synth.Qwen3VLMmprojTiny()
		edit(&q)
		var b bytes.Buffer
		if err := synth.WriteQwen3VLMmproj(&b, q); err == nil {
			t.Errorf("bad shape %d written", i)
		}
	}
}
