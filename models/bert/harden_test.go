package bert

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// mutated writes the golden bert-rank-tiny file with its metadata and
// tensors changed by edit, and parses it back.
func mutated(t *testing.T, edit func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor)) *gguf.File {
	t.Helper()
	f, err := gguf.Open(sharedtest.Path(t, "golden-families/models/bert-rank-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := append([]gguf.KV(nil), f.KV...)
	var ts []gguf.WriterTensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		ts = append(ts, gguf.WriterTensor{Name: ti.Name, Dims: append([]uint64(nil), ti.Dims...), Type: ti.Type,
			Data: append([]byte(nil), f.TensorData(ti)...)})
	}
	kv, ts = edit(kv, ts)
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, ts); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func setKV(key string, v any) func([]gguf.KV, []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
	return func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
		for i := range kv {
			if kv[i].Key == key {
				if v == nil {
					return append(kv[:i], kv[i+1:]...), ts
				}
				kv[i].Value = v
				return kv, ts
			}
		}
		return append(kv, gguf.KV{Key: key, Value: v}), ts
	}
}

func editTensor(name string, fn func(*gguf.WriterTensor) bool) func([]gguf.KV, []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
	return func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
		for i := range ts {
			if ts[i].Name == name {
				if !fn(&ts[i]) {
					return kv, append(ts[:i], ts[i+1:]...)
				}
			}
		}
		return kv, ts
	}
}

// TestHostileFiles: a file whose metadata or tensors contradict each other
// is refused with an error naming the key or tensor, never a panic, and
// never an allocation sized by a lying header.
func TestHostileFiles(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func([]gguf.KV, []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor)
		says string
	}{
		{"huge block count", setKV("bert.block_count", uint32(1<<20)), "bert.block_count"},
		{"block count below the blocks", setKV("bert.block_count", uint32(1)), "tensors of block 1"},
		{"zero heads", setKV("bert.attention.head_count", uint32(0)), "head_count"},
		{"heads not dividing the width", setKV("bert.attention.head_count", uint32(7)), "not a multiple"},
		{"grouped keys", setKV("bert.attention.head_count_kv", uint32(2)), "head_count_kv"},
		{"width against the embeddings", setKV("bert.embedding_length", uint32(128)), "token_embd.weight"},
		{"missing width", setKV("bert.embedding_length", nil), "embedding_length is missing"},
		{"width as a string", setKV("bert.embedding_length", "256"), "embedding_length"},
		{"vocab size", setKV("bert.vocab_size", uint32(338)), "vocab_size"},
		{"positions against the table", setKV("bert.context_length", uint32(100000)), "position_embd"},
		{"causal", setKV("bert.attention.causal", true), "causal"},
		{"NaN epsilon", setKV("bert.attention.layer_norm_epsilon", float32(math.NaN())), "layer_norm_epsilon"},
		{"unknown pooling", setKV("bert.pooling_type", uint32(9)), "pooling_type"},
		{"no labels", setKV("bert.classifier.output_labels", []string{}), "labels"},
		{"labels against the head", setKV("bert.classifier.output_labels", []string{"a", "b"}), "cls.output.weight"},
		{"Matryoshka width too large", setKV("bert."+MatryoshkaKey, []int32{64, 512}), "matryoshka"},
		{"Matryoshka width zero", setKV("bert."+MatryoshkaKey, []int32{0}), "matryoshka"},
		{"missing tensor", editTensor("blk.1.ffn_up.weight", func(*gguf.WriterTensor) bool { return false }), "blk.1.ffn_up.weight is missing"},
		{"missing norm bias", editTensor("blk.0.attn_output_norm.bias", func(*gguf.WriterTensor) bool { return false }), "attn_output_norm.bias"},
		{"wrong shape", editTensor("blk.0.attn_q.weight", func(w *gguf.WriterTensor) bool {
			w.Dims = []uint64{128, 512}
			return true
		}), "blk.0.attn_q.weight has shape"},
		{"NaN in a bias", editTensor("blk.1.attn_k.bias", func(w *gguf.WriterTensor) bool {
			binary.LittleEndian.PutUint32(w.Data[8:], math.Float32bits(float32(math.NaN())))
			return true
		}), "element 2 is NaN"},
		{"f16 norm", editTensor("token_embd_norm.weight", func(w *gguf.WriterTensor) bool {
			w.Type, w.Data = gguf.TypeF16, w.Data[:len(w.Data)/2]
			return true
		}), "want f32"},
		{"fused qkv", func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
			return kv, append(ts, gguf.WriterTensor{Name: "blk.0.attn_qkv.weight", Dims: []uint64{256, 768}, Type: gguf.TypeF32, Data: make([]byte, 256*768*4)})
		}, "fused"},
		{"head without its projection", editTensor("cls.output.weight", func(*gguf.WriterTensor) bool { return false }), "cls.weight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := mutated(t, c.edit)
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic: %v", p)
					}
				}()
				cfg, err := ConfigFromGGUF(f)
				if err != nil {
					return err
				}
				w, err := LoadWeights(f, cfg)
				if err != nil {
					return err
				}
				e, err := NewEncoder(w, Options{Threads: 1})
				if err != nil {
					return err
				}
				e.Close()
				return nil
			}()
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.says)) {
				t.Errorf("error %v, want one saying %q", err, c.says)
			}
		})
	}
}
