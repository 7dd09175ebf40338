package vision

import (
	"context"

	"github.com/smolgo/smolgo/engine"
)

// Importing the package (package models does) lets engine.Open load
// projector files (engine.WithProjector).
func init() {
	engine.RegisterProjector(func(path string, cfg engine.Config) (engine.Projector, error) {
		p, err := Open(path, Options{Threads: cfg.Threads, KeepLayout: cfg.KeepLayout})
		if err != nil {
			return nil, err
		}
		return engineProjector{p}, nil
	})
}

// Of returns the Projector under an engine model's projector
// (engine.Model.Projector of a model opened with engine.WithProjector),
// and false for nil or a projector this package did not load. It is the
// way to the package's own API (Split, Encode, Bidirectional) for tools
// that lay out a prompt themselves, with the model's checks that the
// projector fits its text model already made:
//
//	m, err := engine.Open("model.gguf", engine.WithProjector("mmproj.gguf"))
//	...
//	pr, _ := vision.Of(m.Projector())
//	img, err := pr.Prepare(data, 0)
func Of(p engine.Projector) (*Projector, bool) {
	ep, ok := p.(engineProjector)
	return ep.Projector, ok && ep.Projector != nil
}

// engineProjector is a Projector as an engine.Projector.
type engineProjector struct{ *Projector }

func (p engineProjector) Prepare(data []byte, maxPixels int) (engine.PreparedImage, error) {
	img, err := p.Projector.Prepare(data, maxPixels)
	if err != nil {
		return nil, err
	}
	return preparedImage{p.Projector, img}, nil
}

// preparedImage is an Image as an engine.PreparedImage.
type preparedImage struct {
	p   *Projector
	img *Image
}

func (pi preparedImage) Chunks() []engine.ImageChunk {
	out := make([]engine.ImageChunk, len(pi.img.Chunks))
	for i, c := range pi.img.Chunks {
		out[i] = engine.ImageChunk{Text: c.Text, Rows: c.Rows, Advance: c.Advance, GridW: c.GridW, GridH: c.GridH,
			Bidirectional: c.Rows > 0 && pi.p.Bidirectional()}
	}
	return out
}

func (pi preparedImage) Encode(ctx context.Context, k int, dst []float32) error {
	return pi.p.Encode(ctx, pi.img, k, dst)
}
