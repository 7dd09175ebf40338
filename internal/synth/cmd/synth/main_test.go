package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

func TestWritesTinyModel(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tiny.gguf")
	var log bytes.Buffer
	if code := run(context.Background(), []string{"-preset", "tinyq", "-type", "q4_k_m", "-o", out}, &log, &log); code != 0 {
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
		{context.Background(), []string{"-preset", "gptoss-tiny", "-blocks", "3", "-o", filepath.Join(dir, "x.gguf")}, 1, "has 2 blocks"},
		{ctx, []string{"-o", filepath.Join(dir, "c.gguf")}, 1, "cancelled"},
	} {
		var log bytes.Buffer
		code := run(tc.ctx, tc.args, &log, &log)
		if code != tc.code || !strings.Contains(log.String(), tc.want) {
			t.Errorf("%v: exit %d, log %q; want %d and %q", tc.args, code, log.String(), tc.code, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

func TestListsPresets(t *testing.T) {
	var out, log bytes.Buffer
	if code := run(context.Background(), []string{"-list"}, &out, &log); code != 0 {
		t.Fatalf("exit %d: %s", code, log.String())
	}
	for _, name := range synth.PresetNames() {
		if !strings.Contains(out.String(), "\n"+name+" ") && !strings.HasPrefix(out.String(), name+" ") {
			t.Errorf("-list lacks %s:\n%s", name, out.String())
		}
	}
	if !strings.Contains(out.String(), "qwen3: 28 layers, hidden 1024, FFN 3072, 16/8 heads of 128, vocab 151936") {
		t.Errorf("-list lacks qwen3-0.6b's shape:\n%s", out.String())
	}
	// The usage lists them too.
	log.Reset()
	if code := run(context.Background(), nil, &out, &log); code != 2 || !strings.Contains(log.String(), "gemma3-270m") {
		t.Errorf("usage: exit %d, %q", code, log.String())
	}
}

// TestRealVocab gives a real shape a real tokenizer: the vocabulary size
// becomes the tokenizer's (SmolLM3's 128,256 tokens, Llama 3's size).
func TestRealVocab(t *testing.T) {
	m, mix, err := model("llama3.2-1b", "Q4_K_M", 7, "x", sharedtest.Path(t, "tokenizer/smollm3-vocab.gguf"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Seed != 7 || m.Name != "x" || mix != synth.MixQ4_K_M || m.Shape.Vocab != 0 {
		t.Errorf("model: seed %d name %q mix %s vocab %d", m.Seed, m.Name, mix, m.Shape.Vocab)
	}
	kv, err := m.Metadata(mix)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range kv {
		if x.Key == "llama.vocab_size" && x.Value != uint32(128256) {
			t.Errorf("vocab_size %v", x.Value)
		}
	}
}

// TestBlocks writes the first blocks of a real MoE shape in MXFP4 (given as
// llama.cpp's MXFP4_MOE): the file says so and holds those blocks' tensors,
// the experts in mxfp4 and the other matrices in q8_0; the same blocks of
// the tiny gpt-oss come out as the whole model's.
func TestBlocks(t *testing.T) {
	m, mix, err := model("qwen3-30b-a3b", "mxfp4_moe", 0, "", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if mix != synth.MixMXFP4 || m.Shape.Layers != 1 {
		t.Fatalf("mix %s, %d layers", mix, m.Shape.Layers)
	}
	tensors, err := m.Tensors(context.Background(), mix, synth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]gguf.Type{}
	for _, tt := range tensors {
		types[tt.Name] = tt.Type
	}
	for name, want := range map[string]gguf.Type{
		"blk.0.ffn_gate_exps.weight": gguf.TypeMXFP4, "blk.0.ffn_down_exps.weight": gguf.TypeMXFP4,
		"blk.0.ffn_gate_inp.weight": gguf.TypeF32, "blk.0.attn_q.weight": gguf.TypeQ8_0,
		"output.weight": gguf.TypeQ8_0, "token_embd.weight": gguf.TypeQ8_0,
	} {
		if types[name] != want {
			t.Errorf("%s: %v, want %v", name, types[name], want)
		}
	}
	if _, ok := types["blk.1.attn_q.weight"]; ok || len(tensors) != 3+12 {
		t.Errorf("%d tensors, want one block's 12 and 3 others", len(tensors))
	}
	out := filepath.Join(t.TempDir(), "one.gguf")
	var log bytes.Buffer
	if code := run(context.Background(), []string{"-preset", "gptoss-tiny", "-blocks", "1", "-o", out}, &log, &log); code != 0 {
		t.Fatalf("exit %d: %s", code, log.String())
	}
	one, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	whole, err := gguf.Open(sharedtest.Path(t, "golden-next/models/gptoss-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if n, err := one.Uint32("gpt-oss.block_count"); err != nil || n != 1 {
		t.Errorf("block_count %d (%v), want 1", n, err)
	}
	for i := range one.Tensors {
		ti := &one.Tensors[i]
		wi, ok := whole.Tensor(ti.Name)
		if !ok || !bytes.Equal(one.TensorData(ti), whole.TensorData(wi)) {
			t.Errorf("%s differs from the whole model's", ti.Name)
		}
	}
}
