package llama

import (
	"fmt"
	"slices"
)

// Clone returns a new cache holding a copy of the first n positions of c,
// with memory for exactly those n: a snapshot of a prompt's keys and values
// that outlives c's next turns (package engine's prompt cache keeps such
// snapshots and copies them into other sessions' caches with CopyFrom).
// The clone has c's type and MaxLen; it allocates its work buffers only if
// Forward runs on it.
func (c *Cache) Clone(n int) (*Cache, error) {
	if n < 0 || n > c.n {
		return nil, fmt.Errorf("llama: cannot clone %d positions of a cache holding %d", n, c.n)
	}
	d := &Cache{model: c.model, typ: c.typ, maxLen: c.maxLen, n: n, capLen: n, rowQ8: c.rowQ8, rotK: c.rotK, rotV: c.rotV}
	kv := c.model.Config.KVDim()
	switch c.typ {
	case KVQ8_0:
		d.k8, d.v8 = cloneRows(c.k8, n*c.rowQ8), cloneRows(c.v8, n*c.rowQ8)
	case KVF16:
		d.k16, d.v16 = cloneRows(c.k16, n*kv), cloneRows(c.v16, n*kv)
	default:
		d.k32, d.v32 = cloneRows(c.k32, n*kv), cloneRows(c.v32, n*kv)
	}
	return d, nil
}

func cloneRows[E any](layers [][]E, n int) [][]E {
	out := make([][]E, len(layers))
	for l, s := range layers {
		out[l] = slices.Clone(s[:n])
	}
	return out
}

// CopyFrom copies positions [from, to) of src into c and makes c hold to
// positions: c's first from positions are kept, so they must already be
// the same tokens' keys and values (from = 0 copies the whole prefix). src
// must come from the same model and have the same type. It is how a
// session resumes from a snapshot of a shared prefix without computing it.
func (c *Cache) CopyFrom(src *Cache, from, to int) error {
	switch {
	case src.model != c.model:
		return fmt.Errorf("llama: copying between caches of different models")
	case src.typ != c.typ:
		return fmt.Errorf("llama: copying a %v cache into a %v cache", src.typ, c.typ)
	case from < 0 || from > to || to > src.n:
		return fmt.Errorf("llama: cannot copy positions [%d, %d) of a cache holding %d", from, to, src.n)
	case from > c.n:
		return fmt.Errorf("llama: copying from position %d into a cache holding only %d", from, c.n)
	case to > c.maxLen:
		return fmt.Errorf("llama: %d positions exceed the cache length %d: %w", to, c.maxLen, ErrContextFull)
	}
	c.n = from
	c.reserve(to)
	rb := c.model.Config.KVDim()
	if c.typ == KVQ8_0 {
		rb = c.rowQ8
	}
	a, b := from*rb, to*rb
	for l := range c.model.Config.Layers {
		switch c.typ {
		case KVQ8_0:
			copy(c.k8[l][a:b], src.k8[l][a:b])
			copy(c.v8[l][a:b], src.v8[l][a:b])
		case KVF16:
			copy(c.k16[l][a:b], src.k16[l][a:b])
			copy(c.v16[l][a:b], src.v16[l][a:b])
		default:
			copy(c.k32[l][a:b], src.k32[l][a:b])
			copy(c.v32[l][a:b], src.v32[l][a:b])
		}
	}
	c.n = to
	return nil
}
