package vision

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/smolgo/smolgo/vision/pixels"
)

// BenchmarkEncodeFile encodes one picture of SMOLGO_IMAGE_W × SMOLGO_IMAGE_H
// (default 1024 × 768) pixels with the projector SMOLGO_MMPROJ on
// SMOLGO_THREADS threads (default 2): the time of one image's rows.
//
//	SMOLGO_MMPROJ=/tmp/mmproj.gguf go test ./vision -run - -bench EncodeFile -benchtime 3x
func BenchmarkEncodeFile(b *testing.B) {
	path := os.Getenv("SMOLGO_MMPROJ")
	if path == "" {
		b.Skip("SMOLGO_MMPROJ is not set")
	}
	env := func(key string, def int) int {
		if s := os.Getenv(key); s != "" {
			if _, err := fmt.Sscan(s, &def); err != nil {
				b.Fatalf("%s=%q: %v", key, s, err)
			}
		}
		return def
	}
	pr, err := Open(path, Options{Threads: env("SMOLGO_THREADS", 2)})
	if err != nil {
		b.Fatal(err)
	}
	defer pr.Close()
	pic := pixels.New(env("SMOLGO_IMAGE_W", 1024), env("SMOLGO_IMAGE_H", 768))
	seed := uint32(1)
	for i := range pic.Pix {
		seed = seed*1664525 + 1013904223
		pic.Pix[i] = byte(seed >> 24)
	}
	img, err := pr.PreparePixels(pic)
	if err != nil {
		b.Fatal(err)
	}
	for k, c := range img.Chunks {
		if c.Rows == 0 {
			continue
		}
		dst := make([]float32, c.Rows*pr.Width())
		b.Run(fmt.Sprintf("%dx%d/rows=%d", c.TilePx[0], c.TilePx[1], c.Rows), func(b *testing.B) {
			for b.Loop() {
				if err := pr.Encode(context.Background(), img, k, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
