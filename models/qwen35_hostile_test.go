package models_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/llama"
)

// Qwen3.5's bad keys and tensors get an error naming the key or the tensor,
// before anything large is allocated, never a panic.
func TestQwen35BadFiles(t *testing.T) {
	for _, c := range []struct {
		name   string
		kv     func([]gguf.KV) []gguf.KV
		ts     func([]gguf.WriterTensor) []gguf.WriterTensor
		errHas string
	}{
		{"no conv kernel", dropKV("qwen35.ssm.conv_kernel"), nil, "qwen35.ssm.conv_kernel"},
		{"conv kernel 1", setKV("qwen35.ssm.conv_kernel", uint32(1)), nil, "length 1"},
		{"wrong conv kernel", setKV("qwen35.ssm.conv_kernel", uint32(3)), nil, "blk.0.ssm_conv1d.weight has shape"},
		{"inner size not state × heads", setKV("qwen35.ssm.inner_size", uint32(96)), nil, "qwen35.ssm.inner_size = 96"},
		{"value heads not a multiple of key heads", setKV("qwen35.ssm.group_count", uint32(3)), nil, "not a multiple of 3 key heads"},
		{"huge state", setKV("qwen35.ssm.state_size", uint32(1<<20)), nil, "qwen35.ssm.inner_size"},
		{"huge heads", func(kv []gguf.KV) []gguf.KV {
			kv = setKV("qwen35.ssm.state_size", uint32(64))(kv)
			kv = setKV("qwen35.ssm.time_step_rank", uint32(1<<16))(kv)
			return setKV("qwen35.ssm.inner_size", uint32(64<<16))(kv)
		}, nil, "more than"},
		{"interval 0", setKV("qwen35.full_attention_interval", uint32(0)), nil, "qwen35.full_attention_interval = 0"},
		{"interval 2", setKV("qwen35.full_attention_interval", uint32(2)), nil, "blk.1."},
		{"no sections", dropKV("qwen35.rope.dimension_sections"), nil, "qwen35.rope.dimension_sections"},
		{"sections all zero", setKV("qwen35.rope.dimension_sections", []int32{0, 0, 0, 0}), nil, "all zeros"},
		{"a negative section", setKV("qwen35.rope.dimension_sections", []int32{1, -1, 2, 0}), nil, "qwen35.rope.dimension_sections[1] = -1"},
		{"every block multi-token prediction", setKV("qwen35.nextn_predict_layers", uint32(4)), nil, "qwen35.nextn_predict_layers = 4, but qwen35.block_count is 4"},
		{"experts", setKV("qwen35.expert_count", uint32(4)), nil, "qwen35moe"},
		{"no ssm_a", nil, dropTensor("blk.2.ssm_a"), "blk.2.ssm_a is missing"},
		{"no gate", nil, dropTensor("blk.0.attn_gate.weight"), "blk.0.attn_gate.weight is missing"},
		{"no query norm", nil, dropTensor("blk.3.attn_q_norm.weight"), "blk.3.attn_q_norm.weight is missing"},
		{"an ungated query", nil, func(ts []gguf.WriterTensor) []gguf.WriterTensor {
			for i := range ts {
				if ts[i].Name == "blk.3.attn_q.weight" {
					ts[i].Dims[1] /= 2
					ts[i].Data = ts[i].Data[:len(ts[i].Data)/2]
				}
			}
			return ts
		}, "blk.3.attn_q.weight has shape"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := gguf.Open(sharedtest.Path(t, "golden-next/models/qwen35-tiny-Q8_0.gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			f := rewrite(t, src, c.kv, c.ts)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err = openBlock(f)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("error %v, want one containing %q", err, c.errHas)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
				t.Errorf("allocated %d bytes before failing", n)
			}
		})
	}
}

// Every integer key of Qwen3.5's header, set to each edge value, gives a
// model or an error, never a panic, allocating at most 16 MB.
func TestQwen35HostileHeaderSweep(t *testing.T) {
	src, err := gguf.Open(sharedtest.Path(t, "golden-next/models/qwen35-tiny-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	keys := []string{"qwen35.nextn_predict_layers"} // not in the file, read when there
	for _, kv := range src.KV {
		switch kv.Value.(type) {
		case uint32, []int32:
			if strings.HasPrefix(kv.Key, "qwen35.") {
				keys = append(keys, kv.Key)
			}
		}
	}
	for _, key := range keys {
		for _, v := range []any{uint32(0), uint32(1), uint32(3), uint32(1 << 24), uint32(math.MaxUint32), int64(-1), "8", float32(8),
			[]int32{}, []int32{1 << 30, 0, 0, 0}, []int32{1, 1, 1, 1, 1}} {
			f := rewrite(t, src, setKV(key, v), nil)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_ = openBlock(f)
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
				t.Errorf("%s = %v: allocated %d bytes", key, v, n)
			}
		}
	}
}

// A file with a multi-token-prediction block after the model's own (block
// count one more, nextn_predict_layers 1, the block's tensors as
// llama.cpp's converter names them) runs the model without it: the same
// logits as the file without the block.
func TestQwen35SkipsMTPBlock(t *testing.T) {
	src, err := gguf.Open(sharedtest.Path(t, "golden-next/models/qwen35-tiny-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	mtp := rewrite(t, src, func(kv []gguf.KV) []gguf.KV {
		kv = setKV("qwen35.block_count", uint32(5))(kv)
		return setKV("qwen35.nextn_predict_layers", uint32(1))(kv)
	}, func(ts []gguf.WriterTensor) []gguf.WriterTensor {
		var extra []gguf.WriterTensor
		for _, x := range ts {
			if rest, ok := strings.CutPrefix(x.Name, "blk.3."); ok {
				extra = append(extra, gguf.WriterTensor{Name: "blk.4." + rest, Dims: x.Dims, Type: x.Type, Data: x.Data})
			}
		}
		eh := gguf.WriterTensor{Name: "blk.4.nextn.eh_proj.weight", Dims: []uint64{512, 256}, Type: gguf.TypeF32, Data: make([]byte, 4*512*256)}
		return append(append(ts, extra...), eh)
	})
	logits := func(f *gguf.File) []float32 {
		cfg, arch, err := family.Describe(f)
		if err != nil {
			t.Fatal(err)
		}
		w, err := llama.LoadWeights(f, cfg, arch)
		if err != nil {
			t.Fatal(err)
		}
		m, err := llama.NewCPU(w, llama.Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		c, err := m.NewCache(llama.CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Forward(context.Background(), c, []int32{331, 296, 308, 311, 313, 318, 320}, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), out...)
	}
	cfg, err := llama.ConfigFromGGUF(mtp)
	if err != nil || cfg.Layers != 4 || cfg.NextN != 1 {
		t.Fatalf("config of the file with an MTP block: %d layers, %d NextN, %v", cfg.Layers, cfg.NextN, err)
	}
	if a, b := logits(src), logits(mtp); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the MTP block changed the logits")
	}
}
