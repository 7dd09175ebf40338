package llama

import "testing"

// A cache resumed from a clone of another's prefix computes exactly what
// the original computes after truncating to that prefix, for every type.
func TestCloneAndCopyFrom(t *testing.T) {
	_, m := openModel(t, "smollm3-tinyq-Q4_K_M", Options{Threads: 2})
	seq := randTokens(90, m.Config.Vocab, 3)
	p, a, b := seq[:40], seq[40:70], seq[70:]
	for _, typ := range []KVType{KVF16, KVF32, KVQ8_0} {
		orig := newCache(t, m, CacheOptions{KVType: typ})
		forward(t, m, orig, append(append([]int32(nil), p...), a...), false)
		snap, err := orig.Clone(len(p))
		if err != nil {
			t.Fatal(err)
		}
		if snap.Len() != len(p) || snap.Bytes() != m.Config.KVBytes(typ, len(p)) {
			t.Errorf("%v: clone holds %d positions in %d bytes", typ, snap.Len(), snap.Bytes())
		}
		if err := orig.Truncate(len(p)); err != nil {
			t.Fatal(err)
		}
		want := forward(t, m, orig, b, true)

		whole := newCache(t, m, CacheOptions{KVType: typ})
		if err := whole.CopyFrom(snap, 0, len(p)); err != nil {
			t.Fatal(err)
		}
		if d := maxDiff(forward(t, m, whole, b, true), want); d != 0 {
			t.Errorf("%v: resumed from a copied prefix: logits differ by %g", typ, d)
		}
		// A cache that already holds the first 10 positions copies the rest.
		part := newCache(t, m, CacheOptions{KVType: typ})
		forward(t, m, part, append(append([]int32(nil), p...), a...), false)
		if err := part.Truncate(10); err != nil {
			t.Fatal(err)
		}
		if err := part.CopyFrom(snap, 10, len(p)); err != nil {
			t.Fatal(err)
		}
		if d := maxDiff(forward(t, m, part, b, true), want); d != 0 {
			t.Errorf("%v: resumed from a partly copied prefix: logits differ by %g", typ, d)
		}
	}
	c := newCache(t, m, CacheOptions{})
	snap, _ := newCache(t, m, CacheOptions{KVType: KVF32}).Clone(0)
	for _, err := range []error{
		c.CopyFrom(snap, 0, 0),                          // type mismatch
		c.CopyFrom(c, 1, 2),                             // past the end
		func() error { _, e := c.Clone(1); return e }(), // clone past the end
	} {
		if err == nil {
			t.Error("bad copy: no error")
		}
	}
}
