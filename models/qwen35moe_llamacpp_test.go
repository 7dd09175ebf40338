package models_test

import (
	"context"
	"math"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/internal/goldentest"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// Qwen3.5-MoE has no golden file: llamaref writes a tiny one (qwen35-tiny's
// shape with 4 experts of width 128, 2 used, and a shared expert), and
// llama.cpp's logits on it are compared live with ours, in F32 within
// golden-next's qwen35-tiny tolerance (no router decision of this file is
// a near tie: max 5e-5 measured), in Q4_K_M within qwen3moe-tiny's, the
// tolerance of experts of this kind.
func TestQwen35MoEMatchesLlamaCpp(t *testing.T) {
	bin := sharedtest.Llamaref(t)
	dir := t.TempDir()
	f32 := filepath.Join(dir, "qwen35moe-tiny-F32.gguf")
	if b, err := exec.Command(bin, "synth", "--out", f32, "--arch", "qwen35moe", "--seed", "34", "--n-layer", "4", "--n-embd", "256",
		"--n-head", "8", "--n-head-kv", "2", "--ssm-heads", "4", "--ssm-groups", "2", "--n-expert", "4", "--n-expert-used", "2",
		"--n-ff-exp", "128").CombinedOutput(); err != nil {
		t.Fatalf("llamaref synth: %v\n%s", err, b)
	}
	q4 := filepath.Join(dir, "qwen35moe-tiny-Q4_K_M.gguf")
	if b, err := exec.Command(bin, "quantize", f32, q4, "Q4_K_M").CombinedOutput(); err != nil {
		t.Fatalf("llamaref quantize: %v\n%s", err, b)
	}
	tokens := []int32{331, 296, 308, 311, 313, 318, 320, 262, 323, 325, 13, 198, 40, 41, 42, 300, 301, 302, 5, 6, 7, 8, 9, 10, 11, 12, 250, 251, 252, 253}
	for _, c := range []struct{ path, typ string }{{f32, "F32"}, {q4, "Q4_K_M"}} {
		t.Run(c.typ, func(t *testing.T) {
			want, _ := sharedtest.LlamarefLogits(t, c.path, tokens, "--cpu-variant", "haswell", "--threads", "1")
			_, m := goldentest.Open(t, c.path, engine.WithThreads(2))
			cache, err := m.NewCache()
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Forward(context.Background(), cache, tokens, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			V := m.Weights().Config.Vocab
			var worst, sq float64
			for p, row := range want {
				for j, w := range row {
					d := math.Abs(float64(got[p*V+j]) - float64(w))
					worst, sq = max(worst, d), sq+d*d
				}
			}
			rms := math.Sqrt(sq / float64(len(want)*V))
			tol := goldentest.NextTolerance(t, "qwen35-tiny", c.typ)
			if c.typ != "F32" {
				tol = goldentest.NextTolerance(t, "qwen3moe-tiny", c.typ)
			}
			t.Logf("qwen35moe-tiny-%s: max %.3g (tolerance %g), RMS %.3g (tolerance %g)", c.typ, worst, tol.MaxAbs, rms, tol.RMS)
			if worst > tol.MaxAbs || rms > tol.RMS {
				t.Errorf("max %.3g, RMS %.3g: beyond llama.cpp's own spread", worst, rms)
			}
		})
	}
}
