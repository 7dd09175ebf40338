package models_test

import (
	"bytes"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/llama"
)

// openBlock describes and loads a file as engine.Open does (the family's
// description, then the weights, then a CPU runner) and makes one cache,
// which allocates a hybrid's recurrent state.
func openBlock(f *gguf.File) error {
	cfg, arch, err := family.Describe(f)
	if err != nil {
		return err
	}
	w, err := llama.LoadWeights(f, cfg, arch)
	if err != nil {
		return err
	}
	m, err := llama.NewCPU(w, llama.Options{Threads: 1, KeepLayout: true})
	if err != nil {
		return err
	}
	defer m.Close()
	_, err = m.NewCache(llama.CacheOptions{Context: 64})
	return err
}

// rewrite returns src with its metadata or tensors changed.
func rewrite(t *testing.T, src *gguf.File, editKV func([]gguf.KV) []gguf.KV, editT func([]gguf.WriterTensor) []gguf.WriterTensor) *gguf.File {
	t.Helper()
	kv := append([]gguf.KV(nil), src.KV...)
	if editKV != nil {
		kv = editKV(kv)
	}
	var ts []gguf.WriterTensor
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		ts = append(ts, gguf.WriterTensor{Name: ti.Name, Dims: append([]uint64(nil), ti.Dims...), Type: ti.Type,
			Data: append([]byte(nil), src.TensorData(ti)...)})
	}
	if editT != nil {
		ts = editT(ts)
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, ts); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func setKV(key string, v any) func([]gguf.KV) []gguf.KV {
	return func(kv []gguf.KV) []gguf.KV {
		for i := range kv {
			if kv[i].Key == key {
				kv[i].Value = v
				return kv
			}
		}
		return append(kv, gguf.KV{Key: key, Value: v})
	}
}

func dropKV(key string) func([]gguf.KV) []gguf.KV {
	return func(kv []gguf.KV) []gguf.KV {
		var out []gguf.KV
		for _, e := range kv {
			if e.Key != key {
				out = append(out, e)
			}
		}
		return out
	}
}

func dropTensor(name string) func([]gguf.WriterTensor) []gguf.WriterTensor {
	return func(ts []gguf.WriterTensor) []gguf.WriterTensor {
		var out []gguf.WriterTensor
		for _, x := range ts {
			if x.Name != name {
				out = append(out, x)
			}
		}
		return out
	}
}

// A mixture of experts' bad counts and tensors get an error naming the key
// or the tensor, before anything large is allocated, never a panic.
func TestMoEBadFiles(t *testing.T) {
	for _, c := range []struct {
		file, name string
		kv         func([]gguf.KV) []gguf.KV
		ts         func([]gguf.WriterTensor) []gguf.WriterTensor
		errHas     string
	}{
		{"qwen3moe-tiny-Q4_K_M", "no experts", setKV("qwen3moe.expert_count", uint32(0)), nil, "qwen3moe.expert_count is missing or 0"},
		{"qwen3moe-tiny-Q4_K_M", "2000 experts", setKV("qwen3moe.expert_count", uint32(2000)), nil, "qwen3moe.expert_count = 2000: at most 1024"},
		{"qwen3moe-tiny-Q4_K_M", "more experts than the tensors", setKV("qwen3moe.expert_count", uint32(8)), nil, "ffn_gate_inp.weight has shape"},
		{"qwen3moe-tiny-Q4_K_M", "more used than experts", setKV("qwen3moe.expert_used_count", uint32(5)), nil, "qwen3moe.expert_used_count = 5"},
		{"qwen3moe-tiny-Q4_K_M", "no used count", dropKV("qwen3moe.expert_used_count"), nil, "qwen3moe.expert_used_count is missing"},
		{"qwen3moe-tiny-Q4_K_M", "wrong expert width", setKV("qwen3moe.expert_feed_forward_length", uint32(64)), nil, "ffn_gate_exps.weight has shape"},
		{"qwen3moe-tiny-Q4_K_M", "huge expert width", setKV("qwen3moe.expert_feed_forward_length", uint32(1<<30)), nil, "qwen3moe.expert_feed_forward_length"},
		{"qwen3moe-tiny-Q4_K_M", "no router", nil, dropTensor("blk.1.ffn_gate_inp.weight"), "blk.1.ffn_gate_inp.weight is missing"},
		{"qwen3moe-tiny-Q4_K_M", "no down experts", nil, dropTensor("blk.0.ffn_down_exps.weight"), "blk.0.ffn_down_exps.weight is missing"},
		{"gptoss-tiny-Q8_0", "no router bias", nil, dropTensor("blk.0.ffn_gate_inp.bias"), "blk.0.ffn_gate_inp.bias is missing"},
		{"gptoss-tiny-Q8_0", "no sinks", nil, dropTensor("blk.1.attn_sinks.weight"), "blk.1.attn_sinks.weight is missing"},
		{"gptoss-tiny-Q8_0", "gating func out of range", setKV("gpt-oss.expert_gating_func", uint32(9)), nil, "gpt-oss.expert_gating_func = 9"},
		{"gptoss-tiny-Q8_0", "no window", dropKV("gpt-oss.attention.sliding_window"), nil, "gpt-oss.attention.sliding_window"},
		{"lfm2moe-tiny-Q4_K_M", "no experts", setKV("lfm2moe.expert_count", uint32(0)), nil, "lfm2moe.expert_count is missing or 0"},
		{"lfm2moe-tiny-Q4_K_M", "no gating func", dropKV("lfm2moe.expert_gating_func"), nil, "lfm2moe.expert_gating_func is missing"},
		{"lfm2moe-tiny-Q4_K_M", "softmax of the chosen", setKV("lfm2moe.expert_gating_func", uint32(3)), nil, "lfm2moe.expert_gating_func = 3"},
		{"lfm2moe-tiny-Q4_K_M", "gating func out of range", setKV("lfm2moe.expert_gating_func", uint32(9)), nil, "lfm2moe.expert_gating_func = 9"},
		{"lfm2moe-tiny-Q4_K_M", "a shared expert", setKV("lfm2moe.expert_shared_feed_forward_length", uint32(64)), nil, "lfm2moe.expert_shared_feed_forward_length = 64"},
		{"lfm2moe-tiny-Q4_K_M", "more dense blocks than blocks", setKV("lfm2moe.leading_dense_block_count", uint32(9)), nil, "lfm2moe.leading_dense_block_count = 9: more than the 3 blocks"},
		{"lfm2moe-tiny-Q4_K_M", "dense blocks not an integer", setKV("lfm2moe.leading_dense_block_count", "1"), nil, "lfm2moe.leading_dense_block_count"},
		{"lfm2moe-tiny-Q4_K_M", "a dense block of experts", setKV("lfm2moe.leading_dense_block_count", uint32(2)), nil, "blk.1.ffn_gate.weight is missing"},
		{"lfm2moe-tiny-Q4_K_M", "no dense blocks", setKV("lfm2moe.leading_dense_block_count", uint32(0)), nil, "blk.0.ffn_gate_inp.weight is missing"},
		{"lfm2moe-tiny-Q4_K_M", "no selection bias", nil, dropTensor("blk.2.exp_probs_b.bias"), "blk.2.exp_probs_b.bias is missing"},
		{"lfm2moe-tiny-Q4_K_M", "no kernel length", dropKV("lfm2moe.shortconv.l_cache"), nil, "lfm2moe.shortconv.l_cache"},
		{"lfm2moe-tiny-Q4_K_M", "uniform kv heads", setKV("lfm2moe.attention.head_count_kv", uint32(2)), nil, "lfm2moe.attention.head_count_kv is not a per-layer array"},
		{"lfm2-tiny-Q4_K_M", "experts in an lfm2 file", setKV("lfm2.expert_count", uint32(4)), nil, "lfm2.expert_count = 4: LFM2's mixtures of experts are architecture lfm2moe"},
	} {
		t.Run(c.file+"/"+c.name, func(t *testing.T) {
			src, err := gguf.Open(goldentest.TinyModel(t, c.file))
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

// Every integer key of a mixture of experts' header, set to each edge
// value, gives a model or an error, never a panic, allocating at most 16 MB.
func TestMoEHostileHeaderSweep(t *testing.T) {
	for _, file := range []string{"qwen3moe-tiny-Q4_K_M", "gptoss-tiny-Q8_0", "lfm2moe-tiny-Q4_K_M"} {
		src, err := gguf.Open(goldentest.TinyModel(t, file))
		if err != nil {
			t.Fatal(err)
		}
		arch, _ := src.Architecture()
		var keys []string
		for _, kv := range src.KV {
			if _, ok := kv.Value.(uint32); ok && strings.HasPrefix(kv.Key, arch+".") {
				keys = append(keys, kv.Key)
			}
		}
		for _, key := range keys {
			for _, v := range []any{uint32(0), uint32(1), uint32(3), uint32(1 << 24), uint32(math.MaxUint32), int64(-1), "8", float32(8)} {
				f := rewrite(t, src, setKV(key, v), nil)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_ = openBlock(f)
				runtime.ReadMemStats(&after)
				if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
					t.Errorf("%s: %s = %v: allocated %d bytes", file, key, v, n)
				}
			}
		}
		src.Close()
	}
}
