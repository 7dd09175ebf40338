package models_test

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// A Granite 4.0-H file's bad Mamba-2 hyper-parameters, layer pattern and
// tensors get an error naming the key or the tensor, before anything large
// is allocated, never a panic.
func TestHybridBadFiles(t *testing.T) {
	const file = "granitehybrid-tiny-Q4_K_M"
	for _, c := range []struct {
		name   string
		kv     func([]gguf.KV) []gguf.KV
		ts     func([]gguf.WriterTensor) []gguf.WriterTensor
		errHas string
	}{
		{"no state size", dropKV("granitehybrid.ssm.state_size"), nil, "granitehybrid.ssm.state_size"},
		{"state size of other tensors", setKV("granitehybrid.ssm.state_size", uint32(32)), nil, "blk.0.ssm_in.weight has shape"},
		{"huge state", setKV("granitehybrid.ssm.inner_size", uint32(1<<24)), nil, "values per sequence"},
		{"inner size out of range", setKV("granitehybrid.ssm.inner_size", uint32(1<<30)), nil, "granitehybrid.ssm.inner_size = 1073741824 is out of range"},
		{"heads not dividing the inner size", setKV("granitehybrid.ssm.time_step_rank", uint32(7)), nil, "inner size 512 is not a multiple of the head count 7"},
		{"groups not dividing the heads", setKV("granitehybrid.ssm.group_count", uint32(3)), nil, "head count 16 is not a multiple of the group count 3"},
		{"no convolution", setKV("granitehybrid.ssm.conv_kernel", uint32(1)), nil, "convolution length 1"},
		{"longer convolution than the tensor", setKV("granitehybrid.ssm.conv_kernel", uint32(5)), nil, "blk.0.ssm_conv1d.weight has shape"},
		{"state size as a string", setKV("granitehybrid.ssm.state_size", "64"), nil, "granitehybrid.ssm.state_size"},
		{"no conv bias", nil, dropTensor("blk.0.ssm_conv1d.bias"), "blk.0.ssm_conv1d.bias is missing"},
		{"no grouped norm", nil, dropTensor("blk.0.ssm_norm.weight"), "blk.0.ssm_norm.weight is missing"},
		{"no decay", nil, dropTensor("blk.0.ssm_a"), "blk.0.ssm_a is missing"},
		{"layer pattern of the wrong length", setKV("granitehybrid.attention.head_count_kv", []int32{0, 2, 2}), nil, "has 3 entries for 2 layers"},
		{"a Mamba layer called attention", setKV("granitehybrid.attention.head_count_kv", []int32{2, 2}), nil, "blk.0.attn_q.weight is missing"},
		{"an attention layer called Mamba", setKV("granitehybrid.attention.head_count_kv", []int32{0, 0}), nil, "granitehybrid.attention.head_count_kv is 0 in every layer"},
		{"logit scale as a string", setKV("granitehybrid.logit_scale", "0.25"), nil, "granitehybrid.logit_scale"},
		{"rope switch as a number", setKV("granitehybrid.rope.scaling.finetuned", uint32(0)), nil, "granitehybrid.rope.scaling.finetuned"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := gguf.Open(sharedtest.Path(t, "golden-next/models/"+file+".gguf"))
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

// Every integer key of a hybrid's header, set to each edge value, gives a
// model or an error, never a panic, allocating at most 16 MB with one
// cache.
func TestHybridHostileHeaderSweep(t *testing.T) {
	for _, file := range []string{"granitehybrid-tiny-Q4_K_M"} {
		src, err := gguf.Open(sharedtest.Path(t, "golden-next/models/"+file+".gguf"))
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
