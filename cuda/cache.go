//go:build cuda

package cuda

import (
	"fmt"

	"github.com/smolgo/smolgo/backend"
)

// Cache is one sequence's keys and values in device memory, float16, in
// one allocation: for each layer, cap rows of keys then cap rows of values,
// each row KVDim halves (position-major, so growing copies one prefix per
// layer). It starts small and grows by doubling up to MaxLen.
type Cache struct {
	b      *Backend
	n, cap int
	max    int
	buf    devPtr
	closed bool
}

var (
	_ backend.Cache       = (*Cache)(nil)
	_ backend.Snapshotter = (*Cache)(nil)
)

const cacheStep = 256 // positions allocated at least, and the growth granule

// NewCache returns an empty cache; device memory comes with the first Step.
func (b *Backend) NewCache() (backend.Cache, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errClosed
	}
	return &Cache{b: b, max: b.p.context}, nil
}

func (c *Cache) Len() int    { return c.n }
func (c *Cache) MaxLen() int { return c.max }

// Bytes is the device memory the cache holds.
func (c *Cache) Bytes() int64 { return c.rowBytes() * 2 * int64(c.b.cfg.Layers) * int64(c.cap) }

func (c *Cache) rowBytes() int64 { return 2 * int64(c.b.cfg.KVDim()) }

// layer returns the device addresses of layer l's keys and values.
func (c *Cache) layer(l int) (k, v devPtr) {
	plane := devPtr(c.rowBytes() * int64(c.cap))
	k = c.buf + devPtr(2*l)*plane
	return k, k + plane
}

// Truncate forgets positions n and after.
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.n {
		return fmt.Errorf("cuda: truncate to %d positions, cache holds %d", n, c.n)
	}
	c.n = n
	return nil
}

// reserve makes room for need positions (with the context current; the
// backend's lock held), keeping the first n.
func (c *Cache) reserve(need int) error {
	if need <= c.cap {
		return nil
	}
	newCap := min(c.max, max(need, 2*c.cap, cacheStep))
	newCap = min(c.max, (newCap+cacheStep-1)/cacheStep*cacheStep)
	return c.realloc(newCap, c.n)
}

// realloc moves the cache to a new allocation of capacity positions,
// copying the first keep positions of every layer.
func (c *Cache) realloc(capacity, keep int) error {
	g := c.b.g
	nb := &Cache{b: c.b, cap: capacity}
	var err error
	if nb.buf, err = g.alloc(nb.Bytes()); err != nil {
		return fmt.Errorf("%w (growing a KV cache to %d positions)", err, capacity)
	}
	if c.buf != 0 {
		for l := range c.b.cfg.Layers {
			ok, ov := c.layer(l)
			nk, nv := nb.layer(l)
			if err := g.copyD(nk, ok, c.rowBytes()*int64(keep)); err != nil {
				g.free(nb.buf)
				return err
			}
			if err := g.copyD(nv, ov, c.rowBytes()*int64(keep)); err != nil {
				g.free(nb.buf)
				return err
			}
		}
		if err := g.sync(); err != nil {
			g.free(nb.buf)
			return err
		}
		g.free(c.buf)
	}
	c.buf, c.cap = nb.buf, capacity
	return nil
}

// Close frees the cache's device memory.
func (c *Cache) Close() error {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if b.closed || c.buf == 0 {
		return nil
	}
	err := b.g.run(func() error {
		b.g.free(c.buf)
		return nil
	})
	c.buf, c.cap, c.n = 0, 0, 0
	return err
}

// Clone returns a new cache holding a copy of positions [0, n).
func (c *Cache) Clone(n int) (backend.Cache, error) {
	if n < 0 || n > c.n {
		return nil, fmt.Errorf("cuda: clone of %d positions, cache holds %d", n, c.n)
	}
	nc := &Cache{b: c.b, max: c.max}
	if err := nc.CopyFrom(c, 0, n); err != nil {
		return nil, err
	}
	return nc, nil
}

// CopyFrom copies positions [from, to) of src and makes the cache hold to
// positions.
func (c *Cache) CopyFrom(src backend.Cache, from, to int) error {
	s, ok := src.(*Cache)
	switch {
	case !ok || s.b != c.b:
		return fmt.Errorf("cuda: copy from a cache of another backend")
	case from < 0 || from > to || to > s.n:
		return fmt.Errorf("cuda: copy of positions [%d, %d) from a cache of %d", from, to, s.n)
	case from > c.n:
		return fmt.Errorf("cuda: copy of positions from %d into a cache of %d (a gap)", from, c.n)
	case to > c.max:
		return fmt.Errorf("cuda: copy of %d positions into a cache of at most %d: %w", to, c.max, backend.ErrContextFull)
	case c.closed || s.closed:
		return fmt.Errorf("cuda: copy with a closed cache")
	}
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errClosed
	}
	err := b.g.run(func() error {
		if err := c.reserve(to); err != nil {
			return err
		}
		rb := c.rowBytes()
		for l := range b.cfg.Layers {
			sk, sv := s.layer(l)
			dk, dv := c.layer(l)
			at, n := devPtr(rb*int64(from)), rb*int64(to-from)
			if err := b.g.copyD(dk+at, sk+at, n); err != nil {
				return err
			}
			if err := b.g.copyD(dv+at, sv+at, n); err != nil {
				return err
			}
		}
		return b.g.sync()
	})
	if err != nil {
		return err
	}
	c.n = to
	return nil
}
