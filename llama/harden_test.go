package llama

import (
	"encoding/binary"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/gguf"
)

// demoModel is the repository's own tiny SmolLM3 (testdata), so these tests
// need no reference data.
const demoModel = "../testdata/smollm3-tinyq-Q4_K_M.gguf"

// editDemo returns the demo model with changed metadata or tensors.
func editDemo(t *testing.T, editKV func([]gguf.KV) []gguf.KV, editT func([]gguf.WriterTensor)) *gguf.File {
	t.Helper()
	src, err := gguf.Open(demoModel)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	return rewriteFile(t, src, editKV, editT)
}

// setKey returns an edit that stores v under key, adding the key if absent.
func setKey(key string, v any) func([]gguf.KV) []gguf.KV {
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

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A block count the file's tensors cannot back fails in ConfigFromGGUF,
// naming the key, before anything is allocated per block. (Before the check,
// 2^24 blocks in this 2 MB file cost 22 s and 3.6 GB before New failed.)
func TestBlockCountBoundedByTensors(t *testing.T) {
	for _, n := range []uint32{9, 1 << 20, 1 << 24, 1e9} {
		f := editDemo(t, setKey("smollm3.block_count", n), nil)
		var err error
		bytes := allocated(func() { _, err = New(f, Options{Threads: 1}) })
		if err == nil || !strings.Contains(err.Error(), "smollm3.block_count") {
			t.Errorf("block_count %d: error %v, want one naming smollm3.block_count", n, err)
		}
		if bytes > 16<<20 {
			t.Errorf("block_count %d: New allocated %d bytes before failing", n, bytes)
		}
	}
}

// A block count below the file's blocks (block 7's tensors in a file
// that says 4 blocks) would run a truncated model: refused, naming the key.
func TestBlockCountBelowTheFile(t *testing.T) {
	f := editDemo(t, setKey("smollm3.block_count", uint32(4)), nil)
	_, err := New(f, Options{Threads: 1})
	if err == nil || !strings.Contains(err.Error(), "smollm3.block_count = 4") || !strings.Contains(err.Error(), "blk.7") {
		t.Fatalf("error %v, want one naming smollm3.block_count and blk.7", err)
	}
}

// Other widths a hostile header may inflate fail on the key or on the first
// tensor that disagrees, without allocating for the declared size.
func TestHostileWidths(t *testing.T) {
	for _, c := range []struct {
		key    string
		v      uint32
		errHas string
	}{
		{"smollm3.embedding_length", 1 << 24, "smollm3.embedding_length = 16777216, but token_embd.weight has rows of 256"},
		{"smollm3.embedding_length", 1<<24 + 1, "smollm3.embedding_length"},
		{"smollm3.feed_forward_length", 1 << 24, "ffn_gate.weight"},
		{"smollm3.attention.head_count", 1 << 24, "smollm3.attention.head_count"},
		{"smollm3.attention.head_count_kv", 1 << 24, "smollm3.attention.head_count_kv"},
		{"smollm3.attention.key_length", 1 << 24, "attn_q.weight"},
		{"smollm3.vocab_size", 1 << 24, "smollm3.vocab_size = 16777216, but token_embd.weight has 337 rows"},
	} {
		f := editDemo(t, setKey(c.key, c.v), nil)
		var err error
		bytes := allocated(func() { _, err = New(f, Options{Threads: 1}) })
		if err == nil || !strings.Contains(err.Error(), c.errHas) {
			t.Errorf("%s = %d: error %v, want one naming %s", c.key, c.v, err, c.errHas)
		}
		if bytes > 16<<20 {
			t.Errorf("%s = %d: New allocated %d bytes before failing", c.key, c.v, bytes)
		}
	}
}

// Any architecture name works: the keys are read under it. Which names a
// program runs is decided by its registry, not by this package.
func TestConfigAnyArchitecture(t *testing.T) {
	rename := func(kv []gguf.KV) []gguf.KV {
		for i := range kv {
			if kv[i].Key == "general.architecture" {
				kv[i].Value = "my-llama"
			}
			if rest, ok := strings.CutPrefix(kv[i].Key, "smollm3."); ok {
				kv[i].Key = "my-llama." + rest
			}
		}
		return kv
	}
	f := editDemo(t, rename, nil)
	c, err := ConfigFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Arch != "my-llama" || c.Layers != 8 || c.Embd != 256 || c.Heads != 4 || c.KVHeads != 2 || c.Vocab != 337 {
		t.Errorf("config %+v", c)
	}
	f = editDemo(t, setKey("general.architecture", "gpt2"), nil)
	if _, err := ConfigFromGGUF(f); err == nil || !strings.Contains(err.Error(), "gpt2.block_count") {
		t.Errorf("gpt2 without gpt2.* keys: error %v, want one naming gpt2.block_count", err)
	}
}

// A NaN or infinite norm weight is refused at load, naming the tensor;
// before, the model loaded and every logit came out NaN.
func TestNonFiniteNormWeights(t *testing.T) {
	for _, c := range []struct {
		tensor string
		elem   int
		v      float32
	}{
		{"blk.3.ffn_norm.weight", 7, float32(math.NaN())},
		{"blk.0.attn_norm.weight", 0, float32(math.Inf(1))},
		{"output_norm.weight", 255, float32(math.Inf(-1))},
	} {
		f := editDemo(t, nil, func(ts []gguf.WriterTensor) {
			for i := range ts {
				if ts[i].Name == c.tensor {
					binary.LittleEndian.PutUint32(ts[i].Data[4*c.elem:], math.Float32bits(c.v))
				}
			}
		})
		_, err := New(f, Options{Threads: 1})
		if err == nil || !strings.Contains(err.Error(), c.tensor) {
			t.Errorf("%v in %s: error %v, want one naming the tensor", c.v, c.tensor, err)
		}
	}
}

func TestThreadsBounded(t *testing.T) {
	f := editDemo(t, nil, nil)
	for _, n := range []int{-1, backend.MaxThreads + 1, math.MaxInt32} {
		if m, err := New(f, Options{Threads: n}); err == nil || !strings.Contains(err.Error(), "threads") {
			if m != nil {
				m.Close()
			}
			t.Errorf("Threads %d: error %v", n, err)
		}
	}
	m, err := New(f, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Threads() != 2 {
		t.Errorf("Threads() = %d, want 2", m.Threads())
	}
}

// Every integer key of the model's header, set to each edge value, gives a
// model or an error, never a panic, and New allocates no more than 16 MB
// for it (the model's own norms take a few KB): what a header declares
// costs nothing until the tensors back it.
func TestHostileHeaderSweep(t *testing.T) {
	src, err := gguf.Open(demoModel)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var keys []string
	for _, kv := range src.KV {
		if _, ok := kv.Value.(uint32); ok && strings.HasPrefix(kv.Key, "smollm3.") {
			keys = append(keys, kv.Key)
		}
	}
	if len(keys) < 6 {
		t.Fatalf("only %d integer keys: %v", len(keys), keys)
	}
	for _, key := range keys {
		for _, v := range []any{uint32(0), uint32(1), uint32(3), uint32(1 << 24), uint32(math.MaxUint32), int64(-1), uint64(1 << 40), "8", float32(8)} {
			f := rewriteFile(t, src, setKey(key, v), nil)
			var m *CPU
			bytes := allocated(func() { m, err = New(f, Options{Threads: 1}) })
			if err == nil {
				m.Close()
			}
			if bytes > 16<<20 {
				t.Errorf("%s = %v: New allocated %d bytes (err %v)", key, v, bytes, err)
			}
		}
	}
}
