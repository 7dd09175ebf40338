// Package pixels reads image files into 8-bit RGB pixels and resizes them
// as llama.cpp's multimodal library (tools/mtmd) does before a vision
// encoder sees them.
//
// Decode takes PNG, JPEG, GIF (its first frame), WebP and binary PPM (P6)
// files, and drops any alpha channel without compositing, as stb_image
// loading three channels does. Before it decodes a single pixel it reads
// the header and refuses a picture larger than the pixel budget, so a
// 30,000 × 30,000 PNG of a few kilobytes is an error, not a 3.6 GB
// allocation.
//
// Resize is Pillow's separable resampler (bilinear, bicubic with a = -0.5,
// Lanczos-3) in the fixed-point arithmetic mtmd's copy of it uses (22
// fractional bits, rounding half up, clamping to 0..255), so the pixels are
// mtmd's bit for bit. Fit scales a picture into a box keeping its aspect
// ratio and centres it on a colour (mtmd's PAD_CEIL); Crop cuts tiles.
package pixels

import (
	"fmt"
)

// RGB is a picture of W × H pixels, three bytes each (red, green, blue),
// row after row from the top left.
type RGB struct {
	W, H int
	Pix  []uint8 // 3·W·H bytes
}

// New returns a black picture of w × h pixels.
func New(w, h int) *RGB {
	return &RGB{W: w, H: h, Pix: make([]uint8, 3*w*h)}
}

// At returns the pixel at (x, y).
func (p *RGB) At(x, y int) [3]uint8 {
	i := 3 * (y*p.W + x)
	return [3]uint8{p.Pix[i], p.Pix[i+1], p.Pix[i+2]}
}

// Fill sets every pixel to c.
func (p *RGB) Fill(c [3]uint8) {
	for i := 0; i < len(p.Pix); i += 3 {
		p.Pix[i], p.Pix[i+1], p.Pix[i+2] = c[0], c[1], c[2]
	}
}

// Paste copies src into p with its top left corner at (x0, y0); pixels
// falling outside p are dropped.
func (p *RGB) Paste(src *RGB, x0, y0 int) {
	for y := range src.H {
		dy := y + y0
		if dy < 0 || dy >= p.H {
			continue
		}
		for x := range src.W {
			dx := x + x0
			if dx < 0 || dx >= p.W {
				continue
			}
			copy(p.Pix[3*(dy*p.W+dx):3*(dy*p.W+dx)+3], src.Pix[3*(y*src.W+x):3*(y*src.W+x)+3])
		}
	}
}

// Crop returns the w × h pixels of p whose top left corner is (x, y); the
// rectangle must lie inside p.
func (p *RGB) Crop(x, y, w, h int) (*RGB, error) {
	if x < 0 || y < 0 || w <= 0 || h <= 0 || x+w > p.W || y+h > p.H {
		return nil, fmt.Errorf("pixels: crop %dx%d at (%d, %d) of a %dx%d picture", w, h, x, y, p.W, p.H)
	}
	d := New(w, h)
	for r := range h {
		copy(d.Pix[3*r*w:3*(r+1)*w], p.Pix[3*((y+r)*p.W+x):3*((y+r)*p.W+x+w)])
	}
	return d, nil
}

// Fit scales p to fit a w × h box keeping its aspect ratio (the scale is the
// smaller of the two ratios, the scaled sides rounded up and capped at the
// box), resampled with f, and centres it on pad (the offsets rounded down):
// mtmd's resize with PAD_CEIL. A picture already w × h is copied as it is.
func (p *RGB) Fit(w, h int, f Filter, pad [3]uint8) (*RGB, error) {
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("pixels: fit into %dx%d", w, h)
	}
	if p.W == w && p.H == h {
		d := New(w, h)
		copy(d.Pix, p.Pix)
		return d, nil
	}
	sw := float32(w) / float32(p.W)
	sh := float32(h) / float32(p.H)
	s := min(sw, sh)
	nw := min(ceil32(float32(p.W)*s), w)
	nh := min(ceil32(float32(p.H)*s), h)
	r, err := p.Resize(nw, nh, f)
	if err != nil {
		return nil, err
	}
	d := New(w, h)
	d.Fill(pad)
	d.Paste(r, (w-nw)/2, (h-nh)/2)
	return d, nil
}

// ceil32 is C's (int)ceilf(x) for the positive x it is given.
func ceil32(x float32) int {
	i := int(x)
	if float32(i) < x {
		i++
	}
	return i
}
