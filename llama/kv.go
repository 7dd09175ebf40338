package llama

import (
	"io"
	"slices"

	"github.com/smolgo/smolgo/tensor"
)

// A Cache keeps, for each layer, the keys and values of the positions it
// holds in one kvStore, whose element type is the cache's KVType: f16KV,
// f32KV or q8KV (kvq8.go). Everything that depends on the element type
// (how keys are written and read back, how a tile is widened to f32, the
// online softmax of one query head) is a method of the store; the cache,
// the forward pass and the shift only say which slots.
//
// A slot is a position's row in a store. In an ordinary layer the slot is
// the position. A sliding-window layer keeps a ring: slot = position mod
// ring, where the ring holds the window plus one pass of new tokens (the
// first new token still sees Window-1 older positions while the pass
// writes the rest), so memory stays bounded however long the sequence.
type kvStore interface {
	// grow makes room for slots positions, keeping the first keep.
	grow(slots, keep int)
	// release drops the memory; grow starts again from nothing.
	release()
	// bytes is the memory the store holds.
	bytes() int64
	// put writes whole positions' keys and values (KVDim values each,
	// back to back) at slots slot, slot+1, ...
	put(slot int, k, v []float32)
	// move copies n positions from slot src to slot dst (the ranges may
	// overlap, as copy allows).
	move(dst, src, n int)
	// copyFrom copies slots [lo, hi) of src, a store of the same type and
	// width.
	copyFrom(src kvStore, lo, hi int)
	// clone returns a copy of slots [0, n) with memory for those only.
	clone(n int) kvStore
	// save writes the keys of slots [0, slots), then their values, as
	// little-endian rows (cache_save.go), converting through buf; load
	// reads them back into slots the store has room for.
	save(w io.Writer, buf []byte, slots int) error
	load(r io.Reader, buf []byte, slots int) error
	// key widens the keys of the position at slot to f32; setKey rounds
	// f32 keys into it as a forward pass would.
	key(slot int, dst []float32)
	setKey(slot int, src []float32)

	// prepare readies a pass's new queries, keys and values of one
	// sequence (whole positions) for this store: the q8_0 store rotates
	// them (Walsh-Hadamard) and rounds the queries into qq. finish undoes
	// what prepare did to the attention output.
	prepare(q, k, v []float32, qq []byte)
	finish(att []float32)
	// tiled says whether a pass of n new tokens attends over f32 tiles
	// (widen) rather than position by position (online).
	tiled(n int) bool
}

// The attention reads a store through two functions, not interface
// methods, so that the buffers it passes stay on its stack (a slice handed
// to an interface method escapes to the heap, and decode allocates nothing).

// online is the online softmax of one query head over the positions in
// segs, in order, of KV head kvh: q is the head's query (qq its rounded
// form, for the q8_0 store), scale the score factor, and the result goes
// to out, with the head's sink logit (noSink: none).
func online(s kvStore, out, q []float32, qq []byte, kvh int, segs []seg, scale, sink float32) {
	switch s := s.(type) {
	case *f16KV:
		onlineF16(out, q, s.k, s.v, kvh*len(q), s.kv, segs, scale, sink)
	case *q8KV:
		s.online(out, qq, kvh, segs, scale, sink)
	default:
		panic("llama: this cache type attends over tiles only")
	}
}

// widen writes n positions' keys and values of the head at offset off
// (hd values each) from slot on into kt and vt as f32, back to back.
func widen(s kvStore, kt, vt []float32, slot, n, off, hd int) {
	switch s := s.(type) {
	case *f16KV:
		s.widen(kt, vt, slot, n, off, hd)
	case *f32KV:
		s.widen(kt, vt, slot, n, off, hd)
	default:
		panic("llama: this cache type attends position by position only")
	}
}

// seg is a run of consecutive slots: slot, slot+1, ..., slot+n-1.
type seg struct{ slot, n int }

// f16KV stores keys and values as float16 (llama.cpp's default cache).
type f16KV struct {
	k, v []uint16
	kv   int // values per position (KVDim)
}

func (s *f16KV) grow(slots, keep int) {
	s.k = append(make([]uint16, 0, slots*s.kv), s.k[:keep*s.kv]...)[:slots*s.kv]
	s.v = append(make([]uint16, 0, slots*s.kv), s.v[:keep*s.kv]...)[:slots*s.kv]
}
func (s *f16KV) release()         { s.k, s.v = nil, nil }
func (s *f16KV) bytes() int64     { return 2 * int64(len(s.k)+len(s.v)) }
func (s *f16KV) tiled(n int) bool { return n >= tileKV }

func (s *f16KV) put(slot int, k, v []float32) {
	tensor.ToF16s(s.k[slot*s.kv:slot*s.kv+len(k)], k)
	tensor.ToF16s(s.v[slot*s.kv:slot*s.kv+len(v)], v)
}

func (s *f16KV) move(dst, src, n int) {
	copy(s.k[dst*s.kv:], s.k[src*s.kv:(src+n)*s.kv])
	copy(s.v[dst*s.kv:], s.v[src*s.kv:(src+n)*s.kv])
}

func (s *f16KV) copyFrom(src kvStore, lo, hi int) {
	o := src.(*f16KV)
	copy(s.k[lo*s.kv:hi*s.kv], o.k[lo*s.kv:hi*s.kv])
	copy(s.v[lo*s.kv:hi*s.kv], o.v[lo*s.kv:hi*s.kv])
}

func (s *f16KV) clone(n int) kvStore {
	return &f16KV{k: slices.Clone(s.k[:n*s.kv]), v: slices.Clone(s.v[:n*s.kv]), kv: s.kv}
}

func (s *f16KV) key(slot int, dst []float32) {
	for i, h := range s.k[slot*s.kv : (slot+1)*s.kv] {
		dst[i] = tensor.FromF16(h)
	}
}

func (s *f16KV) setKey(slot int, src []float32) {
	tensor.ToF16s(s.k[slot*s.kv:(slot+1)*s.kv], src)
}

func (s *f16KV) prepare(q, k, v []float32, qq []byte) {}
func (s *f16KV) finish(att []float32)                 {}

func (s *f16KV) widen(kt, vt []float32, slot, n, off, hd int) {
	for p := range n {
		i, d := (slot+p)*s.kv+off, p*hd
		ks, vs := s.k[i:i+hd], s.v[i:i+hd]
		for e := range hd {
			kt[d+e] = tensor.FromF16(ks[e])
			vt[d+e] = tensor.FromF16(vs[e])
		}
	}
}

// f32KV stores keys and values as float32, and always attends over f32
// tiles.
type f32KV struct {
	k, v []float32
	kv   int
}

func (s *f32KV) grow(slots, keep int) {
	s.k = append(make([]float32, 0, slots*s.kv), s.k[:keep*s.kv]...)[:slots*s.kv]
	s.v = append(make([]float32, 0, slots*s.kv), s.v[:keep*s.kv]...)[:slots*s.kv]
}
func (s *f32KV) release()       { s.k, s.v = nil, nil }
func (s *f32KV) bytes() int64   { return 4 * int64(len(s.k)+len(s.v)) }
func (s *f32KV) tiled(int) bool { return true }

func (s *f32KV) put(slot int, k, v []float32) {
	copy(s.k[slot*s.kv:], k)
	copy(s.v[slot*s.kv:], v)
}

func (s *f32KV) move(dst, src, n int) {
	copy(s.k[dst*s.kv:], s.k[src*s.kv:(src+n)*s.kv])
	copy(s.v[dst*s.kv:], s.v[src*s.kv:(src+n)*s.kv])
}

func (s *f32KV) copyFrom(src kvStore, lo, hi int) {
	o := src.(*f32KV)
	copy(s.k[lo*s.kv:hi*s.kv], o.k[lo*s.kv:hi*s.kv])
	copy(s.v[lo*s.kv:hi*s.kv], o.v[lo*s.kv:hi*s.kv])
}

func (s *f32KV) clone(n int) kvStore {
	return &f32KV{k: slices.Clone(s.k[:n*s.kv]), v: slices.Clone(s.v[:n*s.kv]), kv: s.kv}
}

func (s *f32KV) key(slot int, dst []float32)    { copy(dst, s.k[slot*s.kv:(slot+1)*s.kv]) }
func (s *f32KV) setKey(slot int, src []float32) { copy(s.k[slot*s.kv:(slot+1)*s.kv], src) }

func (s *f32KV) prepare(q, k, v []float32, qq []byte) {}
func (s *f32KV) finish(att []float32)                 {}

func (s *f32KV) widen(kt, vt []float32, slot, n, off, hd int) {
	for p := range n {
		i, d := (slot+p)*s.kv+off, p*hd
		copy(kt[d:d+hd], s.k[i:i+hd])
		copy(vt[d:d+hd], s.v[i:i+hd])
	}
}
