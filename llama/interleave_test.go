package llama

import (
	"context"
	"math"
	"testing"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tensor"
)

// TestInterleavedWeights loads the Q4_K_M golden model twice, as New does
// by default (the q4_K matrices interleaved where the CPU's kernels want
// it) and with KeepLayout, and checks that the interleaving happened exactly
// where it should, that the logits of a prompt and of decode steps agree as
// closely as llama.cpp's own CPU kernel variants agree with each other on
// this model, and that Close hands the copies back. (The kernels agree to
// float32 rounding, quant's tests check that; through 8 layers whose
// activations are rounded to 8 bits before each product, such differences
// grow to a few hundredths of a logit.)
func TestInterleavedWeights(t *testing.T) {
	opts := Options{Threads: 2}
	_, inter := openModel(t, "smollm3-tinyq-Q4_K_M", opts, rope.EveryNth(8, 4))
	opts.KeepLayout = true
	_, plain := openModel(t, "smollm3-tinyq-Q4_K_M", opts, rope.EveryNth(8, 4))

	want := 0
	var all []*tensor.Matrix
	for i := range inter.Config.Layers {
		for _, x := range inter.layers[i].matrices() {
			all = append(all, *x)
		}
	}
	all = append(all, inter.output)
	got := 0
	for _, x := range all {
		if quant.InterleaveRows(x.Type) > 0 && x.Rows%quant.InterleaveRows(x.Type) == 0 {
			want++
		}
		if x.Interleaved() {
			got++
		}
	}
	if got != want {
		t.Fatalf("%d matrices interleaved, want %d (%s kernels)", got, want, quant.Path())
	}
	if quant.InterleaveRows(gguf.TypeQ4_K) > 0 && got == 0 {
		t.Fatalf("no q4_K matrix interleaved on %s", quant.Path())
	}
	for i := range plain.Config.Layers {
		if plain.layers[i].Attention.Q.Interleaved() {
			t.Fatalf("layer %d: Q interleaved with KeepLayout", i)
		}
	}
	t.Logf("%d of %d matrices interleaved (%s)", got, len(all), quant.Path())

	ctx := context.Background()
	ci, cp := newCache(t, inter, CacheOptions{KVType: KVF32}), newCache(t, plain, CacheOptions{KVType: KVF32})
	tokens := []int32{1, 17, 300, 5, 42, 99, 7, 8, 250, 3, 11, 64}
	// shared/golden/selfcheck.md, smollm3-tinyq-Q4_K_M, "other CPU
	// kernels" (llama.cpp's haswell and x64 builds against its best).
	const maxAbs, maxRMS = 0.29, 0.032
	check := func(what string, a, b []float32) {
		t.Helper()
		var diff, sq float64
		for i := range a {
			d := math.Abs(float64(a[i] - b[i]))
			diff, sq = math.Max(diff, d), sq+d*d
		}
		rms := math.Sqrt(sq / float64(len(a)))
		if diff > maxAbs || rms > maxRMS {
			t.Errorf("%s: logits differ by up to %.3g (RMS %.3g), llama.cpp's kernels by %g (%g)", what, diff, rms, maxAbs, maxRMS)
		}
		t.Logf("%s: max abs %.3g, RMS %.3g", what, diff, rms)
	}
	li, err := inter.Forward(ctx, ci, tokens, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := plain.Forward(ctx, cp, tokens, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	check("prompt", li, lp)
	for step := range 4 {
		tok := []int32{int32(30 + step)}
		li, err := inter.Forward(ctx, ci, tok, len(tokens)+step, false)
		if err != nil {
			t.Fatal(err)
		}
		lp, err := plain.Forward(ctx, cp, tok, len(tokens)+step, false)
		if err != nil {
			t.Fatal(err)
		}
		check("decode", li, lp)
	}

	inter.Close()
	for _, x := range all {
		if x.Interleaved() {
			t.Fatalf("%s still interleaved after Close", x.Name)
		}
	}
}
