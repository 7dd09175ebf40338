package llama

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/tensor"
)

// TestStepHidden checks Seq.Hidden: the rows asked for are the output norm
// of the final hidden states, the very vectors the logits are projected
// from (output·h gives the step's logits bit for bit), asking for them
// leaves the logits unchanged, and a decode step that asks for them still
// allocates nothing. Malformed requests are refused.
func TestStepHidden(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-F16", Options{Threads: 2})
	V, E := m.Config.Vocab, m.Config.Embd
	ctx := context.Background()
	b := newBackend(t, m, CacheOptions{})
	if h, ok := b.(backend.HiddenStates); !ok || h.HiddenDim() != E {
		t.Fatalf("the CPU backend does not implement HiddenStates with width %d", E)
	}
	toks := randomTokens(rand.New(rand.NewPCG(1, 2)), 30, V)
	plain := engine.Seq{Cache: newSeqCache(t, b), Tokens: toks, Logits: make([]float32, 3*V)}
	both := engine.Seq{Cache: newSeqCache(t, b), Tokens: toks, Logits: make([]float32, 3*V), Hidden: make([]float32, 5*E)}
	only := engine.Seq{Cache: newSeqCache(t, b), Tokens: toks, Hidden: make([]float32, len(toks)*E)}
	if err := b.Step(ctx, []engine.Seq{plain, both, only}); err != nil {
		t.Fatal(err)
	}
	for i := range plain.Logits {
		if math.Float32bits(plain.Logits[i]) != math.Float32bits(both.Logits[i]) {
			t.Fatalf("logit %d changed when hidden states were asked for: %v, %v", i, plain.Logits[i], both.Logits[i])
		}
	}
	// The last 5 rows of both are the last 5 of only.
	tail := only.Hidden[(len(toks)-5)*E:]
	for i := range both.Hidden {
		if both.Hidden[i] != tail[i] {
			t.Fatalf("hidden %d differs between a 5-row and a full request", i)
		}
	}
	// The logits of the last row are output · h.
	var s tensor.Scratch
	got := make([]float32, V)
	if err := m.output.Mul(m.pool, &s, got, both.Hidden[4*E:], 1); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != plain.Logits[2*V+i] {
			t.Fatalf("logit %d: output·hidden %v, the step's %v", i, got[i], plain.Logits[2*V+i])
		}
	}
	// A decode step asking for hidden states allocates nothing.
	dec := []engine.Seq{{Cache: both.Cache, Tokens: []int32{5}, Logits: make([]float32, V), Hidden: make([]float32, E)}}
	if err := b.Step(ctx, dec); err != nil {
		t.Fatal(err)
	}
	dec[0].Tokens = []int32{6}
	if allocs := testing.AllocsPerRun(10, func() {
		if err := b.Step(ctx, dec); err != nil {
			t.Fatal(err)
		}
	}); allocs > 0 {
		t.Errorf("a decode step with hidden states allocates %v times", allocs)
	}
	for _, bad := range []engine.Seq{
		{Cache: newSeqCache(t, b), Tokens: toks[:2], Hidden: make([]float32, E+1)},
		{Cache: newSeqCache(t, b), Tokens: toks[:2], Hidden: make([]float32, 3*E)},
	} {
		if err := b.Step(ctx, []engine.Seq{bad}); err == nil {
			t.Errorf("hidden of %d values for %d tokens: no error", len(bad.Hidden), len(bad.Tokens))
		}
	}
}
