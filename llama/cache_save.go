package llama

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A cache's positions on disk (backend.Persister): what package engine's
// prompt cache writes to its directory so that a restarted server finds
// the prompts it had computed. The bytes are, little-endian:
//
//	per layer:          uint64 lost (0 unless a sliding-window ring wrapped)
//	per layer, in turn: the keys of the slots held, then their values,
//	                    rows of KVDim values in the store's element type
//	                    (f16 and f32 as bits, q8_0 as its 34-byte blocks)
//	                    (none for a recurrent layer)
//	recurrent models:   per recurrent layer, its state after the positions
//	                    held (f32); uint32 checkpoints; per checkpoint,
//	                    uint64 its length, then its states likewise
//
// The slots held are the positions for an ordinary layer, and for a
// sliding-window layer its ring (whole once it has wrapped), exactly what
// Clone keeps. Nothing else is written: a cache's meaning (which model
// computed it) is the caller's to check, and Layout says what a reader must
// share with the writer.

// saveFormat is the version of the bytes above, part of Layout.
const saveFormat = 2

// Layout implements backend.Persister: the format version, element type,
// layers, widths, and the windows and rings of sliding-window layers. A
// cache of another layout cannot read what this one saves.
func (c *Cache) Layout() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llama/%d kv=%v layers=%d kvdim=%d headdim=%d", saveFormat, c.typ, len(c.kv), c.model.Config.KVDim(), c.model.Config.HeadDim)
	for l, r := range c.ring {
		if r > 0 {
			fmt.Fprintf(&b, " ring%d=%d/%d", l, c.model.Arch.Layers[l].window(), r)
		}
	}
	for l, s := range c.state {
		if s != nil {
			fmt.Fprintf(&b, " state%d=%s/%d", l, c.model.Arch.Layers[l].Mixer.Kind(), len(s))
		}
	}
	return b.String()
}

// held is the number of slots of layer l that hold positions of a cache of
// n positions (Clone's sizes).
func (c *Cache) held(l, n int) int {
	if r := c.ring[l]; r > 0 {
		if c.lost[l] > 0 {
			return r
		}
		return min(n, r)
	}
	return n
}

// SaveTo implements backend.Persister: it writes the positions the cache
// holds to w (see the format above).
func (c *Cache) SaveTo(w io.Writer) error {
	var hdr []byte
	for _, lost := range c.lost {
		hdr = binary.LittleEndian.AppendUint64(hdr, uint64(lost))
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	if c.recurrent() && !c.valid {
		return errInterrupted
	}
	buf := make([]byte, saveChunk)
	for l, s := range c.kv {
		if err := s.save(w, buf, c.held(l, c.n)); err != nil {
			return err
		}
	}
	if !c.recurrent() {
		return nil
	}
	if err := writeStates(w, buf, c.state); err != nil {
		return err
	}
	var cps []*statePoint
	for _, p := range c.points {
		if p.checkpoint {
			cps = append(cps, p)
		}
	}
	if _, err := w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(cps)))); err != nil {
		return err
	}
	for _, p := range cps {
		if _, err := w.Write(binary.LittleEndian.AppendUint64(nil, uint64(p.pos))); err != nil {
			return err
		}
		if err := writeStates(w, buf, p.state); err != nil {
			return err
		}
	}
	return nil
}

// writeStates writes the recurrent layers' states, layer after layer.
func writeStates(w io.Writer, buf []byte, state [][]float32) error {
	for _, s := range state {
		if s != nil {
			if err := writeLE(w, buf, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// readStates reads what writeStates wrote, into state's slices.
func readStates(r io.Reader, buf []byte, state [][]float32) error {
	for _, s := range state {
		if s != nil {
			if err := readLE(r, buf, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// LoadFrom implements backend.Persister: the cache then holds n positions
// read from r, as SaveTo wrote them from a cache of the same Layout. Bad
// input is an error, never a panic, and allocates no more than a cache of
// n positions: n is checked against MaxLen and every layer's lost count
// against n and the layer's ring before memory is taken. On error the
// cache is empty.
func (c *Cache) LoadFrom(r io.Reader, n int) error {
	c.release()
	if err := c.loadFrom(r, n); err != nil {
		c.release()
		return fmt.Errorf("llama: loading %d cached positions: %w", n, err)
	}
	return nil
}

func (c *Cache) loadFrom(r io.Reader, n int) error {
	if n < 0 || n > c.maxLen {
		return fmt.Errorf("%d positions do not fit a cache of %d", n, c.maxLen)
	}
	hdr := make([]byte, 8*len(c.kv))
	if _, err := io.ReadFull(r, hdr); err != nil {
		return noEOF(err)
	}
	for l := range c.kv {
		lost := binary.LittleEndian.Uint64(hdr[8*l:])
		ring, w := c.ring[l], c.model.Arch.Layers[l].window()
		switch {
		case ring == 0 && lost != 0:
			return fmt.Errorf("layer %d keeps every position but says %d were overwritten", l, lost)
		case lost > 0 && lost+uint64(w)-1 > uint64(n):
			return fmt.Errorf("layer %d: %d positions overwritten leave no window before position %d", l, lost, n)
		case ring > 0 && lost == 0 && n > ring:
			return fmt.Errorf("layer %d: %d positions in a ring of %d that never wrapped", l, n, ring)
		}
		c.lost[l] = int(lost)
	}
	buf := make([]byte, saveChunk)
	for l, s := range c.kv {
		held := c.held(l, n)
		s.grow(held, 0)
		if err := s.load(r, buf, held); err != nil {
			return noEOF(err)
		}
	}
	c.n, c.capLen = n, n
	if !c.recurrent() {
		return nil
	}
	if err := readStates(r, buf, c.state); err != nil {
		return noEOF(err)
	}
	var hdr4 [4]byte
	if _, err := io.ReadFull(r, hdr4[:]); err != nil {
		return noEOF(err)
	}
	cps := binary.LittleEndian.Uint32(hdr4[:])
	if cps > uint32(max(0, c.maxCheckpoints)) {
		return fmt.Errorf("%d checkpoints, the cache keeps at most %d", cps, c.maxCheckpoints)
	}
	last := uint64(0)
	for range cps {
		var hdr8 [8]byte
		if _, err := io.ReadFull(r, hdr8[:]); err != nil {
			return noEOF(err)
		}
		pos := binary.LittleEndian.Uint64(hdr8[:])
		if pos == 0 || pos > uint64(n) || pos <= last {
			return fmt.Errorf("a checkpoint at %d (after %d) in a cache of %d positions", pos, last, n)
		}
		last = pos
		p := c.newPoint(int(pos))
		p.checkpoint = true
		if err := readStates(r, buf, p.state); err != nil {
			return noEOF(err)
		}
	}
	c.valid = true
	return nil
}

// noEOF turns a clean end of input into io.ErrUnexpectedEOF: every byte
// LoadFrom asks for is one SaveTo wrote.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// saveChunk is the buffer SaveTo and LoadFrom convert rows through.
const saveChunk = 256 << 10

// The stores write their first slots rows: keys, then values.

func (s *f16KV) save(w io.Writer, buf []byte, slots int) error {
	return writeLE(w, buf, s.k[:slots*s.kv], s.v[:slots*s.kv])
}
func (s *f16KV) load(r io.Reader, buf []byte, slots int) error {
	return readLE(r, buf, s.k[:slots*s.kv], s.v[:slots*s.kv])
}
func (s *f32KV) save(w io.Writer, buf []byte, slots int) error {
	return writeLE(w, buf, s.k[:slots*s.kv], s.v[:slots*s.kv])
}
func (s *f32KV) load(r io.Reader, buf []byte, slots int) error {
	return readLE(r, buf, s.k[:slots*s.kv], s.v[:slots*s.kv])
}

// The q8_0 rows are bytes already: ggml's blocks, as the file stores them.
func (s *q8KV) save(w io.Writer, _ []byte, slots int) error {
	if _, err := w.Write(s.k[:slots*s.row]); err != nil {
		return err
	}
	_, err := w.Write(s.v[:slots*s.row])
	return err
}
func (s *q8KV) load(r io.Reader, _ []byte, slots int) error {
	if _, err := io.ReadFull(r, s.k[:slots*s.row]); err != nil {
		return err
	}
	_, err := io.ReadFull(r, s.v[:slots*s.row])
	return err
}

// writeLE writes slices of uint16 or float32 little-endian, through buf.
func writeLE[T uint16 | float32](w io.Writer, buf []byte, parts ...[]T) error {
	var zero T
	size := binary.Size(zero)
	per := len(buf) / size
	for _, p := range parts {
		for len(p) > 0 {
			n := min(len(p), per)
			m, err := binary.Encode(buf, binary.LittleEndian, p[:n])
			if err != nil {
				return err
			}
			if _, err := w.Write(buf[:m]); err != nil {
				return err
			}
			p = p[n:]
		}
	}
	return nil
}

// readLE fills slices of uint16 or float32 from little-endian input.
func readLE[T uint16 | float32](r io.Reader, buf []byte, parts ...[]T) error {
	var zero T
	size := binary.Size(zero)
	per := len(buf) / size
	for _, p := range parts {
		for len(p) > 0 {
			n := min(len(p), per)
			if _, err := io.ReadFull(r, buf[:n*size]); err != nil {
				return err
			}
			if _, err := binary.Decode(buf[:n*size], binary.LittleEndian, p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
	}
	return nil
}
