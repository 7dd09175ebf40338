package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Images in prompts.
//
// A model opened with a vision projector (WithProjector: an mmproj GGUF,
// llama.cpp's second file of a vision model) takes images in messages.
// Message.Images holds the encoded files and Message.Content an
// ImageMarker where each one goes. The format renders the conversation
// with the markers in it and returns ImageHole(k) where the k-th image of
// the prompt stands; the engine puts in its place what the projector makes
// of it: delimiter tokens (Gemma 3's <start_of_image>, Qwen's
// <|vision_start|>, SmolVLM's row and column tags) and runs of embedding
// rows, which a step feeds the text model in place of token embeddings
// (backend.Seq.Embeds, Gemma 3's attending both ways, Qwen's at M-RoPE
// positions).
//
// An image's rows stand in the session's tokens (and the prompt cache's)
// as placeholder ids, negative numbers derived from the SHA-256 of the
// image's bytes, the chunk and the row: a conversation that shows the same
// image again reuses its rows from the KV cache without encoding it again,
// and a different image never matches. A reused prefix never ends inside
// an image chunk.

// ImageMarker marks where an image goes in a message's Content (mtmd's
// default marker).
const ImageMarker = "<__media__>"

// ImageHole is the id a Format's Prompt returns in place of the k-th
// image (counting through the whole conversation) of a prompt.
func ImageHole(k int) int32 { return -1 - int32(k) }

// ErrImage is wrapped by the errors of image input the engine cannot take:
// a model without a projector, an image that does not decode or is over
// the pixel budget, markers that do not match the images. APIs answer with
// a client error.
var ErrImage = errors.New("engine: image input refused")

// Image is an image in a message: the bytes of a PNG, JPEG, GIF or WebP
// file.
type Image struct {
	Data []byte `json:"data"`
}

// A Projector is a vision encoder with its projection (an mmproj file):
// it turns an image into the chunks that take its place in a prompt.
// Package vision implements it and registers its loader
// (RegisterProjector).
type Projector interface {
	// Type is the projector's type (clip.projector_type).
	Type() string
	// Width is the width of the rows it makes.
	Width() int
	// TextArchitectures are the general.architecture values of the text
	// models it feeds.
	TextArchitectures() []string
	// MRoPE reports whether its rows take M-RoPE positions.
	MRoPE() bool
	// Prepare decodes an image file (refusing one of more than maxPixels
	// pixels, 0: its default, from the header) and preprocesses it.
	Prepare(data []byte, maxPixels int) (PreparedImage, error)
	// Close releases the projector.
	Close() error
}

// PreparedImage is an image ready for its projector.
type PreparedImage interface {
	// Chunks are its pieces in a prompt, in order.
	Chunks() []ImageChunk
	// Encode computes the rows of chunk k (Rows × Width floats into dst).
	Encode(ctx context.Context, k int, dst []float32) error
}

// ImageChunk is one piece of an image's place in a prompt.
type ImageChunk struct {
	// Text, for a text chunk, is written with special tokens parsed.
	Text string
	// Rows, for an image chunk, is its number of embedding rows, Advance
	// the positions it moves the sequence on (Rows but for M-RoPE), GridW
	// and GridH its rows' grid for M-RoPE.
	Rows, Advance, GridW, GridH int
	// Bidirectional: the rows attend to each other both ways (Gemma 3).
	Bidirectional bool
}

var projectors struct {
	sync.RWMutex
	open func(path string, cfg Config) (Projector, error)
}

// RegisterProjector makes Open able to load projector files
// (WithProjector); package vision calls it from its init function. It
// panics when called twice or with nil.
func RegisterProjector(open func(path string, cfg Config) (Projector, error)) {
	projectors.Lock()
	defer projectors.Unlock()
	if open == nil || projectors.open != nil {
		panic("engine: RegisterProjector called twice or with nil")
	}
	projectors.open = open
}

// attachProjector loads cfg.Projector for m, whose text model is of
// architecture arch, and checks that it fits.
func (m *Model) attachProjector(arch string) error {
	projectors.RLock()
	open := projectors.open
	projectors.RUnlock()
	if open == nil {
		return fmt.Errorf("engine: no projector loader is registered (import github.com/smolgo/smolgo/vision, or package models)")
	}
	if m.b == nil {
		return fmt.Errorf("engine: the %s model is an encoder; it takes no images", arch)
	}
	p, err := open(m.cfg.Projector, m.cfg)
	if err != nil {
		return err
	}
	if err := fits(p, m.cfg.Projector, arch, m.b); err != nil {
		p.Close()
		return err
	}
	m.proj = p
	return nil
}

// fits checks that projector p (of file path) can feed the text model of
// architecture arch running on b.
func fits(p Projector, path, arch string, b Backend) error {
	e, ok := b.(Embedder)
	if !ok {
		return fmt.Errorf("engine: the %s text model's backend takes no embedding rows, so it cannot use the projector %s", arch, path)
	}
	if !slices.Contains(p.TextArchitectures(), arch) {
		return fmt.Errorf("engine: the projector %s is of type %s, which feeds %s text models, not %s", path, p.Type(), strings.Join(p.TextArchitectures(), " or "), arch)
	}
	if p.Width() != e.EmbedWidth() {
		// Qwen3-VL's rows carry deepstack slices: the projector's deepstack
		// mergers and the text model's n_deepstack_layers must agree too.
		return fmt.Errorf("engine: the projector %s (type %s) makes rows of width %d, but the %s text model's input rows are %d wide (its embedding width, times 1 + its deepstack layers where it has them)", path, p.Type(), p.Width(), arch, e.EmbedWidth())
	}
	if p.MRoPE() != e.MRoPE() {
		return fmt.Errorf("engine: the projector %s (type %s) and the %s text model disagree on M-RoPE positions (projector %v, text model %v)", path, p.Type(), arch, p.MRoPE(), e.MRoPE())
	}
	return nil
}

// TakesImages reports whether the model was opened with a projector.
func (m *Model) TakesImages() bool { return m.proj != nil }

// Projector returns the model's projector, or nil.
func (m *Model) Projector() Projector { return m.proj }

// imageSpan is one image chunk's run of rows in a prompt.
type imageSpan struct {
	start, n int
	img      *promptImage
	chunk    int
	c        ImageChunk
}

// promptImage is an image of a prompt: prepared, hashed.
type promptImage struct {
	p    PreparedImage
	hash [32]byte
}

// imageRowID is the placeholder id of row r of chunk k of an image with
// the given hash: a negative number from 31 bits of the SHA-256 of the
// three, so that equal ids mean the same image's same row.
func imageRowID(hash [32]byte, k, r int) int32 {
	var b [40]byte
	copy(b[:], hash[:])
	binary.LittleEndian.PutUint32(b[32:], uint32(k))
	binary.LittleEndian.PutUint32(b[36:], uint32(r))
	h := sha256.Sum256(b[:])
	return -1 - int32(binary.LittleEndian.Uint32(h[:])&0x7fffffff)
}

// promptImages prepares the images of msgs, in order, after checking that
// each message has a marker per image.
func (m *Model) promptImages(msgs []Message) ([]*promptImage, error) {
	var out []*promptImage
	for i, msg := range msgs {
		if n := strings.Count(msg.Content, ImageMarker); n != len(msg.Images) {
			if len(msg.Images) == 0 {
				continue // the marker is text in a message without images
			}
			return nil, fmt.Errorf("%w: message %d has %d images but %d image markers (%s) in its content", ErrImage, i, len(msg.Images), n, ImageMarker)
		}
		if len(msg.Images) == 0 {
			continue
		}
		if m.proj == nil {
			return nil, fmt.Errorf("%w: message %d has an image, but this model takes no images (open it with a vision projector: engine.WithProjector, webchat -mmproj)", ErrImage, i)
		}
		for k, img := range msg.Images {
			p, err := m.proj.Prepare(img.Data, m.cfg.MaxImagePixels)
			if err != nil {
				return nil, fmt.Errorf("%w: message %d, image %d: %v", ErrImage, i, k, err)
			}
			out = append(out, &promptImage{p: p, hash: sha256.Sum256(img.Data)})
		}
	}
	return out, nil
}

// hasImages reports whether any message carries an image.
func hasImages(msgs []Message) bool {
	for _, m := range msgs {
		if len(m.Images) > 0 {
			return true
		}
	}
	return false
}

// expand replaces the image holes of ids (ImageHole) by the images'
// chunks: delimiter tokens and placeholder rows. It returns the prompt and
// its image spans, in order.
func (m *Model) expand(ids []int32, imgs []*promptImage) ([]int32, []imageSpan, error) {
	var tok Tokenizer
	out := make([]int32, 0, len(ids))
	var spans []imageSpan
	seen := 0
	for _, id := range ids {
		if id >= 0 {
			out = append(out, id)
			continue
		}
		k := int(-1 - id)
		if k != seen || k >= len(imgs) {
			return nil, nil, fmt.Errorf("%w: the prompt places image %d where image %d (of %d) was due", ErrImage, k, seen, len(imgs))
		}
		seen++
		for ci, c := range imgs[k].p.Chunks() {
			if c.Rows == 0 {
				if tok == nil {
					var err error
					if tok, err = m.f.Tokenizer(); err != nil {
						return nil, nil, err
					}
				}
				out = append(out, tok.Encode(c.Text, true)...)
				continue
			}
			if c.Bidirectional && c.Rows > m.b.BatchSize() {
				return nil, nil, fmt.Errorf("%w: an image chunk of %d rows attending both ways does not fit a step of %d (raise the batch size)", ErrImage, c.Rows, m.b.BatchSize())
			}
			spans = append(spans, imageSpan{start: len(out), n: c.Rows, img: imgs[k], chunk: ci, c: c})
			for r := range c.Rows {
				out = append(out, imageRowID(imgs[k].hash, ci, r))
			}
		}
	}
	if seen != len(imgs) {
		return nil, nil, fmt.Errorf("%w: the model's chat format placed %d of the %d images (it does not place images at the markers)", ErrImage, seen, len(imgs))
	}
	return out, spans, nil
}

// imageFloor is the largest n' <= n that is not inside an image span: a
// reused prefix ends before an image chunk or after it.
func imageFloor(spans []imageSpan, n int) int {
	for _, s := range spans {
		if s.start < n && n < s.start+s.n {
			return s.start
		}
	}
	return n
}

// inSpan reports whether prompt row i is an image row.
func inSpan(spans []imageSpan, i int) bool {
	for _, s := range spans {
		if s.start <= i && i < s.start+s.n {
			return true
		}
	}
	return false
}

// positions are the rotary positions of a prompt's rows for an M-RoPE
// backend (nil when no image moves them off their places), and the
// position after the prompt.
func positions(spans []imageSpan, n int, mrope bool) ([]Position, int) {
	if !mrope || len(spans) == 0 {
		return nil, n
	}
	out := make([]Position, n)
	pos, si := 0, 0
	for i := 0; i < n; {
		if si < len(spans) && spans[si].start == i {
			s := spans[si]
			gw := max(1, s.c.GridW)
			for r := range s.n {
				out[i+r] = Position{T: int32(pos), Y: int32(pos + r/gw), X: int32(pos + r%gw)}
			}
			i += s.n
			pos += s.c.Advance
			si++
			continue
		}
		p := int32(pos)
		out[i] = Position{T: p, Y: p, X: p}
		i++
		pos++
	}
	return out, pos
}
