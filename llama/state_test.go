package llama

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/sharedtest"
	"github.com/smolgo/smolgo/rope"
)

// openLFM2 opens a tiny lfm2 model of ../shared/golden-next with LFM2's
// block (package models/lfm2's description, built here since the families
// sit above this package): short convolutions where head_count_kv is 0.
func openLFM2(t testing.TB, name string, opts Options) *CPU {
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
	kernel, err := f.Uint32("lfm2.shortconv.l_cache")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Rope
	r.Layout = rope.NeoX
	a := Uniform("lfm2", cfg.Layers, Layer{FFN: &GLU{}})
	for i := range a.Layers {
		if cfg.LayerKVHeads[i] == 0 {
			a.Layers[i].Mixer = &ShortConv{Kernel: int(kernel)}
		} else {
			a.Layers[i].Mixer = &Attention{Rope: &r, QKNorm: true}
		}
	}
	a.OutputNorm = "token_embd_norm"
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

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// A recurrent cache goes back only where it kept its state: its current
// length, 0, checkpoints, and the rows of its last step that asked for
// logits. Going back there continues exactly as a cache that never went
// further; going elsewhere is refused and changes nothing.
func TestRecurrentRewind(t *testing.T) {
	m := openLFM2(t, "lfm2-tiny-F32", Options{Threads: 2})
	ctx := context.Background()
	V := m.Config.Vocab
	rng := rand.New(rand.NewPCG(1, 2))
	prompt := randomTokens(rng, 30, V)
	more := randomTokens(rng, 6, V)

	c := newCache(t, m, CacheOptions{})
	if !c.recurrent() {
		t.Fatal("an lfm2 cache without recurrent state")
	}
	if _, err := m.Forward(ctx, c, prompt[:20], 0, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(ctx, c, prompt[20:], 20, false); err != nil {
		t.Fatal(err)
	}
	// What a fresh cache gives after prompt[:20] + more.
	ref := newCache(t, m, CacheOptions{})
	want, err := m.Forward(ctx, ref, append(append([]int32(nil), prompt[:20]...), more...), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	want = append([]float32(nil), want...)

	if f := c.Floor(25); f != 20 {
		t.Errorf("Floor(25) = %d, want the checkpoint 20", f)
	}
	if f := c.Floor(30); f != 30 {
		t.Errorf("Floor(30) = %d, want the current length", f)
	}
	if err := c.Truncate(25); err == nil || !strings.Contains(err.Error(), "Floor(25) = 20") {
		t.Errorf("Truncate(25) between points: %v", err)
	}
	if c.Len() != 30 {
		t.Fatalf("a refused Truncate changed the length to %d", c.Len())
	}
	if err := c.Truncate(20); err != nil {
		t.Fatal(err)
	}
	got, err := m.Forward(ctx, c, more, 20, false)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(got, want) {
		t.Error("after going back to the checkpoint, the logits differ from a fresh cache's")
	}

	// A clone at the checkpoint, and a copy of it into another cache.
	d, err := c.Clone(20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clone(23); err == nil {
		t.Error("Clone(23) between points: no error")
	}
	e := newCache(t, m, CacheOptions{})
	if err := e.CopyFrom(d, 0, 20); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Cache{d, e} {
		got, err := m.Forward(ctx, x, more, 20, false)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(got, want) {
			t.Error("a clone or copy at the checkpoint continues differently")
		}
	}

	// Saved and loaded, checkpoints included.
	var buf bytes.Buffer
	if err := c.SaveTo(&buf); err != nil {
		t.Fatal(err)
	}
	l := newCache(t, m, CacheOptions{})
	if err := l.LoadFrom(bytes.NewReader(buf.Bytes()), c.Len()); err != nil {
		t.Fatal(err)
	}
	if l.Floor(25) != 20 {
		t.Errorf("a loaded cache lost its checkpoint: Floor(25) = %d", l.Floor(25))
	}
	if err := l.Truncate(20); err != nil {
		t.Fatal(err)
	}
	if got, err = m.Forward(ctx, l, more, 20, false); err != nil || !sameBits(got, want) {
		t.Errorf("a loaded cache continues differently (%v)", err)
	}
	// A damaged file: refused, not a panic.
	raw := buf.Bytes()
	if err := l.LoadFrom(bytes.NewReader(raw[:len(raw)-3]), c.Len()); err == nil {
		t.Error("a truncated file loaded")
	}
	if err := l.LoadFrom(bytes.NewReader(raw), c.Len()-1); err == nil {
		t.Error("a file loaded as fewer positions than it holds")
	}
	if err := c.Shift(2, 3); !errors.Is(err, backend.ErrCannotShift) {
		t.Errorf("Shift of a recurrent cache: %v", err)
	}
}

// A batched step of several sequences of a recurrent model gives each the
// bits Forward gives it alone, and a draft's rows are kept: truncating into
// them continues as a cache that only ever saw the accepted tokens.
func TestRecurrentStepAndDraft(t *testing.T) {
	m := openLFM2(t, "lfm2-tiny-Q4_K_M", Options{Threads: 2, BatchSize: 64})
	b := newBackend(t, m, CacheOptions{})
	ctx := context.Background()
	V := m.Config.Vocab
	rng := rand.New(rand.NewPCG(3, 4))
	seqs := make([]stepSeq, 4)
	for i := range seqs {
		seqs[i] = stepSeq{c: newSeqCache(t, b), ref: newCache(t, m, CacheOptions{})}
	}
	for step := range 8 {
		var batch []engine.Seq
		for i := range seqs {
			n, rows := 1, 1
			switch {
			case seqs[i].c.Len() == 0:
				n, rows = 40+10*i, 1
			case (step+i)%3 == 0:
				n, rows = 5, 5 // a draft, every row's logits
			}
			batch = append(batch, engine.Seq{Cache: seqs[i].c, Tokens: randomTokens(rng, n, V), Logits: make([]float32, rows*V)})
		}
		if err := b.Step(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for i, s := range batch {
			rows := len(s.Logits) / V
			want := forward(t, m, seqs[i].ref, s.Tokens, rows > 1)
			if !sameBits(s.Logits, want[len(want)-rows*V:]) {
				t.Fatalf("step %d, sequence %d (%d tokens): batched logits differ from Forward's alone", step, i, len(s.Tokens))
			}
			if rows == 5 {
				// Accept two of the four drafted tokens: both caches go back.
				keep := s.Cache.Len() - 2
				if err := s.Cache.Truncate(keep); err != nil {
					t.Fatalf("step %d: truncating into the draft's rows: %v", step, err)
				}
				if err := seqs[i].ref.Truncate(keep); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// The references went back through their own kept rows (Forward asked
	// for every row): compare them with caches that never saw the rejected
	// tokens, by one more token.
	for i := range seqs {
		next := randomTokens(rng, 1, V)
		got := make([]float32, V)
		if err := b.Step(ctx, []engine.Seq{{Cache: seqs[i].c, Tokens: next, Logits: got}}); err != nil {
			t.Fatal(err)
		}
		if want := forward(t, m, seqs[i].ref, next, false); !sameBits(got, want) {
			t.Errorf("sequence %d: after the truncated drafts the caches disagree", i)
		}
	}
}

// countdownCtx is a context whose Err turns non-nil after n calls: a
// cancellation that lands between two layers of a pass.
type countdownCtx struct {
	context.Context
	n int
}

func (c *countdownCtx) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// A pass cancelled between layers leaves the recurrent state half moved
// on: the cache then refuses to step until it goes back to a checkpoint,
// from where it continues exactly.
func TestRecurrentInterruptedStep(t *testing.T) {
	m := openLFM2(t, "lfm2-tiny-F32", Options{Threads: 1})
	ctx := context.Background()
	V := m.Config.Vocab
	rng := rand.New(rand.NewPCG(5, 6))
	prompt, next := randomTokens(rng, 12, V), randomTokens(rng, 3, V)
	c := newCache(t, m, CacheOptions{})
	if _, err := m.Forward(ctx, c, prompt, 0, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), forward(t, m, newCacheAfter(t, m, prompt), next, false)...)
	if _, err := m.Forward(&countdownCtx{Context: ctx, n: 3}, c, next, 12, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pass: %v", err)
	}
	if c.Len() != 12 {
		t.Fatalf("after a cancelled pass the cache holds %d positions, want 12", c.Len())
	}
	if _, err := m.Forward(ctx, c, next, 12, false); err == nil || !strings.Contains(err.Error(), "interrupted step") {
		t.Fatalf("stepping an interrupted state: %v", err)
	}
	if c.Floor(12) != 12 { // the checkpoint at 12
		t.Fatalf("Floor(12) = %d", c.Floor(12))
	}
	if err := c.Truncate(12); err != nil {
		t.Fatal(err)
	}
	got, err := m.Forward(ctx, c, next, 12, false)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(got, want) {
		t.Error("after going back to the checkpoint the logits differ")
	}
}

// newCacheAfter returns a fresh cache that has run tokens.
func newCacheAfter(t *testing.T, m *CPU, tokens []int32) *Cache {
	c := newCache(t, m, CacheOptions{})
	if _, err := m.Forward(context.Background(), c, tokens, 0, false); err != nil {
		t.Fatal(err)
	}
	return c
}

// A held point (Hold) lets a recurrent cache go back to where a draft
// started after single-token steps, continuing exactly as a fresh cache;
// it lasts until the next Hold, and it never pushes a checkpoint out.
func TestRecurrentHold(t *testing.T) {
	m := openLFM2(t, "lfm2-tiny-F32", Options{Threads: 2})
	ctx := context.Background()
	V := m.Config.Vocab
	rng := rand.New(rand.NewPCG(3, 4))
	prompt := randomTokens(rng, 20, V)
	draft := randomTokens(rng, 4, V)
	more := randomTokens(rng, 3, V)

	c := newCache(t, m, CacheOptions{Checkpoints: 1})
	if _, err := m.Forward(ctx, c, prompt[:10], 0, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(ctx, c, prompt[10:], 10, false); err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // the second Hold replaces the first
		if err := c.Hold(); err != nil {
			t.Fatal(err)
		}
		for i, tok := range draft {
			if _, err := m.Forward(ctx, c, []int32{tok}, 20+i, false); err != nil {
				t.Fatal(err)
			}
		}
		if f := c.Floor(22); f != 20 {
			t.Fatalf("round %d: Floor(22) = %d, want the hold at 20", round, f)
		}
		if err := c.Truncate(20); err != nil {
			t.Fatal(err)
		}
	}
	if f := c.Floor(15); f != 10 {
		t.Errorf("Floor(15) = %d: the checkpoint at 10 is gone", f)
	}
	got, err := m.Forward(ctx, c, more, 20, false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Forward(ctx, newCacheAfter(t, m, prompt), more, 20, false)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(got, want) {
		t.Error("after going back to the hold, the logits differ from a fresh cache's")
	}
	// A later hold drops the one at 20, and a Truncate below a hold drops it.
	if err := c.Hold(); err != nil {
		t.Fatal(err)
	}
	if f := c.Floor(21); f != 10 {
		t.Errorf("after a new hold at 23, Floor(21) = %d, want the checkpoint 10", f)
	}
	if err := c.Truncate(10); err != nil {
		t.Fatal(err)
	}
	if f := c.Floor(10); f != 10 || len(c.points) != 1 {
		t.Errorf("after Truncate(10): Floor(10) = %d with %d points, want 10 and the checkpoint alone", f, len(c.points))
	}
}
