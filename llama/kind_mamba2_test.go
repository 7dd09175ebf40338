package llama

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
)

// openGraniteHybrid opens a tiny granitehybrid model of ../shared/golden-next
// with Granite 4.0-H's block (package models/granitehybrid's description,
// built here since the families sit above this package): Mamba-2 where
// head_count_kv is 0, NoPE attention elsewhere, the four multipliers.
func openGraniteHybrid(t testing.TB, name string, opts Options) *CPU {
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
	mb, err := Mamba2FromGGUF(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	scale := func(k string) float32 {
		v, err := f.Float32("granitehybrid." + k)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := Uniform("granitehybrid", cfg.Layers, Layer{FFN: &GLU{}})
	for i := range a.Layers {
		if cfg.LayerKVHeads[i] == 0 {
			m := *mb
			a.Layers[i].Mixer = &m
		} else {
			a.Layers[i].Mixer = &Attention{Scale: scale("attention.scale")}
		}
	}
	a.EmbedScale, a.ResidualScale, a.LogitScale = scale("embedding_scale"), scale("residual_scale"), scale("logit_scale")
	w, err := LoadWeights(f, cfg, a)
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

// TestMamba2StepEqualsForwardAlone is the batching contract for a
// recurrent model: whatever shares a step with it (decodes, 5-token drafts
// whose every row is checked, 64- and 100-token prompt chunks that take
// two passes of the batch), a sequence's logits are bit for bit those
// Forward gives it alone, and after a draft a Truncate back into its rows
// (the rejected tail dropped, as speculation does) continues exactly as a
// sequence that never saw the tail: its reference is then recomputed from
// nothing, the same chunks without the tail.
func TestMamba2StepEqualsForwardAlone(t *testing.T) {
	for _, name := range []string{"granitehybrid-tiny-Q4_K_M", "granitehybrid-tiny-Q8_0"} {
		t.Run(name, func(t *testing.T) {
			const batch = 96
			m := openGraniteHybrid(t, name, Options{Threads: 2, BatchSize: batch})
			b := newBackend(t, m, CacheOptions{})
			V := m.Config.Vocab
			rng := rand.New(rand.NewPCG(11, uint64(len(name))))
			seqs := make([]stepSeq, 5)
			chunks := make([][][]int32, len(seqs)) // what each sequence was given, chunk by chunk
			for i := range seqs {
				seqs[i] = stepSeq{c: newSeqCache(t, b), ref: newCache(t, m, CacheOptions{})}
			}
			checked, truncated := 0, 0
			for step := range 14 {
				var batch []engine.Seq
				var who []int
				for i := range seqs {
					if rng.IntN(4) == 0 {
						continue
					}
					var n, rows int
					switch r := rng.IntN(10); {
					case seqs[i].c.Len() == 0 || r < 2:
						n = []int{64, 100}[rng.IntN(2)]
						rows = []int{0, 1, n}[rng.IntN(3)]
					case r < 6:
						n, rows = 5, 5 // a draft, every row checked
					default:
						n, rows = 1, 1
					}
					batch = append(batch, engine.Seq{Cache: seqs[i].c, Tokens: randomTokens(rng, n, V), Logits: make([]float32, rows*V)})
					who = append(who, i)
				}
				if err := b.Step(context.Background(), batch); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for k, s := range batch {
					sq := &seqs[who[k]]
					chunks[who[k]] = append(chunks[who[k]], s.Tokens)
					rows := len(s.Logits) / V
					want := forward(t, m, sq.ref, s.Tokens, rows > 1)
					if rows > 0 {
						want = want[len(want)-rows*V:]
						for j := range want {
							if math.Float32bits(s.Logits[j]) != math.Float32bits(want[j]) {
								t.Fatalf("step %d, sequence %d (%d tokens, %d of %d in the step): logit %d of row %d is %g, alone %g",
									step, who[k], len(s.Tokens), k, len(batch), j%V, j/V, s.Logits[j], want[j])
							}
						}
						checked++
					}
					// Reject the tail of a draft: both go back into its rows.
					if len(s.Tokens) == 5 && rows == 5 && rng.IntN(2) == 0 {
						from := s.Cache.Len()
						to := from - 1 - rng.IntN(4)
						if f := s.Cache.(backend.Rewinder).Floor(to); f != to {
							t.Fatalf("step %d: Floor(%d) = %d after a draft whose rows were checked", step, to, f)
						}
						if err := s.Cache.Truncate(to); err != nil {
							t.Fatal(err)
						}
						ch := chunks[who[k]]
						ch[len(ch)-1] = s.Tokens[:5-(from-to)]
						sq.ref = newCache(t, m, CacheOptions{})
						for _, c := range ch {
							forward(t, m, sq.ref, c, false)
						}
						truncated++
					}
				}
			}
			if checked < 20 || truncated < 3 {
				t.Fatalf("only %d sequences' logits compared, %d drafts cut back", checked, truncated)
			}
		})
	}
}

// TestMamba2StepAllocatesNothing: a steady decode step of several
// sequences of a Mamba-2 hybrid.
func TestMamba2StepAllocatesNothing(t *testing.T) {
	m := openGraniteHybrid(t, "granitehybrid-tiny-Q4_K_M", Options{Threads: 2})
	V := m.Config.Vocab
	ctx := context.Background()
	b := newBackend(t, m, CacheOptions{})
	batch := make([]engine.Seq, 4)
	for i := range batch {
		batch[i] = engine.Seq{Cache: newSeqCache(t, b), Tokens: prompt[:3+i], Logits: make([]float32, V)}
	}
	if err := b.Step(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		batch[i].Tokens = []int32{int32(40 + i)}
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := b.Step(ctx, batch); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("a decode step of 4 sequences allocates %v times", allocs)
	}
}

// TestMamba2State checks the state's size and that it moves on: a cache
// of the tiny model keeps (Kernel-1)·Channels + Inner·State floats for its
// Mamba-2 layer and nothing for the attention layer, and a Truncate to a
// length it holds no state of fails naming the floor.
func TestMamba2State(t *testing.T) {
	m := openGraniteHybrid(t, "granitehybrid-tiny-F32", Options{Threads: 1})
	mb := m.Arch.Layers[0].Mixer.(*Mamba2)
	if got, want := mb.StateSize(), 3*(512+2*64)+512*64; got != want {
		t.Fatalf("StateSize %d, want %d", got, want)
	}
	c := newCache(t, m, CacheOptions{Checkpoints: -1})
	if len(c.state[0]) != mb.StateSize() || c.state[1] != nil {
		t.Fatalf("state lengths %d and %d", len(c.state[0]), len(c.state[1]))
	}
	if c.StateBytes() != 4*int64(mb.StateSize()) {
		t.Errorf("StateBytes %d", c.StateBytes())
	}
	forward(t, m, c, prompt, false)
	nonzero := 0
	for _, v := range c.state[0][mb.convSize():] {
		if v != 0 {
			nonzero++
		}
	}
	if nonzero < len(c.state[0])/2 {
		t.Errorf("after a prompt only %d of the head states are set", nonzero)
	}
	if err := c.Truncate(5); err == nil || !strings.Contains(err.Error(), "Floor(5) = 0") {
		t.Errorf("Truncate to an unkept length: %v", err)
	}
}

// TestMamba2Validate checks the description's checks, each error naming
// what is wrong.
func TestMamba2Validate(t *testing.T) {
	ok := Mamba2{Kernel: 4, Inner: 512, State: 64, Groups: 1, Heads: 16}
	cases := []struct {
		change func(*Mamba2)
		errHas string
	}{
		{func(m *Mamba2) { m.Kernel = 1 }, "convolution length 1"},
		{func(m *Mamba2) { m.Heads = 0 }, "head count 0"},
		{func(m *Mamba2) { m.Heads = 24 }, "not a multiple of the head count"},
		{func(m *Mamba2) { m.Groups = 3 }, "not a multiple of the group count"},
		{func(m *Mamba2) { m.Inner, m.Heads, m.State = 1<<20, 1<<10, 1<<10 }, "values per sequence"},
	}
	if err := ok.validate(nil, Config{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		mb := ok
		tc.change(&mb)
		if err := mb.validate(nil, Config{}); err == nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("%+v: error %v, want one with %q", mb, err, tc.errHas)
		}
	}
}
