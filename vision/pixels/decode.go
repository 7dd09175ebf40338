package pixels

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strconv"

	"golang.org/x/image/webp"
)

// DefaultMaxPixels is the pixel budget Decode uses when the caller gives
// none: 2^25 (33.5 million, an 8K × 4K picture), about 100 MB of RGB.
const DefaultMaxPixels = 1 << 25

// ErrTooLarge is wrapped by Decode's error for a picture over the budget.
var ErrTooLarge = errors.New("the image has more pixels than allowed")

// ErrFormat is wrapped by Decode's error for bytes of no format it reads.
var ErrFormat = errors.New("not a PNG, JPEG, GIF, WebP or PPM image")

// Format names the file format of data by its first bytes ("png", "jpeg",
// "gif", "webp", "ppm"), or "" for none of those.
func Format(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "jpeg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "gif"
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return "webp"
	case bytes.HasPrefix(data, []byte("P6")) && len(data) > 2 && isSpace(data[2]):
		return "ppm"
	}
	return ""
}

// Size reads the width and height from data's header without decoding the
// pixels.
func Size(data []byte) (w, h int, format string, err error) {
	format = Format(data)
	var cfg image.Config
	r := bytes.NewReader(data)
	switch format {
	case "png":
		cfg, err = png.DecodeConfig(r)
	case "jpeg":
		cfg, err = jpeg.DecodeConfig(r)
	case "gif":
		cfg, err = gif.DecodeConfig(r)
	case "webp":
		cfg, err = webp.DecodeConfig(r)
	case "ppm":
		var p ppmHeader
		p, err = readPPMHeader(data)
		cfg.Width, cfg.Height = p.w, p.h
	default:
		return 0, 0, "", ErrFormat
	}
	if err != nil {
		return 0, 0, format, fmt.Errorf("reading the %s header: %w", format, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, 0, format, fmt.Errorf("the %s header gives a %dx%d image", format, cfg.Width, cfg.Height)
	}
	return cfg.Width, cfg.Height, format, nil
}

// Decode reads an image file into RGB pixels, refusing one whose header
// gives more than maxPixels pixels (0: DefaultMaxPixels) before decoding
// it. Errors name what is wrong: ErrFormat for unknown bytes, ErrTooLarge
// for a picture over the budget, the format's own error for a corrupt or
// truncated file.
func Decode(data []byte, maxPixels int) (*RGB, error) {
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}
	w, h, format, err := Size(data)
	if err != nil {
		return nil, err
	}
	if int64(w)*int64(h) > int64(maxPixels) {
		return nil, fmt.Errorf("%w: a %dx%d %s is %d pixels, the limit is %d", ErrTooLarge, w, h, format, int64(w)*int64(h), maxPixels)
	}
	if format == "ppm" {
		return decodePPM(data)
	}
	var img image.Image
	r := bytes.NewReader(data)
	switch format {
	case "png":
		img, err = png.Decode(r)
	case "jpeg":
		img, err = jpeg.Decode(r)
	case "gif":
		img, err = gif.Decode(r)
	case "webp":
		img, err = webp.Decode(r)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding the %s: %w", format, err)
	}
	b := img.Bounds()
	if b.Dx() != w || b.Dy() != h {
		return nil, fmt.Errorf("the %s decodes to %dx%d, its header said %dx%d", format, b.Dx(), b.Dy(), w, h)
	}
	return fromImage(img), nil
}

// fromImage copies img's colours, alpha dropped (not composited: the
// stored colour of a transparent pixel is kept, as stb_image gives it).
func fromImage(img image.Image) *RGB {
	b := img.Bounds()
	d := New(b.Dx(), b.Dy())
	i := 0
	switch m := img.(type) {
	case *image.NRGBA:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[(y-b.Min.Y)*m.Stride:]
			for x := range b.Dx() {
				d.Pix[i], d.Pix[i+1], d.Pix[i+2] = row[4*x], row[4*x+1], row[4*x+2]
				i += 3
			}
		}
	case *image.RGBA:
		// Opaque PNGs decode to RGBA; where alpha < 255 the colour is
		// un-premultiplied as NRGBA would store it.
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.NRGBAModel.Convert(m.RGBAAt(x, y)).(color.NRGBA)
				d.Pix[i], d.Pix[i+1], d.Pix[i+2] = c.R, c.G, c.B
				i += 3
			}
		}
	case *image.Gray:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[(y-b.Min.Y)*m.Stride:]
			for x := range b.Dx() {
				d.Pix[i], d.Pix[i+1], d.Pix[i+2] = row[x], row[x], row[x]
				i += 3
			}
		}
	case *image.YCbCr:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := m.YCbCrAt(x, y)
				d.Pix[i], d.Pix[i+1], d.Pix[i+2] = color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
				i += 3
			}
		}
	default:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
				d.Pix[i], d.Pix[i+1], d.Pix[i+2] = c.R, c.G, c.B
				i += 3
			}
		}
	}
	return d
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

type ppmHeader struct{ w, h, max, off int }

// readPPMHeader reads a binary PPM's "P6 width height maxval" header
// (comments after # to the end of a line skipped); off is where the
// pixels begin, one white-space byte after maxval.
func readPPMHeader(data []byte) (ppmHeader, error) {
	var h ppmHeader
	i := 2
	field := func(name string) (int, error) {
		for i < len(data) {
			switch {
			case isSpace(data[i]):
				i++
			case data[i] == '#':
				for i < len(data) && data[i] != '\n' {
					i++
				}
			default:
				start := i
				for i < len(data) && data[i] >= '0' && data[i] <= '9' && i-start < 9 {
					i++
				}
				if i == start || (i < len(data) && !isSpace(data[i])) {
					return 0, fmt.Errorf("ppm: bad %s", name)
				}
				return strconv.Atoi(string(data[start:i]))
			}
		}
		return 0, fmt.Errorf("ppm: truncated before the %s", name)
	}
	var err error
	if h.w, err = field("width"); err != nil {
		return h, err
	}
	if h.h, err = field("height"); err != nil {
		return h, err
	}
	if h.max, err = field("maxval"); err != nil {
		return h, err
	}
	if h.max != 255 {
		return h, fmt.Errorf("ppm: maxval %d (only 8-bit files, maxval 255, are read)", h.max)
	}
	h.off = i + 1
	return h, nil
}

func decodePPM(data []byte) (*RGB, error) {
	h, err := readPPMHeader(data)
	if err != nil {
		return nil, err
	}
	n := 3 * h.w * h.h
	if h.off+n > len(data) {
		return nil, fmt.Errorf("decoding the ppm: truncated: %d of %d pixel bytes", max(0, len(data)-h.off), n)
	}
	d := New(h.w, h.h)
	copy(d.Pix, data[h.off:h.off+n])
	return d, nil
}
