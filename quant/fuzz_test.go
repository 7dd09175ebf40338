package quant

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// FuzzQuantize feeds arbitrary float32 blocks to every quantizer: Quantize
// must either refuse with an error naming the problem (non-finite input or an
// overflowing scale) or produce blocks that dequantize to finite values
// within a loose bound of the input (see TestQuantizeExtremeMagnitudes for
// why the bound has an absolute part).
//
//	go test ./quant/ -run '^$' -fuzz FuzzQuantize -fuzztime 60s
func FuzzQuantize(f *testing.F) {
	seed := func(vals ...float32) []byte {
		b := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	f.Add(uint8(11), seed(1, -2, 3.5, 0, 1e-7, -1e-30, 65504, 1e-45))
	f.Add(uint8(3), seed(0.01, 0.02, -0.03))
	f.Add(uint8(14), seed(float32(math.NaN()), 1))
	f.Add(uint8(9), seed(1e5, -1e5, 7))
	f.Fuzz(func(t *testing.T, pick uint8, raw []byte) {
		typ := quantTypes[int(pick)%len(quantTypes)]
		// Tile the fuzzer's values over two blocks.
		n := 2 * typ.BlockSize()
		if n < 64 {
			n = 64
		}
		x := make([]float32, n)
		if len(raw) >= 4 {
			for i := range x {
				j := 4 * (i % (len(raw) / 4))
				x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[j:]))
			}
		}
		y, err := roundTrip(t, typ, x)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "overflows") && !strings.Contains(msg, " is NaN") && !strings.Contains(msg, "Inf") {
				t.Fatalf("%v: unexpected error %v", typ, err)
			}
			return
		}
		bs := typ.BlockSize()
		for i := range x {
			if math.IsNaN(float64(x[i])) || math.IsInf(float64(x[i]), 0) {
				t.Fatalf("%v: element %d is %v but Quantize accepted it", typ, i, x[i])
			}
			amax := float64(maxAbs(x[i/bs*bs : (i/bs+1)*bs]))
			if e := math.Abs(float64(y[i]) - float64(x[i])); !(e <= 3*amax+1e-4) {
				t.Fatalf("%v: element %d: %g came back as %g (block max %g)", typ, i, x[i], y[i], amax)
			}
		}
	})
}
