package llama

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tensor"
)

// stepSeq is one sequence of a batching test: its backend cache, and a
// cache of its own that Forward runs the same chunks on alone.
type stepSeq struct {
	c   engine.Cache
	ref *Cache
}

func newBackend(t testing.TB, m *CPU, opts CacheOptions) engine.Backend {
	t.Helper()
	b, err := m.AsBackend(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newSeqCache(t testing.TB, b engine.Backend) engine.Cache {
	t.Helper()
	c, err := b.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// randomTokens returns n tokens below vocab.
func randomTokens(rng *rand.Rand, n, vocab int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(rng.IntN(vocab))
	}
	return out
}

// TestStepEqualsForwardAlone is the batching contract: whatever shares a
// step with it (1-token decodes, 5-token drafts, 64- and 100-token prompt
// chunks, in random mixes, sometimes more than the batch size in all), a
// sequence's logits are bit for bit those Forward gives it alone, for the
// weight types whose kernels differ between one and many rows (q4_K, q6_K,
// q8_0, f16) and every KV cache type.
func TestStepEqualsForwardAlone(t *testing.T) {
	cases := []struct {
		model string
		kv    KVType
	}{
		{"smollm3-tinyq-Q4_K_M", KVF16},
		{"smollm3-tinyq-Q4_K_M", KVQ8_0},
		{"smollm3-tinyq-Q4_K_M", KVF32},
		{"qwen3moe-tiny-Q4_K_M", KVF16}, // a mixture of experts: rows grouped by expert
		{"smollm3-tinyq-Q8_0", KVF16},
		{"smollm3-tinyq-F16", KVF16},
		{"smollm3-tinyq-Q5_K_M", KVQ8_0},
		{"qwen3moe-tiny-Q8_0", KVF16},
	}
	steps := 14
	if tensor.Path() == "generic" {
		// Without the amd64 assembly (purego builds, GODEBUG=cpu.avx2=off,
		// other architectures, which CI runs emulated) this is slow: a
		// shorter run still checks the bookkeeping. (The pure Go kernels
		// take one row at a time, so they are batch-invariant by
		// construction.)
		cases, steps = cases[:4], 5
	}
	for ci, tc := range cases {
		t.Run(fmt.Sprintf("%s/%v", tc.model, tc.kv), func(t *testing.T) {
			const batch = 96 // so that some steps take two passes
			var m *CPU
			if strings.HasPrefix(tc.model, "qwen3moe") {
				m = openQwen3MoE(t, tc.model, Options{Threads: 2, BatchSize: batch})
			} else {
				_, m = openModel(t, tc.model, Options{Threads: 2, BatchSize: batch}, rope.EveryNth(8, 4))
			}
			b := newBackend(t, m, CacheOptions{KVType: tc.kv})
			V := m.Config.Vocab
			rng := rand.New(rand.NewPCG(uint64(ci), 7))
			seqs := make([]stepSeq, 6)
			for i := range seqs {
				seqs[i] = stepSeq{c: newSeqCache(t, b), ref: newCache(t, m, CacheOptions{KVType: tc.kv})}
			}
			checked := 0
			for step := range steps {
				var batch []engine.Seq
				var who []int
				for i := range seqs {
					if rng.IntN(3) == 0 {
						continue // sits this step out
					}
					var n, rows int
					switch r := rng.IntN(10); {
					case seqs[i].c.Len() == 0 || r < 2:
						n = []int{64, 100}[rng.IntN(2)] // a prompt chunk
						rows = []int{0, 1, n}[rng.IntN(3)]
					case r < 5:
						n, rows = 5, 1+rng.IntN(5) // a draft
					default:
						n, rows = 1, 1 // a decode
					}
					batch = append(batch, engine.Seq{Cache: seqs[i].c, Tokens: randomTokens(rng, n, V), Logits: make([]float32, rows*V)})
					who = append(who, i)
				}
				if err := b.Step(context.Background(), batch); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for k, s := range batch {
					ref := seqs[who[k]].ref
					rows := len(s.Logits) / V
					want := forward(t, m, ref, s.Tokens, rows > 1)
					if s.Cache.Len() != ref.Len() {
						t.Fatalf("step %d, sequence %d: Len %d, alone %d", step, who[k], s.Cache.Len(), ref.Len())
					}
					if rows == 0 {
						continue
					}
					want = want[len(want)-rows*V:]
					for j := range want {
						if math.Float32bits(s.Logits[j]) != math.Float32bits(want[j]) {
							t.Fatalf("step %d, sequence %d (%d tokens, %d of %d in the step): logit %d of row %d is %g, alone %g",
								step, who[k], len(s.Tokens), k, len(batch), j%V, j/V, s.Logits[j], want[j])
						}
					}
					checked++
				}
			}
			if checked < 3*steps/2 {
				t.Fatalf("only %d sequences' logits compared", checked)
			}
		})
	}
}

// TestLayout checks how rows are grouped into product calls.
func TestLayout(t *testing.T) {
	cases := []struct {
		counts, rows []int
		spans        []span
	}{
		{[]int{1, 1, 1}, []int{0, 1, 2}, []span{{0, 3}}},
		{[]int{64, 1, 0, 5}, []int{6, 0, 0, 1}, []span{{0, 6}, {6, 70}}},
		{[]int{5, 5, 5, 5, 5, 5, 5, 5}, []int{0, 5, 10, 15, 20, 25, 30, 35}, []span{{0, 20}, {20, 40}}},
		{[]int{23, 24, 1}, []int{0, 24, 23}, []span{{0, 12}, {12, 24}, {24, 48}}},
		{[]int{0, 0}, []int{0, 0}, nil},
	}
	for _, tc := range cases {
		rows := make([]int, len(tc.counts))
		spans := layout(tc.counts, rows, nil)
		if fmt.Sprint(rows) != fmt.Sprint(tc.rows) || fmt.Sprint(spans) != fmt.Sprint(tc.spans) {
			t.Errorf("layout(%v) = %v, %v; want %v, %v", tc.counts, rows, spans, tc.rows, tc.spans)
		}
		for _, s := range spans {
			if n := s.hi - s.lo; n >= gemmRows && n != 24 && n != 64 {
				t.Errorf("layout(%v): a call of %d rows", tc.counts, n)
			}
		}
	}
}

// errAfter is a context whose Err is nil for its first n calls and
// context.Canceled afterwards: a cancellation in the middle of a step.
type errAfter struct {
	context.Context
	n int
}

func (c *errAfter) Err() error {
	if c.n > 0 {
		c.n--
		return nil
	}
	return context.Canceled
}

// TestStepErrors checks that bad batches get errors naming the sequence and
// that, after any error, every cache is as it was.
func TestStepErrors(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-Q4_K_M", Options{Threads: 2, BatchSize: 32})
	b := newBackend(t, m, CacheOptions{Context: 40})
	other := newBackend(t, m, CacheOptions{Context: 40})
	V := m.Config.Vocab
	ctx := context.Background()
	c1, c2 := newSeqCache(t, b), newSeqCache(t, b)
	if err := b.Step(ctx, []engine.Seq{{Cache: c1, Tokens: prompt}, {Cache: c2, Tokens: prompt[:3]}}); err != nil {
		t.Fatal(err)
	}
	foreign, closed := newSeqCache(t, other), newSeqCache(t, b)
	closed.Close()
	seq := func(c engine.Cache, toks ...int32) engine.Seq { return engine.Seq{Cache: c, Tokens: toks} }
	long := make([]int32, 40-3+1)
	cases := []struct {
		name   string
		ctx    context.Context
		batch  []engine.Seq
		errHas string
	}{
		{"foreign cache", ctx, []engine.Seq{seq(c1, 1), seq(foreign, 1)}, "sequence 1: a cache this backend did not make"},
		{"twice", ctx, []engine.Seq{seq(c1, 1), seq(c2, 1), seq(c1, 2)}, "sequence 2: its cache is already in the batch"},
		{"closed", ctx, []engine.Seq{seq(closed, 1)}, "sequence 0: the cache is closed"},
		{"no tokens", ctx, []engine.Seq{seq(c1, 1), seq(c2)}, "sequence 1: no tokens"},
		{"token", ctx, []engine.Seq{seq(c1, 1, int32(V))}, "sequence 0: token 337 at index 1 is outside the vocabulary"},
		{"negative token", ctx, []engine.Seq{seq(c1, -1)}, "outside the vocabulary"},
		{"logits", ctx, []engine.Seq{{Cache: c1, Tokens: []int32{1}, Logits: make([]float32, V+1)}}, "sequence 0: 338 logits"},
		{"too many logits", ctx, []engine.Seq{{Cache: c1, Tokens: []int32{1}, Logits: make([]float32, 2*V)}}, "at most 1 tokens"},
		{"full", ctx, []engine.Seq{seq(c1, 1), seq(c2, long...)}, "sequence 1: 3 cached + 38 new tokens exceed the cache length 40"},
		{"cancelled", canceled(), []engine.Seq{seq(c1, 1), seq(c2, 1)}, "context canceled"},
		{"cancelled mid-step", &errAfter{ctx, 12}, []engine.Seq{seq(c1, prompt[:4]...), seq(c2, long[:30]...)}, "context canceled"},
	}
	for _, tc := range cases {
		err := b.Step(tc.ctx, tc.batch)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.errHas)
		}
		if tc.name == "full" && !errors.Is(err, engine.ErrContextFull) {
			t.Errorf("full: %v does not wrap engine.ErrContextFull", err)
		}
		if c1.Len() != len(prompt) || c2.Len() != 3 {
			t.Fatalf("%s: caches hold %d and %d positions, want %d and 3", tc.name, c1.Len(), c2.Len(), len(prompt))
		}
	}
	// After all that, the caches still compute what a fresh sequence does.
	ref := newCache(t, m, CacheOptions{Context: 40})
	forward(t, m, ref, prompt[:3], false)
	want := forward(t, m, ref, []int32{7, 8}, false)
	got := make([]float32, V)
	if err := b.Step(ctx, []engine.Seq{{Cache: c2, Tokens: []int32{7, 8}, Logits: got}}); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(got, want); d != 0 {
		t.Errorf("after the failed steps the logits differ by %g", d)
	}
	if _, err := m.AsBackend(CacheOptions{KVType: 7}); err == nil {
		t.Error("unknown KV type: no error")
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestStepAllocatesNothing: a steady decode step of several sequences, for
// each KV cache type.
func TestStepAllocatesNothing(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-Q4_K_M", Options{Threads: 2})
	V := m.Config.Vocab
	ctx := context.Background()
	for _, kv := range []KVType{KVF16, KVF32, KVQ8_0} {
		b := newBackend(t, m, CacheOptions{KVType: kv})
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
			t.Errorf("%v cache: a decode step of 4 sequences allocates %v times", kv, allocs)
		}
	}
}

// TestStepCaches checks the backend's caches through the engine's
// interfaces: a clone and a CopyFrom continue as the original does, Shift
// and Truncate work, Close frees the memory.
func TestStepCaches(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-Q8_0", Options{Threads: 2})
	b := newBackend(t, m, CacheOptions{})
	V := m.Config.Vocab
	ctx := context.Background()
	a := newSeqCache(t, b)
	if err := b.Step(ctx, []engine.Seq{{Cache: a, Tokens: prompt}}); err != nil {
		t.Fatal(err)
	}
	snap, err := a.(engine.Snapshotter).Clone(8)
	if err != nil {
		t.Fatal(err)
	}
	c := newSeqCache(t, b)
	if err := c.(engine.Snapshotter).CopyFrom(snap, 0, 8); err != nil {
		t.Fatal(err)
	}
	if err := a.Truncate(8); err != nil {
		t.Fatal(err)
	}
	la, lc, ls := make([]float32, V), make([]float32, V), make([]float32, V)
	if err := b.Step(ctx, []engine.Seq{{Cache: a, Tokens: []int32{5}, Logits: la}, {Cache: c, Tokens: []int32{5}, Logits: lc}, {Cache: snap, Tokens: []int32{5}, Logits: ls}}); err != nil {
		t.Fatal(err)
	}
	if d := max(maxDiff(la, lc), maxDiff(la, ls)); d != 0 {
		t.Errorf("clone and copy differ from the original by %g", d)
	}
	other := newBackend(t, m, CacheOptions{})
	if err := newSeqCache(t, other).(engine.Snapshotter).CopyFrom(a, 0, 1); err == nil {
		t.Error("CopyFrom a cache of another backend: no error")
	}
	if err := a.(engine.Shifter).Shift(2, 3); err != nil || a.Len() != 6 {
		t.Errorf("Shift: %v, Len %d, want 6", err, a.Len())
	}
	if a.Bytes() == 0 {
		t.Error("a used cache has no bytes")
	}
	a.Close()
	a.Close()
	if a.Bytes() != 0 {
		t.Errorf("a closed cache holds %d bytes", a.Bytes())
	}
	if err := a.Truncate(0); err == nil {
		t.Error("Truncate of a closed cache: no error")
	}
}

// TestStepModelEqualsForward runs the batching contract on the model file
// named by SMOLGO_MODEL (a full-size shape: the 3B of issue 13), where the
// products have thousands of rows: four decoding sequences, one of them
// with a 5-token draft, next to a 64-token prompt chunk, each compared with
// Forward alone.
func TestStepModelEqualsForward(t *testing.T) {
	path := os.Getenv("SMOLGO_MODEL")
	if path == "" {
		t.Skip("SMOLGO_MODEL is not set (a heavy check)")
	}
	m := openModelFile(t, path, 2)
	b := newBackend(t, m, CacheOptions{Context: 256})
	V := m.Config.Vocab
	rng := rand.New(rand.NewPCG(3, 4))
	var batch []engine.Seq
	var refs []*Cache
	for i, n := range []int{1, 1, 5, 1, 64} {
		c, ref := newSeqCache(t, b), newCache(t, m, CacheOptions{Context: 256})
		prompt := randomTokens(rng, 8+i, V)
		if err := b.Step(context.Background(), []engine.Seq{{Cache: c, Tokens: prompt}}); err != nil {
			t.Fatal(err)
		}
		forward(t, m, ref, prompt, false)
		rows := min(n, 5)
		batch = append(batch, engine.Seq{Cache: c, Tokens: randomTokens(rng, n, V), Logits: make([]float32, rows*V)})
		refs = append(refs, ref)
	}
	batch[4].Logits = batch[4].Logits[:V]
	if err := b.Step(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	for i, s := range batch {
		rows := len(s.Logits) / V
		want := forward(t, m, refs[i], s.Tokens, rows > 1)
		if d := maxDiff(s.Logits, want[len(want)-rows*V:]); d != 0 {
			t.Errorf("sequence %d (%d tokens): batched logits differ from Forward alone by %g", i, len(s.Tokens), d)
		}
	}
}
