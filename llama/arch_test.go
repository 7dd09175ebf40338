package llama

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/rope"
)

func TestArchValidate(t *testing.T) {
	cfg := Config{Layers: 2, HeadDim: 64, FFN: 128, Rope: rope.Config{Dims: 64, Base: 10000}}
	wide := rope.Config{Dims: 128, Base: 10000}
	short := rope.Config{Dims: 64, Base: 10000, Factors: make([]float32, 31)}
	for _, c := range []struct {
		name string
		edit func(a *Arch)
		err  string // "" for valid
	}{
		{"plain", func(a *Arch) {}, ""},
		{"nope and window", func(a *Arch) { a.Layers[0].Attention().Rope, a.Layers[1].Attention().Window = nil, 512 }, ""},
		{"layer count", func(a *Arch) { a.Layers = a.Layers[:1] }, "describes 1 layers, the model has 2"},
		{"negative window", func(a *Arch) { a.Layers[1].Attention().Window = -1 }, "negative attention window"},
		{"rope wider than a head", func(a *Arch) { a.Layers[0].Attention().Rope = &wide }, "rotates 128 dimensions of a head of 64"},
		{"bad factors", func(a *Arch) { a.Layers[1].Attention().Rope = &short }, "layer 1"},
		{"NaN embedding scale", func(a *Arch) { a.EmbedScale = float32(math.NaN()) }, "embedding scale"},
		{"negative soft-cap", func(a *Arch) { a.LogitSoftcap = -30 }, "logit soft-cap"},
		{"unknown activation", func(a *Arch) { a.Layers[0].GLU().Activation = 7 }, "unknown activation"},
		{"no mixer", func(a *Arch) { a.Layers[1].Mixer = nil }, "layer 1 has no token mixer"},
		{"granite scales", func(a *Arch) { a.Layers[0].Attention().Scale, a.ResidualScale, a.LogitScale = 0.015625, 0.22, 8 }, ""},
		{"infinite residual scale", func(a *Arch) { a.ResidualScale = float32(math.Inf(1)) }, "residual scale"},
		{"negative logit scale", func(a *Arch) { a.LogitScale = -8 }, "logit scale"},
		{"no feed_forward_length", func(a *Arch) { cfg.FFN = 0 }, "needs feed_forward_length"},
		{"experts", func(a *Arch) { a.Layers[1].FFN = &MoE{Experts: 8, Used: 2, Width: 64} }, ""},
		{"no experts", func(a *Arch) { a.Layers[1].FFN = &MoE{Experts: 0, Used: 2, Width: 64} }, "0 experts"},
		{"too many experts", func(a *Arch) { a.Layers[1].FFN = &MoE{Experts: 2000, Used: 2, Width: 64} }, "2000 experts: want 1 to 1024"},
		{"more used than experts", func(a *Arch) { a.Layers[1].FFN = &MoE{Experts: 4, Used: 5, Width: 64} }, "5 experts used of 4"},
		{"shared gate without shared expert", func(a *Arch) { a.Layers[1].FFN = &MoE{Experts: 4, Used: 2, Width: 64, SharedGate: true} }, "shared-expert gate"},
		{"query and attention scale", func(a *Arch) { a.Layers[1].Attention().QueryScale, a.Layers[1].Attention().Scale = 0.125, 0.125 }, "set one"},
		{"NaN query scale", func(a *Arch) { a.Layers[0].Attention().QueryScale = float32(math.NaN()) }, "query scale"},
		{"deepstack", func(a *Arch) { a.Deepstack = 2 }, ""},
		{"deepstack past the blocks", func(a *Arch) { a.Deepstack = 3 }, "3 deepstack layers for 2 blocks"},
		{"negative deepstack", func(a *Arch) { a.Deepstack = -1 }, "-1 deepstack layers"},
	} {
		cfg.FFN = 128
		a := Plain("test", cfg)
		c.edit(&a)
		err := a.Validate(cfg)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		}
	}
}

// Features names what an architecture uses beyond the plain block, which
// is how a backend refuses what it lacks (Unsupported).
func TestArchFeatures(t *testing.T) {
	cfg := Config{Layers: 3, HeadDim: 64, Rope: rope.Config{Dims: 64, Base: 10000}}
	plain := Plain("llama", cfg)
	if fs := plain.Features(); len(fs) != 0 {
		t.Errorf("plain llama uses %v", fs)
	}
	neox := rope.Config{Dims: 64, Base: 1e6, Layout: rope.NeoX}
	g := Uniform("gemma3", 3, Layer{Mixer: &Attention{Rope: &neox, QKNorm: true, QueryScale: 0.0625}, FFN: &GLU{Activation: GELUTanh}, PostNorms: true})
	g.Layers[0].Attention().Window = 512
	g.EmbedScale, g.LogitSoftcap = 32, 30
	want := []string{"rope neox", "qk norm", "sliding window", "query scale", "gelu", "post norms", "embedding scale", "logit soft-cap"}
	if fs := g.Features(); !slices.Equal(fs, want) {
		t.Errorf("gemma-like features %v, want %v", fs, want)
	}
	if err := g.Unsupported("dev", "rope neox", "qk norm"); err == nil || !strings.Contains(err.Error(), "sliding window") || strings.Contains(err.Error(), "qk norm") {
		t.Errorf("Unsupported: %v", err)
	}
	if err := g.Unsupported("dev", want...); err != nil {
		t.Errorf("everything implemented: %v", err)
	}
	gr := Plain("granite", cfg)
	gr.EmbedScale, gr.ResidualScale, gr.LogitScale = 12, 0.22, 8
	for i := range gr.Layers {
		gr.Layers[i].Attention().Scale = 0.015625
	}
	if fs, want := gr.Features(), []string{"attention scale", "embedding scale", "residual scale", "logit scale"}; !slices.Equal(fs, want) {
		t.Errorf("granite features %v, want %v", fs, want)
	}
	ds := Plain("qwen3vl", cfg)
	ds.Deepstack = 2
	if fs := ds.Features(); !slices.Equal(fs, []string{"deepstack"}) {
		t.Errorf("deepstack features %v", fs)
	}
}

// NewBackend picks the device by name; the CPU is built in and takes no
// number, and an unknown device's error lists the registered ones.
func TestNewBackendDevices(t *testing.T) {
	_, m := openModel(t, "llama-tiny-F32", Options{Threads: 1})
	for _, c := range []struct{ device, err string }{
		{"", ""}, {"cpu", ""}, {"cpu:1", "takes no number"}, {"tpu", `device "tpu" is not registered`}, {"tpu:0", "importing github.com/smolgo/smolgo/cuda"},
	} {
		b, err := NewBackend(m.Weights(), Options{Device: c.device, Threads: 1})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.device, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one containing %q", c.device, err, c.err)
		}
		if b != nil {
			if got, ok := b.(interface{ CPU() *CPU }); !ok || got.CPU() == nil {
				t.Errorf("%q: the CPU backend does not expose its runner", c.device)
			}
			b.(interface{ Close() error }).Close()
		}
	}
	if !slices.Contains(Devices(), "cpu") {
		t.Errorf("Devices() = %v lacks cpu", Devices())
	}
}

// ForContext takes each layer's LongRope above LongContext positions and
// its Rope up to it, and leaves no LongRope for a backend to read.
func TestArchForContext(t *testing.T) {
	short := &rope.Config{Dims: 8, Base: 1e4, Factors: []float32{1, 1, 1, 1}}
	long := &rope.Config{Dims: 8, Base: 1e4, Factors: []float32{2, 2, 2, 2}}
	a := Uniform("phi3", 2, Layer{Mixer: &Attention{Rope: short, LongRope: long}, FFN: &GLU{}})
	a.LongContext = 1024
	for _, tt := range []struct {
		n    int
		want *rope.Config
	}{{256, short}, {1024, short}, {1025, long}, {131072, long}} {
		got := a.ForContext(tt.n)
		for i, l := range got.Layers {
			if at := l.Attention(); at.Rope != tt.want || at.LongRope != nil {
				t.Errorf("ForContext(%d): layer %d has rope %v, long %v", tt.n, i, at.Rope.Factors, at.LongRope)
			}
		}
		if got.LongContext != 0 {
			t.Errorf("ForContext(%d) kept LongContext %d", tt.n, got.LongContext)
		}
	}
	if at := a.Layers[0].Attention(); at.Rope != short || at.LongRope != long {
		t.Error("ForContext changed the description it was called on")
	}
	resolved := a.ForContext(4096)
	if fs := a.Features(); !slices.Contains(fs, "long rope") || slices.Contains(resolved.Features(), "long rope") {
		t.Errorf("features %v before ForContext, %v after", fs, resolved.Features())
	}
	bad := Uniform("phi3", 2, Layer{Mixer: &Attention{Rope: short, LongRope: long}, FFN: &GLU{}}) // no LongContext
	if err := bad.Validate(Config{Layers: 2, HeadDim: 8}); err == nil || !strings.Contains(err.Error(), "long-context rotation") {
		t.Errorf("Validate without LongContext: %v", err)
	}
}
