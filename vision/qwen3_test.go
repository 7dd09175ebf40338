package vision

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/synth"
)

// TestBilinearAligned: resizing with aligned corners keeps a grid of the
// same size as it is and the four corners of any, reproduces a function
// linear in x and y at every point, and handles a side of 1.
func TestBilinearAligned(t *testing.T) {
	const E = 2
	for _, c := range []struct{ sw, sh, dw, dh int }{
		{4, 4, 4, 4}, {4, 4, 8, 8}, {8, 8, 12, 6}, {8, 8, 6, 8}, {5, 3, 2, 7}, {3, 3, 1, 5},
	} {
		src := make([]float32, c.sw*c.sh*E)
		for y := range c.sh {
			for x := range c.sw {
				src[(y*c.sw+x)*E] = float32(3*x - 2*y)
				src[(y*c.sw+x)*E+1] = float32(y)
			}
		}
		dst := make([]float32, c.dw*c.dh*E)
		bilinearAligned(dst, src, c.sw, c.sh, c.dw, c.dh, E)
		coord := func(i, d, s int) float64 {
			if d == 1 || s == 1 {
				return float64(i) * float64(s) / float64(d)
			}
			return float64(i) * float64(s-1) / float64(d-1)
		}
		for y := range c.dh {
			for x := range c.dw {
				sx, sy := coord(x, c.dw, c.sw), coord(y, c.dh, c.sh)
				want := [E]float64{3*sx - 2*sy, sy}
				for e := range E {
					if got := float64(dst[(y*c.dw+x)*E+e]); math.Abs(got-want[e]) > 1e-5 {
						t.Errorf("%dx%d → %dx%d: (%d, %d)[%d] = %v, want %v", c.sw, c.sh, c.dw, c.dh, x, y, e, got, want[e])
					}
				}
			}
		}
		if c.sw == c.dw && c.sh == c.dh && !slices.Equal(dst, src) {
			t.Errorf("%dx%d to itself changed the grid", c.sw, c.sh)
		}
		if c.dw > 1 && c.dh > 1 && c.sw > 1 && c.sh > 1 {
			last := func(g []float32, w, h int) []float32 { return g[((h-1)*w+w-1)*E : ((h-1)*w+w)*E] }
			if !slices.Equal(dst[:E], src[:E]) || !slices.Equal(last(dst, c.dw, c.dh), last(src, c.sw, c.sh)) {
				t.Errorf("%dx%d → %dx%d: corners moved", c.sw, c.sh, c.dw, c.dh)
			}
		}
	}
}

// TestQwen3VLRefusals: a qwen3vl_merger file missing what mtmd's graph
// needs, or whose deepstack key disagrees with its tensors, is refused by
// Open with an error naming the key or tensor.
func TestQwen3VLRefusals(t *testing.T) {
	var buf bytes.Buffer
	if err := synth.WriteQwen3VLMmproj(&buf, synth.Qwen3VLMmprojTiny()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.gguf")
	if err := os.WriteFile(good, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := gguf.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	drop := func(name string) func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
		return func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
			return kv, slices.DeleteFunc(ts, func(t gguf.WriterTensor) bool { return t.Name == name })
		}
	}
	setKV := func(key string, v any) func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
		return func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
			for i := range kv {
				if kv[i].Key == key {
					kv[i].Value = v
				}
			}
			return kv, ts
		}
	}
	for _, c := range []struct {
		name   string
		change func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor)
		want   string
	}{
		{"no patch bias", drop("v.patch_embd.bias"), "tensor v.patch_embd.bias is missing"},
		{"no positions", drop("v.position_embd.weight"), "tensor v.position_embd.weight is missing"},
		{"q, k, v not stacked", drop("v.blk.1.attn_qkv.weight"), "tensor v.blk.1.attn_qkv.weight is missing"},
		{"deepstack merger without its norm", drop("v.deepstack.1.norm.weight"), "tensor v.deepstack.1.norm.weight is missing"},
		{"deepstack key disagrees", setKV("clip.vision.is_deepstack_layers", []bool{true, false, true}), "is_deepstack_layers[1] is false, but tensor v.deepstack.1.fc1.weight is present"},
		{"deepstack key too short", setKV("clip.vision.is_deepstack_layers", []bool{true}), "want 3 booleans"},
		{"positions not a square", func(kv []gguf.KV, ts []gguf.WriterTensor) ([]gguf.KV, []gguf.WriterTensor) {
			for i := range ts {
				if ts[i].Name == "v.position_embd.weight" {
					ts[i].Dims = []uint64{64, 63}
					ts[i].Data = ts[i].Data[:64*63*4]
				}
			}
			return kv, ts
		}, "63 rows, not a square grid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			kv := slices.Clone(src.KV)
			var ts []gguf.WriterTensor
			for i := range src.Tensors {
				ti := &src.Tensors[i]
				ts = append(ts, gguf.WriterTensor{Name: ti.Name, Dims: slices.Clone(ti.Dims), Type: ti.Type, Data: src.TensorData(ti)})
			}
			kv, ts = c.change(kv, ts)
			path := filepath.Join(dir, "bad.gguf")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := gguf.Write(f, kv, ts); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			pr, err := Open(path, Options{Threads: 1})
			if err == nil {
				pr.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
	pr, err := Open(good, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	pr.Close()
}
