package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEncoder is an encoder whose embedding of a sequence is a function of
// its tokens and pooling, and which records the passes it ran.
type fakeEncoder struct {
	dim, labels, batch, maxTok int
	pooling                    Pooling
	delay                      time.Duration
	fail                       error

	mu     sync.Mutex
	passes [][]int // the lengths of each pass's sequences
	first  [][]int32
}

func (f *fakeEncoder) Vocab() int       { return fakeVocab }
func (f *fakeEncoder) Dim() int         { return f.dim }
func (f *fakeEncoder) Labels() int      { return f.labels }
func (f *fakeEncoder) Pooling() Pooling { return f.pooling }
func (f *fakeEncoder) BatchSize() int   { return f.batch }
func (f *fakeEncoder) MaxTokens() int   { return f.maxTok }

func (f *fakeEncoder) Encode(ctx context.Context, batch []EncodeSeq) error {
	var lens []int
	total := 0
	for _, s := range batch {
		lens = append(lens, len(s.Tokens))
		total += len(s.Tokens)
	}
	f.mu.Lock()
	f.passes = append(f.passes, lens)
	f.first = append(f.first, batch[0].Tokens)
	f.mu.Unlock()
	if total > f.batch {
		return fmt.Errorf("fake encoder: pass of %d tokens, batch size %d", total, f.batch)
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.fail != nil {
		return f.fail
	}
	for _, s := range batch {
		fakeEmbedding(s.Tokens, s.Pooling, s.Out)
	}
	return nil
}

// fakeEmbedding is fakeEncoder's answer.
func fakeEmbedding(toks []int32, p Pooling, out []float32) {
	var sum float32
	for _, t := range toks {
		sum += float32(t)
	}
	for j := range out {
		switch p {
		case PoolMean:
			out[j] = sum/float32(len(toks)) + float32(j)
		case PoolCLS:
			out[j] = float32(toks[0]) + float32(j)
		case PoolLast:
			out[j] = float32(toks[len(toks)-1]) + float32(j)
		case PoolRank:
			out[j] = sum - float32(j)
		}
	}
}

// fakeEmbedFormat is fakeFormat with EmbedFormat: 1 text 2, and
// 1 query 3 document 2.
type fakeEmbedFormat struct{ fakeFormat }

func (fakeEmbedFormat) EmbedTokens(text string) ([]int32, error) {
	return append(append([]int32{1}, fakeEncode(text)...), 2), nil
}

func (fakeEmbedFormat) RerankTokens(q, d string) ([]int32, error) {
	out := append([]int32{1}, fakeEncode(q)...)
	return append(append(append(out, 3), fakeEncode(d)...), 2), nil
}

func newEncoderModel(t *testing.T, e *fakeEncoder, opts ...Option) *Model {
	t.Helper()
	cfg, err := NewConfig(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewEncoder(e, fakeEmbedFormat{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func seqOf(n int, base int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = base + int32(i%50)
	}
	return s
}

// TestEmbedEncoder runs EmbedTokens on an encoder: every vector is the
// encoder's for its sequence, whole sequences are packed into passes of at
// most the batch size, and the options (pooling, normalization,
// dimensions, truncation) do what they say.
func TestEmbedEncoder(t *testing.T) {
	e := &fakeEncoder{dim: 4, labels: 2, batch: 20, maxTok: 8, pooling: PoolMean}
	m := newEncoderModel(t, e, WithMatryoshka(2))
	ctx := context.Background()
	var inputs [][]int32
	for i := range 17 {
		inputs = append(inputs, seqOf(1+i%8, int32(10*i)))
	}
	for _, p := range []Pooling{PoolDefault, PoolMean, PoolCLS, PoolLast, PoolRank} {
		res, err := m.EmbedTokens(ctx, inputs, EmbedOptions{Pooling: p})
		if err != nil {
			t.Fatal(err)
		}
		want := p
		if p == PoolDefault {
			want = PoolMean
		}
		for i, v := range res.Vectors {
			dim := 4
			if want == PoolRank {
				dim = 2
			}
			exp := make([]float32, dim)
			fakeEmbedding(inputs[i], want, exp)
			if !slices.Equal(v, exp) {
				t.Fatalf("%v: input %d: %v, want %v", p, i, v, exp)
			}
		}
	}
	for _, pass := range e.passes {
		total := 0
		for _, n := range pass {
			total += n
		}
		if total > 20 {
			t.Fatalf("a pass of %d tokens: %v", total, pass)
		}
	}
	if len(e.passes) > 5*6 {
		t.Errorf("%d passes for 5 calls of 17 inputs in passes of 20 tokens", len(e.passes))
	}

	// Normalization, and Matryoshka dimensions.
	res, err := m.EmbedTokens(ctx, inputs[:3], EmbedOptions{Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Vectors {
		if n := norm(v); math.Abs(n-1) > 1e-6 {
			t.Errorf("normalized vector of norm %v", n)
		}
	}
	res, err = m.EmbedTokens(ctx, inputs[:3], EmbedOptions{Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range res.Vectors {
		full := make([]float32, 4)
		fakeEmbedding(inputs[i], PoolMean, full)
		if len(v) != 2 || math.Abs(norm(v)-1) > 1e-6 || math.Abs(float64(v[0]/v[1]-full[0]/full[1])) > 1e-5 {
			t.Errorf("dimensions 2: %v from %v", v, full)
		}
	}
	if _, err := m.EmbedTokens(ctx, inputs[:3], EmbedOptions{Dimensions: 4}); err != nil {
		t.Errorf("dimensions equal to the width: %v", err)
	}
	// Truncation.
	long := seqOf(12, 5)
	if _, err := m.EmbedTokens(ctx, [][]int32{long}, EmbedOptions{}); !errors.Is(err, ErrContextFull) {
		t.Errorf("a 12-token input to an 8-token model: %v, want ErrContextFull", err)
	}
	res, err = m.EmbedTokens(ctx, [][]int32{long}, EmbedOptions{Truncate: true})
	if err != nil || res.Truncated != 1 || res.Tokens != 8 {
		t.Errorf("truncated: %+v, %v", res, err)
	}
	// Texts go through the format.
	res, err = m.Embed(ctx, []string{"ab"}, EmbedOptions{Pooling: PoolCLS})
	if err != nil || res.Vectors[0][0] != 1 || res.Tokens != 4 {
		t.Errorf("Embed(\"ab\"): %+v, %v", res, err)
	}
	r, err := m.Rerank(ctx, "q", []string{"d1", "d22"}, RerankOptions{})
	if err != nil || len(r.Scores) != 2 || r.Tokens != 6+7 {
		t.Fatalf("Rerank: %+v, %v", r, err)
	}
	exp := make([]float32, 2)
	fakeEmbedding(append(append([]int32{1, 'q', 3}, fakeEncode("d22")...), 2), PoolRank, exp)
	if r.Scores[1] != exp[0] {
		t.Errorf("rerank score %v, want %v", r.Scores[1], exp[0])
	}
	info := m.EmbedInfo()
	if !info.Embeds || !info.Ranks || info.Generates || info.Dim != 4 || info.MaxTokens != 8 || m.ContextLength() != 8 {
		t.Errorf("EmbedInfo %+v, context %d", info, m.ContextLength())
	}
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// TestEmbedBadInput: each bad request is refused with an error that says
// what is wrong, and the model keeps serving.
func TestEmbedBadInput(t *testing.T) {
	e := &fakeEncoder{dim: 4, batch: 20, maxTok: 8, pooling: PoolCLS}
	m := newEncoderModel(t, e)
	ctx := context.Background()
	ok := [][]int32{{5, 6}}
	for _, c := range []struct {
		name   string
		inputs [][]int32
		opts   EmbedOptions
		is     error
	}{
		{"no inputs", nil, EmbedOptions{}, ErrBadInput},
		{"empty input", [][]int32{{1}, {}}, EmbedOptions{}, ErrBadInput},
		{"id out of range", [][]int32{{1, fakeVocab}}, EmbedOptions{}, ErrBadInput},
		{"negative id", [][]int32{{-1}}, EmbedOptions{}, ErrBadInput},
		{"too long", [][]int32{seqOf(9, 1)}, EmbedOptions{}, ErrContextFull},
		{"dimensions negative", ok, EmbedOptions{Dimensions: -1}, ErrBadInput},
		{"dimensions too large", ok, EmbedOptions{Dimensions: 5}, ErrBadInput},
		{"dimensions without Matryoshka", ok, EmbedOptions{Dimensions: 2}, ErrBadInput},
		{"rank without a head", ok, EmbedOptions{Pooling: PoolRank}, ErrNoEmbeddings},
		{"unknown pooling", ok, EmbedOptions{Pooling: 9}, ErrBadInput},
	} {
		_, err := m.EmbedTokens(ctx, c.inputs, c.opts)
		if !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want %v", c.name, err, c.is)
		}
	}
	if _, err := m.Rerank(ctx, "q", []string{"d"}, RerankOptions{}); !errors.Is(err, ErrNoEmbeddings) {
		t.Errorf("Rerank without a head: %v", err)
	}
	for ev, err := range m.NewSession().Generate(ctx, []Message{{Role: "user", Content: "hi"}}, GenerateOptions{}) {
		if !errors.Is(err, ErrNotGenerative) {
			t.Errorf("Generate on an encoder: %v %v", ev, err)
		}
	}
	if _, err := m.EmbedTokens(ctx, ok, EmbedOptions{}); err != nil {
		t.Errorf("after the bad requests: %v", err)
	}
	// A failing pass fails its calls, not the model.
	e.fail = errors.New("boom")
	if _, err := m.EmbedTokens(ctx, ok, EmbedOptions{}); err == nil || err.Error() != "boom" {
		t.Errorf("failing encoder: %v", err)
	}
	e.fail = nil
	if _, err := m.EmbedTokens(ctx, ok, EmbedOptions{}); err != nil {
		t.Errorf("after a failed pass: %v", err)
	}
}

// TestEmbedFairness: a call of one input arriving while a call of many is
// queued gets into the next pass instead of waiting for all of them.
func TestEmbedFairness(t *testing.T) {
	e := &fakeEncoder{dim: 2, batch: 16, maxTok: 8, pooling: PoolCLS, delay: 20 * time.Millisecond}
	m := newEncoderModel(t, e)
	ctx := context.Background()
	var big [][]int32
	for range 40 {
		big = append(big, seqOf(8, 10))
	}
	done := make(chan error, 1)
	go func() { _, err := m.EmbedTokens(ctx, big, EmbedOptions{}); done <- err }()
	time.Sleep(30 * time.Millisecond)
	start := time.Now()
	if _, err := m.EmbedTokens(ctx, [][]int32{{7, 7, 7}}, EmbedOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*e.delay {
		t.Errorf("the small call waited %v behind 20 passes of %v", d, e.delay)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestEmbedCancelAndClose: a cancelled call returns at once and the model
// goes on; Close ends waiting calls with ErrClosed.
func TestEmbedCancelAndClose(t *testing.T) {
	e := &fakeEncoder{dim: 2, batch: 8, maxTok: 8, pooling: PoolCLS, delay: 30 * time.Millisecond}
	cfg, _ := NewConfig()
	m, err := NewEncoder(e, fakeEmbedFormat{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var many [][]int32
	for range 20 {
		many = append(many, seqOf(8, 1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := m.EmbedTokens(ctx, many, EmbedOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled call: %v", err)
	}
	if _, err := m.EmbedTokens(context.Background(), many[:2], EmbedOptions{}); err != nil {
		t.Errorf("after a cancelled call: %v", err)
	}
	errc := make(chan error, 1)
	go func() { _, err := m.EmbedTokens(context.Background(), many, EmbedOptions{}); errc <- err }()
	time.Sleep(40 * time.Millisecond)
	m.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("call during Close: %v", err)
	}
	if _, err := m.EmbedTokens(context.Background(), many[:1], EmbedOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestEmbedDecoder runs embeddings on a decoder backend through the
// scheduler: mean, last and first-token pooling of the hidden states equal
// what the backend gives for each position, also for inputs longer than a
// step (computed in chunks), while a chat generation runs beside them.
func TestEmbedDecoder(t *testing.T) {
	f := &fakeBackend{ctxLen: 4096, batch: 64, hidden: 6, answer: func([]int32) string { return "a fairly long answer, token by token" }}
	m, err := New(fakeHidden{f}, fakeEmbedFormat{}, Config{MaxSequences: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	if _, err := m.EmbedTokens(ctx, [][]int32{{1, 2}}, EmbedOptions{}); !errors.Is(err, ErrBadInput) {
		t.Errorf("no pooling on a model without one: %v", err)
	}
	// A generation running beside the embeddings.
	gen := make(chan error, 1)
	sess := m.NewSession()
	defer sess.Close()
	go func() {
		for _, err := range sess.Generate(ctx, []Message{{Role: "user", Content: "hello"}}, GenerateOptions{MaxTokens: 30}) {
			if err != nil {
				gen <- err
				return
			}
		}
		gen <- nil
	}()
	var inputs [][]int32
	for i := range 7 {
		inputs = append(inputs, seqOf(1+i*37, int32(i)))
	}
	for _, p := range []Pooling{PoolMean, PoolLast, PoolCLS} {
		res, err := m.EmbedTokens(ctx, inputs, EmbedOptions{Pooling: p})
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range inputs {
			want := make([]float32, 6)
			row := make([]float32, 6)
			switch p {
			case PoolLast:
				fakeHiddenState(in, want)
			case PoolCLS:
				fakeHiddenState(in[:1], want)
			case PoolMean:
				sum := make([]float64, 6)
				for k := range in {
					fakeHiddenState(in[:k+1], row)
					for j := range row {
						sum[j] += float64(row[j])
					}
				}
				for j := range want {
					want[j] = float32(sum[j]) * (1 / float32(len(in)))
				}
			}
			if !slices.Equal(res.Vectors[i], want) {
				t.Fatalf("%v: input %d (%d tokens): %v, want %v", p, i, len(in), res.Vectors[i], want)
			}
		}
	}
	if err := <-gen; err != nil {
		t.Fatalf("the generation beside the embeddings: %v", err)
	}
	if f.open.get() != 1 {
		t.Errorf("%d caches open besides the session's", f.open.get()-1)
	}
	if _, err := m.EmbedTokens(ctx, inputs, EmbedOptions{Pooling: PoolRank}); !errors.Is(err, ErrNoEmbeddings) {
		t.Errorf("rank without a classifier: %v", err)
	}
	// A backend without hidden states cannot embed.
	plain := newFakeModel(&fakeBackend{ctxLen: 64, answer: func([]int32) string { return "" }})
	if _, err := plain.EmbedTokens(ctx, inputs, EmbedOptions{Pooling: PoolMean}); !errors.Is(err, ErrNoEmbeddings) {
		t.Errorf("plain backend: %v", err)
	}
}

// countingRerankFormat is fakeEmbedFormat with RerankFormat, counting the
// bytes it tokenizes.
type countingRerankFormat struct {
	fakeEmbedFormat
	bytes *int
}

func (f countingRerankFormat) RerankQuery(q string) (func(string) []int32, error) {
	*f.bytes += len(q)
	head := append([]int32{1}, fakeEncode(q)...)
	return func(d string) []int32 {
		*f.bytes += len(d)
		return append(append(append(slices.Clone(head), 3), fakeEncode(d)...), 2)
	}, nil
}

// RerankInputs tokenizes the query once (RerankFormat), builds RerankTokens'
// inputs, and stops as soon as the inputs pass maxTokens (issue 39: a
// 400 KB query with 2,048 documents built 614 M tokens before the limit
// was checked).
func TestRerankInputsBounded(t *testing.T) {
	var n int
	cfg, err := NewConfig()
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewEncoder(&fakeEncoder{dim: 4, labels: 1, pooling: PoolRank, batch: 4096, maxTok: 4096}, countingRerankFormat{bytes: &n}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	query := strings.Repeat("q", 1000)
	docs := make([]string, 2048)
	for i := range docs {
		docs[i] = "d"
	}
	in, err := m.RerankInputs(query, docs[:3], 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs[:3] {
		if want, _ := (fakeEmbedFormat{}).RerankTokens(query, d); !slices.Equal(in[i], want) {
			t.Fatalf("input %d differs from RerankTokens", i)
		}
	}
	n = 0
	_, err = m.RerankInputs(query, docs, 10_000)
	if !errors.Is(err, ErrTooManyTokens) {
		t.Fatalf("err = %v, want ErrTooManyTokens", err)
	}
	if n > len(query)+20 {
		t.Errorf("tokenized %d bytes before giving up (the query is %d)", n, len(query))
	}
}
