package synth_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/internal/synth"
)

func write(t *testing.T, preset string, mix synth.Mix) []byte {
	t.Helper()
	m, err := synth.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, synth.Options{Mix: mix, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReproducesGolden checks that the presets reproduce the golden models
// of ../shared/golden byte for byte: the same weights, metadata and layout
// as llamaref's synth, and for the quantized mixes the same tensor types and
// blocks as llama.cpp's quantizer.
func TestReproducesGolden(t *testing.T) {
	tests := []struct {
		preset string
		mix    synth.Mix
		golden string
	}{
		{"tinyq", synth.MixF32, "golden/models/smollm3-tinyq-F32.gguf.gz"},
		{"llama-tiny", synth.MixF32, "golden/models/llama-tiny-F32.gguf"},
		{"tinyyarn", synth.MixF32, "golden/models/smollm3-tinyyarn-F32.gguf"},
		{"tinyq", synth.MixF16, "golden/models/smollm3-tinyq-F16.gguf"},
		{"tinyq", synth.MixBF16, "golden/models/smollm3-tinyq-BF16.gguf"},
		{"tinyq", synth.MixQ8_0, "golden/models/smollm3-tinyq-Q8_0.gguf"},
		{"tinyq", synth.MixQ4_0, "golden/models/smollm3-tinyq-Q4_0.gguf"},
		{"tinyq", synth.MixQ6_K, "golden/models/smollm3-tinyq-Q6_K.gguf"},
		{"tinyq", synth.MixQ4_K_M, "golden/models/smollm3-tinyq-Q4_K_M.gguf"},
	}
	for _, tc := range tests {
		t.Run(tc.preset+"-"+string(tc.mix), func(t *testing.T) {
			var want []byte
			if strings.HasSuffix(tc.golden, ".gz") {
				want = sharedtest.ReadGzip(t, tc.golden)
			} else {
				var err error
				if want, err = os.ReadFile(sharedtest.Path(t, tc.golden)); err != nil {
					t.Fatal(err)
				}
			}
			got := write(t, tc.preset, tc.mix)
			if bytes.Equal(got, want) {
				return
			}
			describeDiff(t, got, want)
		})
	}
}

// describeDiff reports where two GGUF files differ.
func describeDiff(t *testing.T, got, want []byte) {
	t.Helper()
	g, err := gguf.Parse(got)
	if err != nil {
		t.Fatalf("our file does not parse: %v", err)
	}
	w, err := gguf.Parse(want)
	if err != nil {
		t.Fatal(err)
	}
	t.Errorf("file differs from the golden one (%d vs %d bytes)", len(got), len(want))
	if len(g.KV) != len(w.KV) {
		t.Errorf("%d keys, golden %d", len(g.KV), len(w.KV))
	}
	for i := range min(len(g.KV), len(w.KV)) {
		a, b := g.KV[i], w.KV[i]
		var x, y bytes.Buffer
		gguf.Write(&x, []gguf.KV{a}, nil)
		gguf.Write(&y, []gguf.KV{b}, nil)
		if !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Errorf("key %d: %s = %.60v; golden %s = %.60v", i, a.Key, a.Value, b.Key, b.Value)
		}
	}
	bad := 0
	for i := range min(len(g.Tensors), len(w.Tensors)) {
		a, b := &g.Tensors[i], &w.Tensors[i]
		if a.Name != b.Name || a.Type != b.Type || !slices.Equal(a.Dims, b.Dims) {
			t.Errorf("tensor %d: %s %s %v; golden %s %s %v", i, a.Name, a.Type, a.Dims, b.Name, b.Type, b.Dims)
		} else if !bytes.Equal(g.TensorData(a), w.TensorData(b)) {
			t.Errorf("tensor %s: data differs", a.Name)
		} else {
			continue
		}
		if bad++; bad > 5 {
			t.Fatal("...")
		}
	}
}

func TestVocab(t *testing.T) {
	v, err := synth.BuiltinVocab(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != synth.BuiltinVocabSize || len(v.Types) != len(v.Tokens) || len(v.Merges) != 75 {
		t.Fatalf("%d tokens, %d types, %d merges", len(v.Tokens), len(v.Types), len(v.Merges))
	}
	checks := map[int]string{0: "!", 198: "Ċ", 220: "Ġ", 331: "<|begin_of_text|>", 334: "<|im_end|>", 335: "<think>", 336: "</think>"}
	for id, want := range checks {
		if v.Tokens[id] != want {
			t.Errorf("token %d = %q, want %q", id, v.Tokens[id], want)
		}
	}
	if v.BOS != 331 || v.EOS != 334 || v.PAD != 332 || v.Types[333] != synth.TokenControl || v.Types[336] != synth.TokenUserDefined {
		t.Errorf("bos %d eos %d pad %d types %v", v.BOS, v.EOS, v.PAD, v.Types[331:])
	}
	big, err := synth.BuiltinVocab(128256)
	if err != nil {
		t.Fatal(err)
	}
	if len(big.Tokens) != 128256 || big.Tokens[337] != "<|reserved_special_token_0|>" || !slices.Equal(big.Tokens[:337], v.Tokens) {
		t.Errorf("padded vocabulary: %d tokens, token 337 %q", len(big.Tokens), big.Tokens[337])
	}
	if _, err := synth.BuiltinVocab(100); err == nil {
		t.Error("BuiltinVocab(100) accepted")
	}
}

// TestMix3B checks llama.cpp's Q4_K_M mix on the 3B shape without writing
// it: 326 tensors, 216 q4_K, 37 q6_K, 73 f32, as llama.cpp's own file has.
func TestMix3B(t *testing.T) {
	m, err := synth.Preset("3b")
	if err != nil {
		t.Fatal(err)
	}
	tensors, err := m.Tensors(context.Background(), synth.MixQ4_K_M, synth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[gguf.Type]int{}
	var params, size uint64
	for _, tt := range tensors {
		counts[tt.Type]++
		size += tt.Size()
		n := uint64(1)
		for _, d := range tt.Dims {
			n *= d
		}
		params += n
	}
	if len(tensors) != 326 || counts[gguf.TypeQ4_K] != 216 || counts[gguf.TypeQ6_K] != 37 || counts[gguf.TypeF32] != 73 {
		t.Errorf("%d tensors: %v", len(tensors), counts)
	}
	if params != 3075098624 {
		t.Errorf("%d parameters, want 3,075,098,624", params)
	}
	t.Logf("3B Q4_K_M tensor data: %d bytes", size)
}

func TestUseMoreBitsLayers(t *testing.T) {
	eight := synth.Shape{Layers: 8} // tied embeddings
	var got []int
	for i := range 8 {
		if synth.MixQ4_K_M.TensorType("blk.N.attn_v.weight", i, []uint64{256, 256}, eight) == gguf.TypeQ6_K {
			got = append(got, i)
		}
	}
	if !slices.Equal(got, []int{0, 3, 6, 7}) {
		t.Errorf("q6_K attn_v in layers %v, want [0 3 6 7]", got)
	}
	// Rows that are not a multiple of 256 fall back like llama.cpp does.
	if typ := synth.MixQ4_K_M.TensorType("blk.1.attn_q.weight", 1, []uint64{64, 64}, eight); typ != gguf.TypeQ5_0 {
		t.Errorf("q4_K fallback for rows of 64: %s", typ)
	}
	if typ := synth.MixQ4_K_M.TensorType("token_embd.weight", -1, []uint64{64, 64}, eight); typ != gguf.TypeQ8_0 {
		t.Errorf("q6_K fallback for rows of 64: %s", typ)
	}
}

func TestLlamaTinyQ4KM(t *testing.T) {
	f, err := gguf.Parse(write(t, "llama-tiny", synth.MixQ4_K_M))
	if err != nil {
		t.Fatal(err)
	}
	out, ok := f.Tensor("output.weight")
	if !ok || out.Type != gguf.TypeQ8_0 {
		t.Errorf("output.weight: %v", out)
	}
	if emb, _ := f.Tensor("token_embd.weight"); emb.Type != gguf.TypeQ5_0 {
		t.Errorf("token_embd.weight (untied): %s", emb.Type)
	}
}

func TestCancel(t *testing.T) {
	m, _ := synth.Preset("tinyq")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := synth.Write(ctx, &bytes.Buffer{}, m, synth.Options{Mix: synth.MixQ4_K_M})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := synth.Preset("7b"); err == nil || !strings.Contains(err.Error(), "tinyq") {
		t.Errorf("unknown preset: %v", err)
	}
	if _, err := synth.ParseMix("Q3_K_S"); err == nil {
		t.Error("ParseMix(Q3_K_S) accepted")
	}
	if mix, err := synth.ParseMix("q4_k_m"); err != nil || mix != synth.MixQ4_K_M {
		t.Errorf("ParseMix(q4_k_m) = %v, %v", mix, err)
	}
	m, _ := synth.Preset("tinyq")
	m.Shape.KVHeads = 3
	if err := synth.Write(context.Background(), &bytes.Buffer{}, m, synth.Options{}); err == nil || !strings.Contains(err.Error(), "multiple of 3 KV heads") {
		t.Errorf("bad shape: %v", err)
	}
}

func TestProgress(t *testing.T) {
	m, _ := synth.Preset("tinyq")
	var calls []synth.Progress
	opts := synth.Options{Mix: synth.MixQ8_0, Progress: func(p synth.Progress) { calls = append(calls, p) }}
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, m, opts); err != nil {
		t.Fatal(err)
	}
	if len(calls) < 74 {
		t.Fatalf("%d progress calls for 74 tensors", len(calls))
	}
	last := calls[len(calls)-1]
	if last.Tensors != 74 || last.NTensors != 74 || last.Bytes != last.NBytes || last.NBytes == 0 {
		t.Errorf("last progress %+v", last)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i].Bytes < calls[i-1].Bytes || calls[i].Tensors < calls[i-1].Tensors {
			t.Fatalf("progress went backwards: %+v then %+v", calls[i-1], calls[i])
		}
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(buf.Len()) - f.DataOffset; last.NBytes > want {
		t.Errorf("progress total %d exceeds the data section %d", last.NBytes, want)
	}
}

func TestRealTokenizer(t *testing.T) {
	vf, err := gguf.Open(sharedtest.Path(t, "tokenizer/smollm3-vocab.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer vf.Close()
	m, _ := synth.Preset("tinyq")
	if m.Tokenizer, err = synth.TokenizerFrom(vf); err != nil {
		t.Fatal(err)
	}
	kv, err := m.Metadata(synth.MixQ4_K_M)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.Uint32("smollm3.vocab_size"); err != nil || n != 128256 {
		t.Errorf("vocab_size %d, %v", n, err)
	}
	if tmpl, err := f.String("tokenizer.chat_template"); err != nil || !strings.Contains(tmpl, "enable_thinking") {
		t.Errorf("chat template not copied: %v", err)
	}
	tensors, err := m.Tensors(context.Background(), synth.MixQ4_K_M, synth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tensors[1].Name != "token_embd.weight" || !slices.Equal(tensors[1].Dims, []uint64{256, 128256}) {
		t.Errorf("tensor 1: %s %v", tensors[1].Name, tensors[1].Dims)
	}
	m.Shape.Vocab = 337
	if _, err := m.Metadata(synth.MixF32); err == nil {
		t.Error("shape vocab 337 with a 128256-token tokenizer accepted")
	}
}

// TestDemoModel checks that the repository's demo model is this package's
// tinyq preset in the Q4_K_M mix (and so llama.cpp's golden file).
func TestDemoModel(t *testing.T) {
	want, err := os.ReadFile("../../testdata/smollm3-tinyq-Q4_K_M.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if got := write(t, "tinyq", synth.MixQ4_K_M); !bytes.Equal(got, want) {
		describeDiff(t, got, want)
	}
}
