package llama

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/rope"
)

// qwen35Arch is Qwen3.5's block for f (as package models/qwen35 builds it,
// which this package cannot import): Gated DeltaNets, every 4th layer gated
// attention with interleaved M-RoPE.
func qwen35Arch(t testing.TB, f *gguf.File, cfg Config) Arch {
	t.Helper()
	gdn, err := GatedDeltaNetFromGGUF(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := f.Int32s("qwen35.rope.dimension_sections")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Rope
	r.Layout, r.Interleaved = rope.NeoX, true
	for i, s := range sec {
		r.Sections[i] = int(s)
	}
	a := Arch{Name: "qwen35", Layers: make([]Layer, cfg.Layers)}
	for i := range a.Layers {
		a.Layers[i] = Layer{Mixer: gdn.clone().(Mixer), FFN: &GLU{}, FFNNorm: "post_attention_norm"}
		if (i+1)%4 == 0 {
			a.Layers[i].Mixer = &Attention{Rope: &r, QKNorm: true, QueryGate: true}
		}
	}
	return a
}

func openQwen35(t testing.TB, name string, opts Options) *CPU {
	t.Helper()
	f, err := gguf.Open(sharedtest.Path(t, "golden-next/models/"+name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := LoadWeights(f, cfg, qwen35Arch(t, f, cfg))
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewCPU(w, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// equalBits fails unless got and want are the same float32 bits.
func equalBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
	}
	for j := range want {
		if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
			t.Fatalf("%s: logit %d of row %d is %g, want %g", what, j%337, j/337, got[j], want[j])
		}
	}
}

// The batching contract for a recurrent model: sequences sharing steps
// (prompt chunks, decodes, drafts whose every row is asked for) get the bits
// Forward gives each alone; a draft's rejected tail is dropped by
// truncating into the kept rows, after which the sequence continues as if
// it had only seen the accepted tokens (checked against a cache that saw
// only them, in the same chunks: chunks under 24 tokens have the bits of
// any other cut, so a draft cut to 3 tokens is a chunk of 3).
func TestGatedDeltaNetStepEqualsForwardAlone(t *testing.T) {
	for _, name := range []string{"qwen35-tiny-Q4_K_M", "qwen35-tiny-F32"} {
		t.Run(name, func(t *testing.T) {
			const batch = 48 // some steps take two passes
			m := openQwen35(t, name, Options{Threads: 2, BatchSize: batch})
			b := newBackend(t, m, CacheOptions{KVType: KVF32})
			V := m.Config.Vocab
			rng := rand.New(rand.NewPCG(3, 5))
			type seq struct {
				c      engine.Cache
				ref    *Cache    // Forward alone, the same chunks
				chunks [][]int32 // what the sequence holds, chunk by chunk
				n      int
			}
			seqs := make([]seq, 4)
			for i := range seqs {
				seqs[i] = seq{c: newSeqCache(t, b), ref: newCache(t, m, CacheOptions{KVType: KVF32})}
			}
			checked, truncated := 0, 0
			for step := range 12 {
				var steps []engine.Seq
				var who []int
				for i := range seqs {
					if rng.IntN(4) == 0 {
						continue
					}
					var n, rows int
					switch r := rng.IntN(10); {
					case seqs[i].c.Len() == 0 || r < 2:
						n = []int{7, 30}[rng.IntN(2)]
						rows = []int{1, n}[rng.IntN(2)]
					case r < 6:
						n = 5
						rows = n // a draft being checked: every row
					default:
						n, rows = 1, 1
					}
					steps = append(steps, engine.Seq{Cache: seqs[i].c, Tokens: randomTokens(rng, n, V), Logits: make([]float32, rows*V)})
					who = append(who, i)
				}
				if err := b.Step(context.Background(), steps); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for k, s := range steps {
					sq := &seqs[who[k]]
					rows := len(s.Logits) / V
					want := forward(t, m, sq.ref, s.Tokens, rows > 1)
					equalBits(t, fmt.Sprintf("step %d, sequence %d (%d tokens, %d of %d)", step, who[k], len(s.Tokens), k, len(steps)), s.Logits, want[len(want)-rows*V:])
					checked++
					sq.chunks = append(sq.chunks, s.Tokens)
					sq.n += len(s.Tokens)
					if len(s.Tokens) == 5 && rng.IntN(2) == 0 {
						// Reject the draft's tail: keep 1 to 4 of its tokens.
						k := 1 + rng.IntN(4)
						keep := sq.n - 5 + k
						for _, c := range []interface{ Truncate(int) error }{sq.c, sq.ref} {
							if err := c.Truncate(keep); err != nil {
								t.Fatalf("step %d: truncating a draft to %d of %d: %v", step, keep, sq.n, err)
							}
						}
						sq.chunks[len(sq.chunks)-1] = s.Tokens[:k]
						sq.n = keep
						truncated++
					}
				}
			}
			if checked < 20 || truncated < 2 {
				t.Fatalf("only %d sequences compared, %d drafts truncated", checked, truncated)
			}
			// Each sequence continues as one that saw only its tokens.
			for i, sq := range seqs {
				if sq.n == 0 {
					continue
				}
				fresh := newCache(t, m, CacheOptions{KVType: KVF32})
				for _, ch := range sq.chunks {
					forward(t, m, fresh, ch, false)
				}
				next := []int32{42, 7}
				want := forward(t, m, fresh, next, true)
				got := forward(t, m, sq.ref, next, true)
				equalBits(t, fmt.Sprintf("sequence %d after its truncations, Forward", i), got, want)
				out := make([]float32, 2*V)
				if err := b.Step(context.Background(), []engine.Seq{{Cache: sq.c, Tokens: next, Logits: out}}); err != nil {
					t.Fatal(err)
				}
				equalBits(t, fmt.Sprintf("sequence %d after its truncations, Step", i), out, want)
			}
		})
	}
}

// A decode step of several Qwen3.5 sequences allocates nothing once the
// buffers have grown.
func TestGatedDeltaNetStepAllocatesNothing(t *testing.T) {
	m := openQwen35(t, "qwen35-tiny-Q8_0", Options{Threads: 2})
	V := m.Config.Vocab
	ctx := context.Background()
	b := newBackend(t, m, CacheOptions{})
	steps := make([]engine.Seq, 3)
	for i := range steps {
		steps[i] = engine.Seq{Cache: newSeqCache(t, b), Tokens: prompt[:3+i], Logits: make([]float32, V)}
	}
	if err := b.Step(ctx, steps); err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		steps[i].Tokens = []int32{int32(40 + i)}
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := b.Step(ctx, steps); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("a decode step of 3 Qwen3.5 sequences allocates %v times", allocs)
	}
}

// The state's size is the convolution window and the state matrices, and
// a cache reports it.
func TestGatedDeltaNetState(t *testing.T) {
	m := openQwen35(t, "qwen35-tiny-F32", Options{Threads: 1})
	g := m.Arch.Layers[0].Mixer.(*GatedDeltaNet)
	if *g != (GatedDeltaNet{Kernel: 4, HeadSize: 32, KeyHeads: 2, ValueHeads: 4}) {
		t.Fatalf("hyper-parameters %+v", *g)
	}
	// 3 rows of 2·64 + 128 inputs, 4 matrices of 32×32.
	if n := g.stateSize(m.Config); n != 3*256+4*32*32 {
		t.Errorf("state of %d values", n)
	}
	c := newCache(t, m, CacheOptions{Checkpoints: -1})
	if got, want := c.StateBytes(), int64(3*4*(3*256+4*32*32)); got != want {
		t.Errorf("StateBytes %d, want %d (three recurrent layers)", got, want)
	}
}

// Bad hyper-parameters and tensors fail naming what is wrong.
func TestGatedDeltaNetBadFiles(t *testing.T) {
	f, err := gguf.Open(sharedtest.Path(t, "golden-next/models/qwen35-tiny-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		g    GatedDeltaNet
		want string
	}{
		{GatedDeltaNet{Kernel: 1, HeadSize: 32, KeyHeads: 2, ValueHeads: 4}, "length 1"},
		{GatedDeltaNet{Kernel: 4, HeadSize: 32, KeyHeads: 3, ValueHeads: 4}, "not a multiple"},
		{GatedDeltaNet{Kernel: 4, HeadSize: 0, KeyHeads: 2, ValueHeads: 4}, "head size 0"},
		{GatedDeltaNet{Kernel: 4, HeadSize: 1024, KeyHeads: 1, ValueHeads: 1024}, "more than"},
	} {
		if err := c.g.validate(nil, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.g, err, c.want)
		}
	}
	// A layer read as a DeltaNet of another shape names the tensor.
	a := qwen35Arch(t, f, cfg)
	a.Layers[1].Mixer.(*GatedDeltaNet).ValueHeads = 2
	if _, err := LoadWeights(f, cfg, a); err == nil || !strings.Contains(err.Error(), "blk.1.attn_qkv.weight") {
		t.Errorf("two value heads for a file of four: %v", err)
	}
	// An attention layer where the file has a DeltaNet names a tensor.
	a = qwen35Arch(t, f, cfg)
	a.Layers[0].Mixer = &Attention{Rope: &cfg.Rope}
	if _, err := LoadWeights(f, cfg, a); err == nil || !strings.Contains(err.Error(), "blk.0.") {
		t.Errorf("attention in a DeltaNet layer: %v", err)
	}
}
