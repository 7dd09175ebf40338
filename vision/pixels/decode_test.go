package pixels

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

// testImage is a small picture with distinct pixels.
func testImage(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x * 9), uint8(y * 13), uint8(x * y), 255})
		}
	}
	return img
}

func encoded(t testing.TB) map[string][]byte {
	img := testImage(13, 7)
	out := map[string][]byte{}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	out["png"] = bytes.Clone(b.Bytes())
	b.Reset()
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	out["jpeg"] = bytes.Clone(b.Bytes())
	b.Reset()
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	out["gif"] = bytes.Clone(b.Bytes())
	ppm := []byte("P6\n# a comment\n13 7\n255\n")
	for y := range 7 {
		for x := range 13 {
			c := img.NRGBAAt(x, y)
			ppm = append(ppm, c.R, c.G, c.B)
		}
	}
	out["ppm"] = ppm
	return out
}

// pngHeader is a PNG signature and a valid IHDR chunk of a w × h RGB
// picture, with no pixel data after it.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	b := []byte("\x89PNG\r\n\x1a\n")
	b = binary.BigEndian.AppendUint32(b, uint32(len(ihdr)-4))
	b = append(b, ihdr...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(ihdr))
}

// TestDecode reads each format to the picture's own pixels (exactly for
// the lossless ones, the size for JPEG).
func TestDecode(t *testing.T) {
	want := testImage(13, 7)
	for format, data := range encoded(t) {
		t.Run(format, func(t *testing.T) {
			if got := Format(data); got != format {
				t.Fatalf("Format = %q", got)
			}
			p, err := Decode(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.W != 13 || p.H != 7 || len(p.Pix) != 3*13*7 {
				t.Fatalf("%dx%d, %d bytes", p.W, p.H, len(p.Pix))
			}
			if format == "jpeg" || format == "gif" {
				return // lossy, or a palette
			}
			for i := range 13 * 7 {
				c := want.NRGBAAt(i%13, i/13)
				if p.Pix[3*i] != c.R || p.Pix[3*i+1] != c.G || p.Pix[3*i+2] != c.B {
					t.Fatalf("pixel %d: %v, want %v", i, p.Pix[3*i:3*i+3], c)
				}
			}
		})
	}
}

// TestDecodeBad: every bad input is an error naming the problem, and a
// picture over the budget is refused from its header alone.
func TestDecodeBad(t *testing.T) {
	enc := encoded(t)
	for _, c := range []struct {
		name string
		data []byte
		max  int
		want string
		is   error
	}{
		{"empty", nil, 0, "not a PNG", ErrFormat},
		{"unknown", []byte("BM6\x00\x00\x00 a bitmap"), 0, "not a PNG", ErrFormat},
		{"30000x30000 PNG header", pngHeader(30000, 30000), 0, "30000x30000 png", ErrTooLarge},
		{"over a small budget", enc["png"], 13*7 - 1, "13x7 png is 91 pixels, the limit is 90", ErrTooLarge},
		{"zero-width PNG", pngHeader(0, 5), 0, "png", nil},
		{"PNG header only", pngHeader(10, 10), 0, "decoding the png", nil},
		{"truncated PNG", enc["png"][:len(enc["png"])-20], 0, "decoding the png", nil},
		{"truncated PNG header", enc["png"][:12], 0, "reading the png header", nil},
		{"truncated JPEG", enc["jpeg"][:len(enc["jpeg"])-40], 0, "decoding the jpeg", nil},
		{"truncated GIF", enc["gif"][:len(enc["gif"])-20], 0, "decoding the gif", nil},
		{"truncated PPM", enc["ppm"][:40], 0, "truncated: 16 of 273 pixel bytes", nil},
		{"16-bit PPM", []byte("P6 2 2 65535\n"), 0, "maxval 65535", nil},
		{"huge PPM", []byte("P6 999999999 999999999 255\n"), 0, "999999999x999999999 ppm", ErrTooLarge},
		{"RIFF that is no WebP", []byte("RIFF\x10\x00\x00\x00WEBPVP8 \x00"), 0, "webp", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Decode(c.data, c.max)
			if err == nil {
				t.Fatalf("decoded a %dx%d picture", p.W, p.H)
			}
			if !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
				t.Fatalf("error %q, want one saying %q (is %v)", err, c.want, c.is)
			}
		})
	}
}

// FuzzDecode: no input panics, and a decoded picture is within the budget
// and its pixels fill it.
func FuzzDecode(f *testing.F) {
	for _, data := range encoded(f) {
		f.Add(data)
	}
	f.Add(pngHeader(1, 1))
	f.Add([]byte("RIFF\x10\x00\x00\x00WEBPVP8L\x05\x00\x00\x00\x2f\x00\x00\x00\x00"))
	const budget = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data, budget)
		if err != nil {
			return
		}
		if p.W <= 0 || p.H <= 0 || p.W*p.H > budget || len(p.Pix) != 3*p.W*p.H {
			t.Fatalf("a %dx%d picture of %d bytes (budget %d)", p.W, p.H, len(p.Pix), budget)
		}
	})
}
