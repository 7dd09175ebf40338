package llama

import (
	"bytes"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// fuse returns the tensors of src with each block's q, k and v stored as
// one attn_qkv tensor and its gate and up as one ffn_up of twice the rows
// (the gate's first), as Phi-3 files store them; edit, if set, changes the
// list before it is written.
func fuse(t *testing.T, src *gguf.File, edit func([]gguf.WriterTensor) []gguf.WriterTensor) *gguf.File {
	t.Helper()
	byName := map[string]gguf.WriterTensor{}
	var order []string
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		byName[ti.Name] = gguf.WriterTensor{Name: ti.Name, Dims: append([]uint64(nil), ti.Dims...), Type: ti.Type,
			Data: append([]byte(nil), src.TensorData(ti)...)}
		order = append(order, ti.Name)
	}
	concat := func(name string, parts ...string) gguf.WriterTensor {
		out := gguf.WriterTensor{Name: name, Type: byName[parts[0]].Type, Dims: []uint64{byName[parts[0]].Dims[0], 0}}
		for _, p := range parts {
			out.Dims[1] += byName[p].Dims[1]
			out.Data = append(out.Data, byName[p].Data...)
		}
		return out
	}
	var ts []gguf.WriterTensor
	for _, name := range order {
		blk, rest, ok := strings.Cut(strings.TrimPrefix(name, "blk."), ".")
		switch {
		case ok && rest == "attn_q.weight":
			p := "blk." + blk + "."
			ts = append(ts, concat(p+"attn_qkv.weight", p+"attn_q.weight", p+"attn_k.weight", p+"attn_v.weight"))
		case ok && rest == "ffn_gate.weight":
			p := "blk." + blk + "."
			ts = append(ts, concat(p+"ffn_up.weight", p+"ffn_gate.weight", p+"ffn_up.weight"))
		case ok && (rest == "attn_k.weight" || rest == "attn_v.weight" || rest == "ffn_up.weight"):
		default:
			ts = append(ts, byName[name])
		}
	}
	if edit != nil {
		ts = edit(ts)
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, src.KV, ts); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A model whose q, k, v and gate, up are fused tensors is the same model:
// the logits are bit for bit those of the separate tensors. A fused tensor
// of the wrong size, or one beside the separate tensors, is refused naming
// it.
func TestFusedTensors(t *testing.T) {
	src, err := gguf.Open(sharedtest.Path(t, "golden/models/llama-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	run := func(f *gguf.File) ([]float32, error) {
		m, err := New(f, Options{Threads: 1})
		if err != nil {
			return nil, err
		}
		defer m.Close()
		c := newCache(t, m, CacheOptions{Context: 64})
		return forward(t, m, c, []int32{5, 17, 42, 9, 100, 3}, true), nil
	}
	want, err := run(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run(fuse(t, src, nil))
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(got, want); d != 0 {
		t.Errorf("fused tensors: logits differ by up to %g", d)
	}

	for _, c := range []struct {
		name string
		edit func([]gguf.WriterTensor) []gguf.WriterTensor
		want string
	}{
		{"short qkv", func(ts []gguf.WriterTensor) []gguf.WriterTensor {
			for i := range ts {
				if ts[i].Name == "blk.1.attn_qkv.weight" {
					rowBytes := len(ts[i].Data) / int(ts[i].Dims[1])
					ts[i].Dims[1]--
					ts[i].Data = ts[i].Data[:len(ts[i].Data)-rowBytes]
				}
			}
			return ts
		}, "blk.1.attn_qkv.weight"},
		{"qkv beside q", func(ts []gguf.WriterTensor) []gguf.WriterTensor {
			for _, x := range ts {
				if x.Name == "blk.0.attn_qkv.weight" {
					q := x
					q.Name, q.Dims = "blk.0.attn_q.weight", []uint64{x.Dims[0], x.Dims[0]}
					q.Data = x.Data[:len(x.Data)*int(x.Dims[0])/int(x.Dims[1])]
					return append(ts, q)
				}
			}
			return ts
		}, "blk.0.attn_q.weight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := run(fuse(t, src, c.edit))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %s", err, c.want)
			}
		})
	}
}
